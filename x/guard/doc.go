// Package guard builds guardrails for a loop: checks on the user's
// message before the model sees it, on each tool call's arguments before
// it runs, on each tool result before the model reads it, and on the
// answer before a person sees it (loop.WithGuards).
//
//	step := loop.New(
//		loop.WithHandlers(xtool.NewHandler(reg)),
//		loop.WithGuards(
//			guard.Secrets(os.Getenv("OPENAI_API_KEY")),
//			guard.HiddenText(),
//			guard.MaxBytes(artifact.AtResult, 200_000),
//			guard.New("no-wires", noWires, artifact.AtCall),
//		),
//	)
//
// Guards block: the first that trips stops the turn before anything
// further runs, and the loop stores an artifact.Tripwire where it
// stopped. What was stopped never reaches the model or the ledger: a
// stopped message is left out of later requests, a stopped result is
// replaced by an error result, a stopped answer is not kept. Run returns
// a *loop.TripError (errors.Is loop.ErrTripped); running the thread again
// returns it again, until a new user message follows. A guard that fails
// (an error, a panic, a verdict model that cannot be reached) stops the
// turn too: a check that cannot decide fails closed.
//
// A guard is a Go function (New), a rule given as data (Rule, as in
// lode.yaml's guards:), a built-in (Secrets, MaxBytes, HiddenText,
// Injection) or a model's verdict (Model), whose usage is charged to the
// turn with loop.Charge and which a cassette replays like any provider.
//
// # What pattern checks can and cannot do
//
// Secrets stops known values however they are encoded, and HiddenText
// the invisible characters used to hide instructions from people. Both
// are exact. Injection is not: it stops tool results that carry the
// common phrasings of an injected instruction ("ignore previous
// instructions", a fake system message), which catches careless attacks
// and none that are reworded, translated, encoded or split across
// results. No list of phrases contains prompt injection, and a model's
// verdict lowers the rate without bounding it. What bounds it is never
// letting what the model read widen what it may do: x/policy's flow
// rules, which require a person's approval, or refuse, calls that send
// data out once untrusted or private content is in the thread.
package guard
