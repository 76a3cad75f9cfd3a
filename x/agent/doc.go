// Package agent mounts an agent — a provider, its own tools and filter, a
// system prompt, limits, optionally a typed answer — as one tool of
// another agent. The parent model passes a task (by default {"task":
// string}; WithInput sets a schema-checked input of any type), the child
// runs its own loop to completion on a thread of its own, and its answer is
// the tool's result: the text of its last turn, or with WithOutput a typed
// answer that x/output validated (and let the child retry), as JSON.
//
//	summariser, err := agent.New("summarise", "Summarise a text in one sentence.",
//		agent.WithProvider(model), agent.WithSystemPrompt("Be brief."))
//	err = agent.Register(registry, summariser)
//
// # Threads
//
// Each call runs on a new thread, kept in the WithStore store (in memory
// without one). The child's metadata names the agent (MetaAgent), its depth
// (MetaDepth), the parent's thread (MetaParentThread) and the tool call
// that started it (MetaParentCall); the parent thread gets the key
// MetaChildPrefix+callID naming the child thread. Observers of the parent
// find the child's Outcome on the tool result with OutcomeOf.
//
// # Tracing
//
// The child runs in the context of the parent's execute_tool span, so with
// WithTracer its run, turn, chat and execute_tool spans nest under it; the
// execute_tool span also gets lode.agent.thread.id and lode.agent.depth.
//
// # Limits and failure
//
// Depth travels in the context: the top-level loop is depth 0 and a child
// runs at its caller's depth + 1. An agent refuses to start below
// WithMaxDepth (DefaultMaxDepth, 3), which ends an agent that mounts
// itself. Each run is bounded by WithMaxTurns (DefaultMaxTurns),
// WithMaxTokens (none by default) and WithTimeLimit (DefaultTimeLimit).
// Every failure — the depth limit, a limit reached, the provider, the
// store, an invalid typed answer — is an error result with a message the
// parent model can act on; the parent's loop goes on, and the Go error is
// in Outcome.Err.
//
// # Tools never widen
//
// A child may not use a tool its caller was denied. When a call starts,
// the names its caller's turn did not offer, among the tools of the
// registry the agent was registered in, are denied; denials made further
// up carry down through the context. Each child turn offers what its own
// filter picks minus the denied names, and its handler refuses the rest.
// Tools are matched by name: one the child registers under a name its
// parent does not hold is its own, granted with the agent. WithWidening
// lets an agent ignore the denials of its callers, as an explicit choice
// of the application.
package agent
