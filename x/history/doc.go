// Package history keeps long threads inside a model's context window,
// on the request only: the ledger keeps every turn.
//
// A Policy is a provider.InvokeOption. On each invocation it sends the
// system turns and the thread's first user message (pinned), then the
// newest turns that fit the token budget. A turn and the tool turns after
// it go or stay together, so a call never reaches the model without its
// result. Before whole turns are dropped, tool results older than the
// newest few turns (WithKeep) are cut to WithResultBytes.
//
// With WithSummarizer, a Policy compacts instead of dropping: a provider
// call summarises the oldest turns (and the summary before them), leaving
// half the budget for what follows, and the summary is appended to the
// ledger as a system turn holding an artifact.Summary that names the
// turns it covers. The request carries the summary's text, as a user
// turn, in place of those turns; a thread reloaded from any store builds
// the same request, and the covered turns stay readable in the ledger.
//
// Compaction stays inside its budget. A summary may take a quarter of the
// budget (WithSummaryTokens); the request names that limit, a longer
// answer is asked for again with a correction naming it (twice,
// WithSummaryRetries), and is then cut and ends with a marker saying how
// much was left out (SummaryCutMarker). The babble is never sent back, so
// each retry is as small as the first request. The old turns go to the
// summarizer in chunks that each fit its budget (WithSummarizerBudget, by
// default the policy's), each request carrying the summary so far: a
// 10,000-turn thread that turns compaction on is summarised in about a
// hundred bounded requests, and only the last summary is stored. A
// summarizer that fails (an error, an empty answer) fails no turn: the
// request goes out trimmed without a new summary, a warning goes to
// WithLogger and a history.compaction_failed event to the turn's span
// (with history.compaction=failed), once per failed compaction, and the
// next request that drops turns tries again. A cancelled context still
// stops the turn. The summarizer's usage counts toward the turn
// (loop.Charge): priced with the Step's Pricer, bound by its cost limit,
// and reported as a loop.UsageEvent for SummaryUsage.
//
// The budget is WithBudget, or the model's context window less a reserve
// for the answer: from the provider when it implements Windower, else
// from a small table of common models (ContextWindow). Tokens are
// estimated at four bytes each plus a little per turn; no tokenizer is
// linked in, because each model family has its own and the estimate only
// has to err on the safe side. While the whole thread fits, the count the
// server reported with the newest answer (artifact.Usage) is used for the
// turns it covers, which catches an estimate that runs low.
//
// The provider's prompt cache reuses a request's prefix that an earlier
// request sent. The sliding window changes that prefix on every turn once
// the thread is over its budget; WithBlocks(k) drops history in blocks, so
// that it changes about once every k turns, at the cost of dropping up to
// a block more at each edge. CacheWatch, a loop.Handler, records each
// turn's cache hit ratio (cached input tokens over input tokens, the
// lode.cache.hit_ratio metric) and emits a CacheLostEvent when a turn
// whose history extended the previous one's read less than half as much
// from the cache.
//
// Recall. A summary loses detail; RegisterRecall adds two tools that read
// it back from the ledger, where the summarised turns stay: recall_search
// ranks the covered turns by a query's words and recall_turn shows one by
// number. They are ordinary tools, under the Handler's result budget and
// the thread's tool filter; RecallFilter offers them only once the thread
// has a summary.
//
// When the server refuses a request as too long anyway, the provider
// returned by Policy.Provider compacts (or trims) to half of what it sent and
// retries once; a second refusal is a *ContextError that says which
// setting to lower.
package history
