// Package toolsearch keeps thousands of mounted tools out of the context
// window: deferred tools are not offered until the model finds them with
// a search tool, which loads what it found for the following turns. What
// was loaded is part of the thread, and every call is still checked.
//
//	s, err := toolsearch.New(reg, toolsearch.Defer("crm", "jira"), toolsearch.WithBase(enf.Filter()))
//	step := loop.New(loop.WithHandlers(xtool.NewHandler(reg, enf.HandlerOptions()...)),
//		loop.WithInvokeOptions(xtool.WithFilteredTools(reg, s.Filter())))
//
// # Where deferral lives
//
// In the Search, not on the tool or the registry: Defer names tools, or
// sources (a pack, an MCP server) whose tools are all deferred, and
// DeferFunc decides from a tool's binding. The registry stays one flat
// namespace that every door (an MCP server, lode tools) lists whole, and
// one Search decides what a loop's turns see. lode.yaml's defer: list
// names packs and servers the same way; lode tools marks their tools.
//
// # The search tool
//
// New registers it (DefaultName, "tool_search") in the registry, so the
// registry's Handler runs it like any tool. It takes a query and an
// optional limit (DefaultLimit, at most MaxLimit) and ranks the tools by
// the words of their names (weighted three times) and the first line of
// their descriptions with BM25; a query word also matches the longer
// words it starts ("calend" finds "calendar") and a plural its singular,
// at half weight; a word and its other forms count as one word, so a tool
// that has both "refund" and "refunds" is not ranked up for it. A
// description that starts with the query's first word (descriptions and
// queries both start with what is done: "Refund an invoice") ranks
// higher. Names split at '_', '-' and camelCase. Equal scores rank by
// name, so every replica answers the same. Past the limit, the answer
// names, without loading them, up to MaxAlso matches that score close to
// the last one loaded, so a vague query over a family of similar tools
// does not hide the right one: the model searches for it by name. The index is built
// once per registry snapshot (the registry's Tools slice changes only
// when the registry does), so a search over 10,000 tools reads posting
// lists and allocates little (BENCHMARKS.md, issue 31).
//
// A search sees only the tools the caller may use: WithBase's filter (a
// role policy) decides on the best candidates before they are listed, so
// a hidden tool is never found. The base is asked about candidates only
// (here and in Filter), never about every deferred tool, which keeps its
// cost to what is shown; a base that decides tool by tool, as x/policy's
// does, decides the same either way. The search tool's answer lists each
// match as "- name: description" and loads the deferred ones at once —
// one call, no separate load step, as a model that searched wants what
// it found. A policy decides about the search tool as about any other:
// a role it hides tool_search from cannot search.
//
// # Activations are part of the thread
//
// Activate writes them under the thread metadata key MetaKey, as a JSON
// list of tools with the turn at which each was loaded. Every store keeps
// metadata durably, so a resumed or recovered thread, another replica
// and a replayed cassette (which replays the same calls into the same
// ledger) offer the same tools; nothing is kept in the process. With
// WithExpiry(n) a tool lapses after n answers of the model; by default a
// compaction summary (x/history) that covers the turn a tool was loaded
// at drops it, since the model no longer sees the search that found it
// (KeepOnCompaction keeps it). Expired and dropped entries leave the
// record the next time it is written. A door that drops a thread's later
// turns (x/conduit/web's regenerate and edit) trims the record with
// Rewind, since the record keeps the turn of each load, not the search
// that made it. Reading the record costs one
// metadata lookup (the last record decoded is cached by value) and a scan
// of the turns since the oldest live activation, only when WithExpiry or
// compaction dropping needs it.
//
// # Execution checks
//
// Filter offers the core tools and the loaded ones, as WithBase keeps
// them. The
// Handler refuses a call to a tool the turn did not offer in the words of
// an unknown tool, so a call to a deferred tool before it is loaded reads
// exactly like a call to a tool that does not exist. Loading never widens
// the base: Activate ignores tools the base hides, and Filter applies the
// base before the record, so a record that names a tool the caller's role
// lost (or one written by hand) offers nothing. A Handler's Gate (x/policy)
// still runs on every call. A damaged record activates nothing.
//
// # Provider-native search
//
// Anthropic's servers, and OpenAI's Responses API on gpt-5.4 and later,
// run a tool search of their own over tools sent with defer_loading. With
// Native, Filter offers the deferred tools the caller may use with
// tool.Tool.Deferred set and leaves out the search tool;
// x/provider/anthropic sends them with defer_loading and adds its BM25
// tool search tool, x/provider/openai/responses sends them with
// defer_loading and adds the hosted tool_search tool. The server then
// decides what the model sees; Recorder, a loop.Handler, reads the
// server's results in each answer (Anthropic's tool_search_tool_result
// blocks, the Responses API's tool_search_output items) and writes the
// tools they load into the same record, before the answer's calls run, so
// the ledger reads the same either way (a name the Search does not
// defer, or the base hides, is not recorded: a server cannot widen what
// runs). Gate (an xtool.Gate, which composes with a policy's) hides a
// deferred tool the record does not hold, so a call the server's search
// did not load is refused as unknown there too. lode's own search is the
// default, and wins where both could run: it works on every model and
// adapter, a cassette replays it, and its activations are
// checked by the base before anything is listed, where the server's
// search ranks every deferred tool sent (the base still decides what is
// sent, and what is recorded). The Responses adapter on a model without
// tool_search (before gpt-5.4, unless responses.WithToolSearch says
// otherwise) sends deferred tools as ordinary functions, and chat
// completions has no search at all: there Native's Gate refuses every
// deferred tool the record does not hold, so use lode's search.
//
// # Doors
//
// lode run, chat, resume and web (the loop's doors) defer what lode.yaml's
// defer: names. lode serve does not: an MCP client keeps its own context
// and lists tools itself, and its calls have no thread to record loads in.
// A child agent (x/agent) is a loop of its own: give it a Search over its
// registry (agent.WithFilter(s.Filter())), and its thread keeps its own
// activations. Over its caller's registry, x/agent denies the child what
// its caller's turn did not offer, so a deferred tool the caller has not
// loaded is refused below it as well: loading in a child never widens
// what its caller may use.
package toolsearch
