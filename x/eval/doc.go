// Package eval measures an agent's behaviour inside go test, offline: a
// suite of cases, each a conversation run on recorded or scripted model
// answers, checked against what it must show, graded, and reported.
//
//	func TestAgent(t *testing.T) {
//		eval.Run(t, eval.Suite{Name: "support", Cases: []eval.Case{{
//			Name:   "refund",
//			Prompt: "Refund order 42",
//			Model:  eval.Cassette("testdata/refund.yaml", eval.OpenAI("gpt-4o-mini")),
//			Tools:  mountTools,
//			Expect: []eval.Expectation{
//				eval.CallsInOrder(eval.CallTo("orders__refund").WithArgs(`{"order":42}`)),
//				eval.NotCalled("orders__delete"),
//				eval.MaxTurns(3),
//			},
//		}}})
//	}
//
// # Cases and models
//
// A Case is a starting thread (Thread, or From, or a System and a Prompt),
// the tools it mounts (packs, Go functions), optionally a policy and roles
// (x/policy, enforced as every lode door enforces it) and a typed answer
// (Typed, through x/output), and a Model: Scripted plays x/provider/script steps; Cassette
// replays an x/cassette file through an adapter (OpenAI connects the
// chat-completions one), so a changed request — a new system prompt, a tool
// offered or not — misses the cassette and fails the case saying where;
// Recorded answers requests in order from any go-vcr file, for the public
// recordings of other clients whose requests lode never sends byte for
// byte; Live runs a real provider only when LODE_EVAL_LIVE=1 and skips the
// case otherwise. Every run goes through loop.Run with x/tool's Handler, so
// calls are validated, executed and refused exactly as in production, and
// is bounded by DefaultMaxTurns.
//
// # Fork points
//
// From starts a case from a fork point of a recorded thread: the
// counterfactual, what the agent does from turn N of a conversation that
// happened, with another answer, prompt, model or tool. FromFork takes the
// thread from a ledger.Store (a production ledger: it is only read),
// FromState from a thread in hand. Each run starts from the thread's first
// N turns, byte for byte, cut by ledger.Fork's rules: a cut past the end or
// between a tool call and its result fails the case with
// ledger.ErrForkPoint's message, which names the turn to cut at instead.
// Turns count from 0 as the ledger stores them (and as lode threads and
// lode fork --at count them): tool results are turns too. System and
// Prompt, when set, come after the kept turns.
//
// # Expectations
//
// An Expectation returns what the Outcome got wrong, each message naming the
// call (by position and tool) or the field that differed and both values:
//
//   - CallsInOrder, CallsAnyOrder: exactly these calls, in order or as a
//     set; Called: at least one such call. A CallSpec names the tool and may
//     give a JSON pattern for the arguments (WithArgs: an object matches one
//     holding at least its keys, numbers compare by value), a JSON Schema
//     (WithSchema) and text of the result (WithResult).
//   - NotCalled: calls that must not happen (names or globs), refused or not.
//   - Refused, Allowed: what the policy refused.
//   - Answer with Field checks: the typed answer's fields, by JSON path.
//   - TextContains, TextExcludes, TextMatches: the last answer's text.
//   - MaxTurns, MaxTokens, MaxCost (with Suite.Pricer), MaxTime: budgets.
//   - Fails: the run must fail so; without it a failed run fails the case.
//
// # Scorers
//
// A Scorer grades an Outcome from 0 to 1 and says whether it passes.
// ScorerFunc adapts a Go function. Judge asks a model to grade against a
// rubric, answering a Verdict through x/output; give it a Cassette model so
// the verdict is recorded once and replays offline: the judge's request
// holds the transcript, so a changed transcript misses the cassette rather
// than reuse a stale verdict.
//
// # Reports
//
// Run makes one subtest per case, failing it with every failure (or a
// regression against Suite.Baseline: a pass that now fails, a score that
// fell), skipping it with its reason; it logs a table and writes
// report.json, report.html and report.txt (Suite.ReportDir). RunSuite does
// the same outside a test, for lode eval. The HTML page has a summary and
// one section per case with its failures, scores, tool calls, typed answer
// and transcript; html/template escapes everything a model or tool wrote,
// and the page's Content-Security-Policy allows no script at all.
//
// Diff compares two reports case by case (better, worse, same, new, gone);
// WriteDiff prints it, as lode eval diff does. Compare prints runs of the
// same suite side by side, one column per model.
//
// # Suite files
//
// LoadSuite reads a suite from YAML, for lode eval: each case has name,
// system, prompt, tools (calculator: {...}, filesystem: {root: DIR, ...}),
// policy (an x/policy document) and roles, from ({store: SPEC, thread: ID,
// at: N}: FromFork on that store, a folder or SQLite file relative to the
// suite file and never created when missing; a folder opens as it is,
// other stores through WithStores, as lode eval opens them), model
// (script: a list of
// {text: ...} or {call: {name, arguments}} steps; or cassette: or
// recorded: FILE with name: MODEL, base_url: and stream:), and expect
// (calls, calls_any_order and called as lists of {name, args, schema,
// result}; not_called, refused, text_contains, text_excludes,
// text_matches; max_turns, max_tokens, max_cost, max_time; fails). Unknown
// keys are errors.
package eval
