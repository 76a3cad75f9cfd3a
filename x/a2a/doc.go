// Package a2a speaks the Agent2Agent protocol (A2A) both ways: it serves a
// lode agent to any A2A client, and mounts a remote A2A agent's skills as
// tools. It is a module of its own so that the A2A SDK and its gRPC weight
// never enter the root module's graph.
//
// # Calling other agents
//
// Mount (or NewRemote, then tool.Registry.Mount) reads a remote agent's
// card and makes each of its skills a tool, "<name>__<skill>", in the flat
// namespace every other source shares:
//
//	remote, err := a2a.Mount(ctx, reg, "https://billing.example",
//		a2a.WithBearerToken(os.Getenv("BILLING_TOKEN")))
//
// A call is one remote task: its arguments are {"task": text} (and, to
// answer a question the agent asked, the task_id and context_id its
// answer gave). What this half decides:
//
//   - The card is bounded (MaxCard bytes, MaxSkills skills) and checked:
//     JSON of the right shape, in A2A 1.0's form or 0.3's; every skill has
//     an id, and no two ids become the same tool name; at least one
//     endpoint speaks JSON-RPC or HTTP+JSON over http(s). Anything else is
//     an error wrapping ErrCard, at mount time.
//   - The task is streamed when the card says the agent streams, and
//     waits for the whole answer otherwise. A stream that breaks before
//     its task ends is picked up again with SubscribeToTask (three times
//     at most). It is bounded by WithTimeout
//     (DefaultTimeout); when that passes, or the turn's context ends, lode
//     sends the agent a cancel for the task. What the model reads is cut to
//     WithMaxResult bytes with a marker; a response past DefaultMaxResponse
//     is refused.
//   - Failed, rejected and cancelled tasks, a task needing authentication,
//     and a timeout are error results the model can act on. A question
//     back (input-required) is a plain result saying what the agent asks
//     and how to answer: the call never hangs waiting for input.
//   - Every skill is hinted Destructive and OpenWorld unless WithReadOnly,
//     so a handler with an approver asks a person before each call, as it
//     does for an MCP tool without annotations; approve: rules and roles
//     bind a mounted agent's tools as any other tool's, and a tool a role
//     forbids is never called. The answer is untrusted for flow rules
//     (WithLabels changes that): once a call ran, the caller's thread is
//     labelled ledger.LabelUntrusted.
//   - Credentials (WithBearerToken, WithHeader) go to the origin of the URL
//     given to Mount only: an endpoint the card names on another origin,
//     or a redirect, gets none. Every request carries W3C trace context
//     (traceparent, baggage) from the call's span.
//   - The caller's user, tenant and roles, read from its thread, go as the
//     task's metadata under MetaCaller, and the skill under MetaSkill. Usage
//     the agent reports under MetaUsage is charged to the caller's run
//     (loop.Charge), so its cost limit counts remote work; without it, the
//     usage adk-go's adka2a reports with each streamed model call is added
//     up and charged. Usage that names no model has no price, so with a
//     cost limit the run stops after the turn (loop.ErrUnpriced), as it
//     does for any usage it cannot price.
//   - JSON-RPC request IDs are numbered in order and message IDs named
//     after the tool call, so a session recorded with x/cassette (through
//     WithHTTPClient) replays.
//
// The command line mounts lode.yaml's a2a: entries with the binary built
// from this module (x/a2a/cmd/lode); the root module's lode refuses them.
package a2a
