// Package cli is the lode command: it runs an agent on any OpenAI-compatible endpoint, serves packs
// over MCP, lists the tools a configuration mounts, and plays an offline
// demo that needs no model and no key.
//
//	lode demo                      a complete multi-turn run, offline
//	lode run [flags] "prompt"      one agent run, streamed ("-": the prompt from stdin)
//	lode run --record FILE "..."   the same, its HTTP traffic recorded in a cassette (secrets scrubbed by value)
//	lode run --replay FILE "..."   the recorded run again, with no network
//	lode chat [flags]              an interactive conversation
//	lode run|chat --thread ID ...  go on with a stored thread
//	lode threads [flags] [THREAD]  the stored threads: ID, title, turns, updated, paused, FROM
//	lode fork THREAD --at N        a new thread of THREAD's first N turns (ledger.Fork)
//	lode resume [flags] THREAD ... decide on calls waiting for approval, then go on
//	lode recover --store DIR       finish the runs whose process died (once)
//	lode worker --store DIR        the same, every --every, until a signal
//	lode worker --temporal ADDR    serve the agent to Temporal (x/temporal/cmd/lode's build)
//	lode run --temporal ADDR "..." the run on Temporal's workers; lode resume --temporal decides
//	lode tools [flags]             the tools a configuration mounts
//	lode serve [--http ADDR]       the configured packs over MCP (stdio by default)
//	lode serve --a2a ADDR          the configured agent over A2A (x/a2a/cmd/lode's build)
//	lode policy check|explain      the role policy against the mounted tools
//	lode mcp login NAME            log in to the MCP server NAME (OAuth; the token kept for run and chat)
//	lode --version                 the version, commit and Go release it was built with
//
// Flags may come before or after a command's other arguments; "--" ends
// them, for a prompt that starts with "-". A command that takes no
// arguments refuses them rather than ignoring them.
//
// lode serve --http listens on loopback only unless --allow-host names the
// Host clients use; the MCP server refuses requests for any other host.
//
// One function (openDoor) builds what every door needs from lode.yaml: the
// approval rule — destructive tools, approve:, the policy's per-role
// approve: rules — the policy's filter and execution check, the history
// policy and the store. A call that needs approval never runs without a
// person's yes: lode chat asks in the terminal; lode run pauses with exit
// code 3 and prints one lode resume command per choice, quoted for a shell;
// lode resume without decisions lists what waits and writes nothing; lode
// web pauses and the page shows an approval card; lode serve asks the MCP
// client through elicitation (mcp.AskClient) and, when the client cannot
// elicit, answers with an error result that says how to get the approval.
// lode run and lode chat end with what was used ("(used: N tokens in, M
// out, $X)", priced by lode's catalog and catalog: in lode.yaml); lode web
// shows the same figures under each answer, and the thread's total in the
// page's header, from the answer's message metadata (x/conduit/web).
//
// lode web keeps threads where --store says, else where store: says,
// else in .lode/threads; --threads, the flag's old name, still works, with
// a warning, and is left out of -h.
//
// With a store (--store, store: in lode.yaml) lode run and lode chat keep
// their thread in it and print its ID; --thread ID goes on with a stored
// thread (an unknown ID is an error naming lode threads, which lists
// them). A thread whose calls wait for approval takes no new message:
// lode run lists the calls and exits 3.
//
// Warnings are one line each on stderr, "lode: warning: ...", and the
// command goes on: a policy: with no --role (the model is offered no
// tools), and a key variable that is not set (api_key_env names it, or
// the provider's default variable for a server not on this machine).
//
// defer: in lode.yaml names packs and MCP servers whose tools lode run,
// chat, resume and web offer only once the model finds them with
// tool_search (x/tool/toolsearch, over the policy's filter); the threads
// keep what was loaded. lode serve offers them all, as an MCP client
// picks its tools itself; lode tools marks them "deferred".
//
// Configuration comes from lode.yaml (or --config), then the environment
// (OPENAI_API_KEY, OPENAI_BASE_URL, LODE_MODEL; ANTHROPIC_API_KEY and
// ANTHROPIC_BASE_URL with model.provider or --provider anthropic), then
// flags. A flag at its
// zero value (--max-turns 0, --timeout 0) leaves the file's value; a
// negative one is refused, as it is in the file. Every error is one line
// on stderr, and a mistake in lode.yaml names its line.
//
// Two limits keep a run from waiting forever on a model server that
// accepts the connection and never answers: --timeout (model.timeout) for
// a whole run, none by default, and --idle-timeout (model.idle_timeout) for
// the server's silence before and between the chunks of an answer,
// openai.DefaultIdleTimeout by default. Each MCP server's timeout: bounds
// its calls once connected (mcp.DefaultCallTimeout by default), and its
// connect_timeout: connecting to it (mcp.DefaultConnectTimeout, 60s, long
// enough for npx to fetch and start a server on a cold cache).
//
// MCP takes a tool without annotations as destructive, so every call to
// it waits for a person. An MCP server's read_only: true takes all its
// tools as read-only, and its trust: [TOOL, ...] the tools named (as the
// server names them) as not destructive; mountMCP gives both to the
// client, so every door that mounts the server, lode worker's among
// them, sees the same, and a trust: name the server does not offer is an
// error naming its line.
//
// Every tool of an MCP server is hinted untrusted (its output may carry
// text written by others) unless its entry's labels: says otherwise
// ({untrusted: false, private: true, sends_out: true}); tool_labels:
// {TOOL: {...}} sets one tool's, each field left out taken from labels:,
// and names the server does not offer are errors naming the line. The
// policy's flows: then narrow what a conversation that took such output
// in may do, at every door: the filter hides what a deny flow covers, the
// Handler refuses it with the rule's words, an approve flow makes the
// call wait for a person (serve asks its client's, or refuses), and
// serve keeps a session's labels across its requests. lode policy
// explain shows, for an allowed tool, what each flow does after which
// label.
//
// A policy: section in lode.yaml (or a file that policy_file: names) says
// which roles may use which tools (see x/policy); lode run, chat, web and
// serve enforce it, with the caller's roles from --role, or over HTTP from
// the bearer token each caller presents (tokens:, each token read from an
// environment variable or a file, never written in lode.yaml). A changed
// policy takes effect on the next turn or request; one that no longer
// parses, or names what is not mounted, is refused and logged. lode policy
// check and lode policy explain --role R [TOOL] read it offline.
//
// A guards: section (GuardsConfig, x/guard) checks what flows through
// every turn of run, chat, web and a worker: secrets: the configuration's
// own credentials, hidden_text:, injection:, max_bytes: per checkpoint,
// rules: given as data, model: a verdict model on model:'s server. lode
// serve asks the call and result guards about an MCP client's calls (it
// has no user message or answer of its own to check). A trip ends lode run
// with exit code 4 and one line saying which guard stopped what.
//
// A trace: section (TraceConfig) records the conversation on the spans
// of run, chat, web and a worker: content: true, or the standard
// OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT (true, SPAN_ONLY or
// SPAN_AND_EVENT; false, NO_CONTENT or EVENT_ONLY leave it off) when
// content: is not set; content_bytes: bounds each attribute (16 KiB). The
// configuration's own credentials are scrubbed from what is recorded.
//
// A memory: section (MemoryConfig, x/memory) keeps facts about each caller
// across threads, in a folder, SQLite or PostgreSQL store opened once per
// process: memory_save and memory_search join the mounted tools at every
// door, recall: adds a message's facts after it (where the prompt cache
// keeps them) and extract: saves the facts a model picks from each run. The caller is the local login and --tenant at run and
// chat, the token's or proxy's login at web and serve --http, the local
// login at serve over stdio, and each thread's caller at a worker.
//
// Exit codes: 0 success (and lode serve stopped by Ctrl-C or SIGTERM);
// 1 an error, reported on one line; 2 a mistake in the command line;
// 3 lode run or lode resume paused with tool calls waiting for approval;
// 4 a guard stopped the turn (guards: in lode.yaml);
// 130 lode run stopped by Ctrl-C; 143 lode run or chat stopped by SIGTERM.
//
// cmd/lode is this package's Main; a build that adds what the root module
// must not depend on (x/temporal's lode, with the Temporal SDK) calls Main
// with its own options: WithTemporal gives --temporal a Temporal, which
// gets an Agent built from lode.yaml (store, model, tool handler, loop and
// per-turn options) and runs workers, starts runs and sends decisions. A
// build without one says so at --temporal and names the go install command
// of the build that has it. lode run --temporal needs store: (the thread is
// stored there, and every worker shares it), prints the run's turns as
// they land, and pauses with exit code 3 as lode run does; the lode resume
// commands it prints keep --temporal. The temporal: section of lode.yaml
// sets namespace: and task_queue: (default and lode). In the same way
// WithA2AServer gives lode serve --a2a an A2AServer (x/a2a/cmd/lode's),
// which gets an A2AAgent built from lode.yaml by the loop door's rules,
// over HTTP: the model, the tool handler with approvals, the policy, the
// store (--store, store:, else .lode/threads), the logins (tokens:,
// proxy:) and the a2a_server: section (the card's name, description, url
// and the push destinations).
package cli
