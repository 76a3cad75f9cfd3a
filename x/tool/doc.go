// Package tool bridges lode's tool registry to the loop. It is usually
// imported as xtool, beside the core package tool:
//
//	import (
//		"github.com/lodeworks/lode/tool"
//		xtool "github.com/lodeworks/lode/x/tool"
//	)
//
// A Handler is a loop.Handler: for each artifact.ToolCall it finds the tool
// in its registry, checks that the turn offered it, validates the arguments
// against the tool's schema, runs it under a timeout with panics recovered,
// renders the result within a budget the model can afford, and emits a
// loop.TurnCompleteEvent with ledger.RoleTool and one artifact.ToolResult.
//
// Failure is data. Every way a call can go wrong — unknown tool, tool not
// offered to this caller, arguments that are not JSON or break the schema, the
// tool's own error, a panic, a timeout, cancellation, a result that cannot be
// rendered, a remote source that fails — becomes a ToolResult with IsError
// and a message the model can act on, and the loop goes on. Handle returns
// an error only when it cannot emit at all. Whatever the model or the tool
// sent, the Content is valid UTF-8 and within the result budget, error
// messages included; a call ID used twice in one answer runs once.
//
// A result over its budget shows the model its head and tail with a marker
// between them saying what was cut. ToolResult.Full keeps the whole
// rendering for the ledger up to WithMaxFullBytes (DefaultMaxFullBytes,
// 1 MiB); past that Full stays empty, the marker says the whole was not kept, and
// only Value (not persisted) still holds what the tool returned. A map or
// slice result is encoded element by element into a writer that keeps
// only what the budget shows and Full may keep, so a 10 MB result renders
// in memory near those limits; any other value is encoded whole first, a
// plain struct by an encoder compiled for its type that writes the very
// bytes encoding/json would.
//
// A tool runs on a goroutine of its own under a context that carries the
// caller's values and deadline, ends with DeadlineExceeded at the tool's
// timeout (Tool.Timeout, else WithTimeout, else DefaultTimeout) and with
// Canceled when the call returns, so work a tool left behind on it stops.
// A tool that ignores its context is abandoned at the timeout: the turn goes
// on, with a timeout result.
//
// Inline tools. Handing a call to a goroutine and waiting for it costs
// little on a busy machine, but on an idle one it wakes another core twice
// (to run the call, and to hand its answer back), which costs more than a
// small tool's whole work: the add tool of issue 35 took about 2× the bare
// JSON round trip that way, 0.7–0.9× inline (BENCHMARKS.md). A tool that promises to return
// promptly or as soon as its context ends — Tool.Inline, tool.WithInline
// for a typed one — runs on the caller's goroutine instead, under the same
// context (the same deadline, the caller's values and end, seen through
// Done and Err), with the same validation before it, the same panic
// recovery and the same results; the watchdog and a watch on the caller's
// context are set up only if the tool asks for Done, and the clock is read
// otherwise. Nothing can abandon a call on its
// caller's goroutine, so the promise is checked rather than trusted
// blindly: a call that comes back after its context ended reports that end
// (a timeout, a cancellation), not what it returned late, and a tool whose
// inline call passed its timeout runs on a goroutine of its own from then
// on, with a warning logged. A tool that breaks its promise can so hold a
// turn once, until it returns; a tool that made none never. A tool that
// calls runtime.Goexit (testing's FailNow does) ends the goroutine it runs
// on: on its own, the call answers with an error result; inline, that
// goroutine is the caller's, which ends with it, and the tool's later calls
// are handed off as above. WithoutInline
// hands every call off, for tools the application does not trust to keep
// their promise. Pooling the goroutines instead measured no cheaper than
// starting one: a parked worker is woken through the same path.
//
// WithFilteredTools picks the tools of each turn with a ToolFilter that
// sees the turn's context and ledger.State (a role in thread metadata, a
// tenant, what was said). The filter also binds execution: the Handler
// refuses a call to any tool the turn's request did not offer, so hiding a
// tool from the model is also forbidding it. The refusal reads exactly as
// for a tool that does not exist — `unknown tool "x". Tools available in
// this turn: a, b, c.` — with the same error.type ("tool_not_found") and
// the same metric series, so no caller can probe for hidden names; only
// the span's lode.tool.hidden attribute tells the operator which it was.
// The list names every tool the caller may use (WithOffered sets them for
// calls outside a turn, and without any restriction it is the whole
// registry); only the result budget cuts it, with its usual marker. A
// caller outside a loop turn, marked by WithCaller (an MCP client's, which
// has no turns), reads "Tools available to this caller" instead.
//
// WithGate adds an execution check beside the offer: a rule book (such as
// x/policy) that decides from the caller's thread — Caller returns the
// loop turn's, or the one an MCP server set with WithCaller — may hide a
// call, in the same unknown-tool words, or refuse it with a reason (a
// limit reached); the attributes it returns go on the span only. A
// refusal marked Withheld (x/policy's flow rules) keeps its own words
// even for a tool the turn's offer left out for the same reason.
//
// Flow labels. Once a call to a tool whose hints say Untrusted or Private
// has run — whatever its result, a failure included, but not a call
// refused before it ran — the Handler labels the caller's thread, and
// those of the calls it runs below (an agent's child), with
// ledger.AddLabel before the result is emitted; a label that cannot be
// recorded withholds the result. A tool adds labels of its own with
// AddLabel; an engine that writes one stored thread from concurrent
// calls says how labels are written with WithLabelWriter.
//
// Approval. With WithApprover, a call needs approval when its tool's hints
// say Destructive, when WithApprovalFor names the tool or its source (a
// pack, an MCP server: lode.yaml's approve: list), or when a
// WithApprovalRule of the application asks. The Approver answers at once
// (nil runs the call, an error refuses it) or returns ErrAwaitingApproval —
// PauseForDecision always does — and the call is recorded as an artifact.Pending in the
// ledger: the loop pauses and loop.Step.Resume decides later, in any
// process. The Handler is a loop.CallChecker, so an edited approval is
// validated against the schema before it is recorded, and an approved call
// interrupted by a crash runs again only if its tool is Idempotent. Execute,
// for callers that cannot wait, returns an error result for a pending call.
// Spans say lode.approval=pending (with the reason) or approved (with
// lode.approval.by). Without an Approver, a call WithApprovalFor names or a
// rule selects fails closed: it is refused with ErrNoApprover's words and
// never runs; destructive hints alone ask nothing then, since MCP servers
// mark every tool destructive that does not say otherwise.
//
// Approval travels down. A tool may run calls through another Handler in
// the context it was given (x/agent's child runs its loop there). A
// Handler with an Approver makes its approval gate reachable from that
// context, so a Handler running calls below asks, after its own rules, the
// rules of every gating Handler above it, nearest first: each upper
// Handler's destructive hints (of its tool by that name or of the tool
// being called), WithApprovalFor names and rules, evaluated in the context
// of its own call, so that a rule reading the caller (x/policy's approve:
// lists read Caller's roles) reads the caller's thread, and then its own
// Approver. A refusal by any gate refuses the call; otherwise a gate that
// defers makes it pending. A call running under its own loop.Approved
// decision asks no gate again. Reaching the gates costs a context lookup
// and no allocation.
//
// A Gate (WithGate) is asked about the calls made below its Handler's
// calls as well, in the context of its own call, where CallsBelow says how
// many have been made below it; its Refuse refuses the call below (a limit
// the caller reached), its Hide is not applied there. The count is kept on
// the caller's thread under MetaCallsBelowPrefix+callID when the call
// ends, and RecordedBelow reads it, for rule books that count a run's
// calls (x/policy's limits). An engine that runs a child apart, where no
// chain of contexts links the child's calls to its caller's (x/temporal),
// asks the same things itself, in the caller's turn rebuilt with
// loop.WithTurn: GateBelow for the approval rules, LimitBelow for the Gate
// with the count it reckons, Admit for the caller's own call to the
// child, and RecordBelow to keep the count when the child ends.
//
// A tool whose call cannot finish until a person approves something it
// started returns an error matching ErrAwaitingApproval, or a *PendingError with a
// reason: the Handler records its call as an artifact.Pending, as for its
// own approvals, and the run pauses; once approved, the tool runs again
// under loop.Approved and carries the decision down (x/agent resumes its
// child so).
//
// Reports. A long tool may say how far it has got with Progress and what
// it is doing with Log; both reach the Reporter of the call's context
// (WithReporter) and cost nothing without one. lode's MCP server supplies
// one, so an MCP client sees them as progress and log notifications.
//
// With WithTracer, every execution is a span "execute_tool {name}" following
// the OpenTelemetry GenAI conventions (gen_ai.operation.name, gen_ai.tool.name,
// gen_ai.tool.call.id, gen_ai.tool.type, error.type); with WithMeter, a
// duration histogram, in which every name the registry does not hold is
// "_OTHER" so that a model cannot multiply its series. Without them,
// tracing costs nothing. With content capture on in the call's context
// (package capture; loop.WithCapture sets it for a turn), the span also
// carries gen_ai.tool.call.arguments and gen_ai.tool.call.result, scrubbed
// and bounded; a result a guard stops is never recorded.
package tool
