// Package memory keeps facts that outlive a thread: saved in one
// conversation, searched in the next, and scoped by who the caller is.
//
//	store, _ := memory.OpenFile(dir)
//	memory.Register(registry, store) // memory_save and memory_search
//
// # Scope
//
// Every fact belongs to a Scope, the tenant and user of an auth.Identity.
// A Scope is made from an Identity by Go code (ScopeOf) or read from the
// metadata a door wrote on the caller's thread (ThreadScope, auth.Of), and
// never from what a model or a request body says: the tools take no user
// or tenant argument, and their schemas refuse one. A Scope without a user
// (the anonymous caller of a door that authenticates nobody) has no
// memory: every Store method and both tools refuse it (ErrNoScope), so
// memory fails closed. Facts of one Scope are never found, listed or
// forgotten from another, in every store; the same user in another tenant
// is another Scope.
//
// # Stores
//
// A Store saves, searches, forgets and lists facts of a Scope. This
// package has the file store (OpenFile: a folder, one file of JSON lines
// per scope, named by a hash of the scope; searched in memory with BM25).
// x/memory/sqlite (FTS5 with bm25) and x/memory/postgres (a tsvector with
// GIN and ts_rank) keep the drivers out of this package; each may share
// the database of a ledger.
//
// Every store matches on Terms: lower-case runs of letters and digits,
// without common English stopwords, with a plural "s" dropped. A query is
// text, never syntax: quotes, operators, column filters and the % and _
// wildcards are not interpreted by any store; a query with no terms finds
// nothing.
//
// # Tools
//
// Tools gives memory_save {fact} and memory_search {query, limit}, for
// tool.Registry.Register (or Register). Each reads the caller's thread
// with xtool.Caller, so they work in a loop turn and for an MCP caller a
// door marked with xtool.WithCaller, and they go through the handler's
// policy, approvals and guards like any tool. A call without a user is
// answered with an error result, and nothing is saved or searched;
// WithRoles narrows them to callers with a role. memory_search is marked
// Private (tool.Hints), so a thread that read memory is labelled
// ledger.LabelPrivate for x/policy's flow rules.
//
// # Recall
//
// Recall is an invoke option that adds the facts found for the user's
// newest message to the run. They go after the cached prefix: at the
// run's first model call they are stored as a user turn right after the
// message (a text Resource named RecallURI; IsRecall tells it apart), so
// every later request begins with the one before it and the provider's
// prompt cache keeps it, which facts put in the system prompt would lose
// at every message (BENCHMARKS.md measures both). Every adapter sends the
// turn as part of the user's message. The scope is the thread's, and a
// thread with facts added is labelled ledger.LabelPrivate.
//
// # Extraction
//
// Extract (or Extractor, a loop handler, after a run's last answer) asks
// a model for the lasting facts in a thread's turns it has not read and
// saves them in the thread's scope. The answer must be exactly
// {"facts": [...]} and is bounded; its usage is charged to the turn with
// loop.Charge, and a refused answer never fails the run (ExtractEvent).
//
// # Doors
//
// lode.yaml's memory: gives every door of lode (x/cli) the same store,
// opened once per process: memory_save and memory_search are registered
// with the configured tools, so each door's policy, approvals and guards
// apply to them; recall: and extract: add Recall and Extractor to the
// door's loop. lode run and lode chat act for the local login and
// --tenant; lode web for the login its tokens: or proxy: name; lode serve
// for the caller its tokens name over HTTP (xtool.WithCaller), the local
// login over stdio, and nobody without logins over HTTP; a child agent
// (x/agent) for its parent's user and tenant, copied to its thread; lode
// worker --temporal for each thread's caller, the turn activity storing
// the recall and running the extraction after the last answer
// (x/temporal's WithAnswerHandlers). lode web shows a recall turn as the
// start of the answer, never as something the user said.
//
// # Choices this package makes
//
//   - A fact is at most MaxFactBytes (2,000) bytes of UTF-8 text with no
//     NUL; a search returns DefaultLimit (5) facts unless asked, at most
//     MaxLimit (50), and reads at most MaxQueryTerms (32) terms of the query.
//   - Roles do not divide memory: a user's facts are the same under every
//     role they act in. Roles only decide who may use the tools (WithRoles),
//     as x/policy decides who is offered them.
//   - Facts are not deduplicated: saving a fact twice keeps two.
//   - The file store keeps every scope it has read in memory until Close.
//   - Ranking differs by store (BM25, FTS5's bm25, ts_rank); BENCHMARKS.md
//     gives each one's recall on the same generated questions.
//   - Embeddings are optional and only rerank: Reranked orders what a
//     store's text search found by an Embedder's cosine similarity. No
//     store keeps vectors, so a fact that shares no term with the query
//     is not found.
//   - Recall searches once per user message, with that message's text
//     (at most MaxFactBytes of it), and adds at most WithLimit facts; it
//     adds nothing when nothing matches.
//   - Extraction reads the user's and the assistant's text only, the
//     newest MaxExtractInput bytes of it, and refuses a whole answer with
//     more facts than WithMaxFacts rather than pick some.
package memory
