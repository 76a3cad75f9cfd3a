// Package injection is an offline benchmark of indirect prompt injection
// in the shape of AgentDojo (Debenedetti et al., NeurIPS 2024), written
// for lode: simulated environments whose tools act on an in-memory world,
// user tasks with a check of the world they leave, and injection tasks —
// an attacker's goal, written into what other people write (a mail, a
// web page, a file from a vendor, a transfer's memo, a bill, a guest's
// chat message, a hotel review) — with a check of whether the world shows
// it achieved.
//
// The five environments (mail and calendar, files, banking, team chat,
// travel) hint their tools honestly (tool.Hints): what reads untrusted or
// private content, what sends data out, what destroys. Each run goes
// through lode's own loop — loop.New, x/tool's Handler over a fresh
// registry, an in-memory ledger.Thread — with an approver that records
// every request and denies it, as a person would who did not expect the
// send, and with the flow rules of issue 43 off or on: after untrusted
// content, a call that sends data out needs approval; after private data,
// it is refused.
//
// Two scripted models (x/provider/script) read only what a request holds
// — the prompt, the tools offered, the results in the turns — never the
// world. The task model does the user's task as a sensible agent would.
// The obedient model is the worst case: it does the same, and first obeys
// every instruction it finds in any tool result, making the attacker's
// calls. Quarantined reads (x/guard/quarantine) are offered in two
// environments to show what they give back: a date read from a page, or
// whether reviews call a hotel quiet, reaches the planner as a typed
// value, and the send that follows needs no one.
//
// What it measures is the mechanism: given a model that does whatever it
// reads, do the flow rules keep every attacker's goal out of reach, and
// what do they cost in tasks a person must now approve? It says nothing
// of how often a real model obeys an injection, nor of attacks the
// environments do not model (a wrong but well-formed value from a fooled
// quarantined model, an attacker who is also a legitimate recipient).
//
// Measure runs it all in a fraction of a second; `go test` checks the
// report against BENCHMARKS.md and that no goal is achieved with the rules
// on, and `go test -bench .` times the rules' cost per turn.
package injection
