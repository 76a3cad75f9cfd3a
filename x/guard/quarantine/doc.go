// Package quarantine reads a value out of untrusted content — a page, a
// mail, a review — through a model call that has no tools and may only
// answer with a typed value, so that a task can use a page's date or an
// address without the page's instructions reaching the model that plans.
//
//	type Deadline struct {
//		Date string `json:"date" jsonschema:"pattern=^[0-9]{4}-[0-9]{2}-[0-9]{2}$"`
//	}
//	d, err := quarantine.Read[Deadline](ctx, prov, "When does registration close?", page)
//
// This is the quarantined model of the dual-model pattern (CaMeL, 2025):
// the planner calls Tool, which fetches the content itself and hands the
// planner only the typed value.
//
// # What it decides
//
// A read sends one request: a short system turn, then the instruction and
// the content between two marker lines the content does not hold (Fence),
// named as data. No tool is offered but x/output's answer (ModeTool) or a
// response format, and an answer that calls any other tool is refused
// (ErrToolCall). The answer is validated against T's schema by x/output —
// wrong types, extra fields, values outside an enum or a pattern are
// refused — and every string in it is bounded (WithMaxString, 256 bytes by
// default) whatever the schema says. A refused answer is quoted back and
// the model tries again, up to WithMaxAttempts; then the read fails with
// an *output.InvalidError holding the last answer as written, so nothing
// is lost for the operator.
//
// The call runs apart from the caller's turn, and its usage is counted
// toward that turn with loop.Charge (for ChargeFor): the run's cost limit,
// pricing, meters and observers see it once. Its admission against a cost
// limit comes after the call, as a history summary's does.
//
// # Labels
//
// Tool's output is not hinted Untrusted (tool.Hints), so a flow rule such
// as "after untrusted content, a call that sends data out needs approval"
// does not fire on what the planner does with the value. A failed read
// tells the planner ErrNoValue and nothing the quarantined model wrote.
//
// This is only as narrow as the type: a string field can still carry the
// content's words (an attacker's address, a sentence) to the planner,
// and a quarantined model can still be fooled into a wrong value that is
// well formed. Prefer enums, numbers, booleans, dates and short strings
// with a pattern; set WithHints' Private when the content is the user's
// private data, since a value taken from it still is.
package quarantine
