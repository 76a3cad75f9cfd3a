// Package fallback is one provider.Provider over several: a request goes
// to the first, and when that fails before its answer starts, to the next.
//
//	p, err := fallback.New([]provider.Provider{primary, backup},
//		fallback.WithHedge(2*time.Second))
//
// # When it falls back
//
// An attempt's answer starts with the first artifact it yields other than
// artifact.Usage (a delta, or a whole artifact). A failure before that
// moves on to the next provider when its Class is one WithFallbackOn names
// (DefaultClasses: 5xx, 429, overloaded, timeouts, connection errors — not
// a refused request or key: see DefaultClasses for why). A failure after
// the answer started is returned as it is: part of the answer already
// reached the caller, and another model would start over. When the
// caller's context is done nothing falls back. The classes come from
// Classify, which reads the status of an error with a method
// HTTPStatus() int (the adapters' APIError), and the standard library's
// deadline and network errors.
//
// An adapter's own retries come first: a 503 reaches the fallback once
// the adapter has given up on it (openai.WithMaxRetries and the like), so
// lowering them hands over to the next provider sooner.
//
// When one attempt fails, its error is returned as it is; when several
// did, an *Error holds each (errors.Is and errors.As find any of them),
// and matches ErrExhausted when every provider was tried.
//
// # Hedging
//
// WithHedge(d) sends the request to the next provider as well when the
// attempt in flight has not started answering after d. The first of the
// two to start answering wins; the other is cancelled and drained, and
// none of its artifacts reach the caller. At most two attempts are in
// flight; one that fails while the other runs leaves that one to be
// hedged in turn. Attempts then run in goroutines of their own, and the
// stream ends only once all of them have. Without WithHedge the attempts
// run in the caller's goroutine, one after another, and a first attempt
// that answers costs next to nothing over the provider alone.
//
// # Usage of every attempt
//
// An attempt that failed or lost may still have reported tokens (a
// Usage before its failure, a hedged loser drained to its end). Each
// attempt's Usage artifacts are yielded in the answer, unchanged, so the
// loop's token count and limits and a ledger's record of cost include
// them: a failed attempt's before the answer, a hedged loser's at the end,
// and the answering attempt's Usage last, so that the last Usage of an
// answer is always that of the request that produced it (what a history
// policy reads as the request's size). When every attempt fails, their
// Usage comes before the error.
//
// # Spans and events
//
// WithTracer records a span "lode.fallback.attempt" per attempt, a child
// of the invocation's span and the parent of the adapter's "chat {model}"
// span, with lode.fallback.attempt, lode.fallback.provider,
// gen_ai.request.model, lode.fallback.hedge, lode.fallback.status,
// lode.fallback.fell_back, the attempt's token usage, and error.type (a
// Class name) on failure. Inside a loop turn with observers, each attempt
// posts an AttemptEvent when it starts and when it ends (provider.Notify).
//
// # What it says about itself
//
// Model is the first provider's model. ContextWindow is the smallest of
// the providers' windows, since any of them may get the request.
// SupportsResponseFormat holds only when every provider supports the
// format.
package fallback
