package history

import (
	"context"
	"reflect"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"

	"github.com/lodeworks/lode/artifact"
	"github.com/lodeworks/lode/ledger"
	"github.com/lodeworks/lode/loop"
)

// CacheHitRatioMetric is the histogram CacheWatch records each model
// turn's cache hit ratio in: cached input tokens over input tokens.
const CacheHitRatioMetric = "lode.cache.hit_ratio"

// CacheLostEvent reports a model turn that lost the prompt cache its
// thread had: the history it was sent began with the history of the
// thread's previous model turn, so the server could have reused that
// prefix, yet it read less than half as many tokens from its cache as the
// previous turn did. Tools or a system prompt that changed between the
// turns, a cache the server evicted, or a request routed to another
// server all cause it; the history does not.
type CacheLostEvent struct {
	// Turn is the ledger index of the answer that lost the cache.
	Turn int
	// Cached and Input are that turn's cached and whole input tokens;
	// Previous is the cached input tokens of the turn before it.
	Cached, Input, Previous int64
}

// EventName returns "cache_lost".
func (CacheLostEvent) EventName() string { return "cache_lost" }

// CacheWatch is a loop.Handler that watches the provider's prompt cache:
// for each artifact.Usage of an answer it records the cache hit ratio, as
// the turn span's lode.cache.hit_ratio attribute and, with WithCacheMeter,
// in the CacheHitRatioMetric histogram; and it emits a CacheLostEvent (and
// a history.cache_lost span event) when the turn lost the cache it was
// expected to keep.
//
// The previous turn is the newest assistant turn before the answer that
// carries a Usage. Its prefix is expected to be kept when the request's
// history begins with the history sent for it: with a Policy in the
// request, its view then is rebuilt from the ledger as it stood before
// that answer (a stored summary included), so a block edge, a slide of
// the window or a new summary expects no cache; without one, the whole
// thread is sent and each request extends the last. A zero CacheWatch
// records the attribute and the event only.
type CacheWatch struct {
	ratio metric.Float64Histogram
}

// CacheOption configures a CacheWatch.
type CacheOption func(*CacheWatch)

// WithCacheMeter records the hit ratio of every turn whose input tokens
// are known in the CacheHitRatioMetric histogram of m; nil records none.
func WithCacheMeter(m metric.Meter) CacheOption {
	return func(w *CacheWatch) {
		w.ratio = nil
		if m == nil {
			return
		}
		h, err := m.Float64Histogram(CacheHitRatioMetric, metric.WithUnit("1"),
			metric.WithDescription("Share of a model turn's input tokens read from the provider's prompt cache"))
		if err == nil {
			w.ratio = h
		}
	}
}

// NewCacheWatch returns a CacheWatch; give it to the loop with
// loop.WithHandlers.
func NewCacheWatch(opts ...CacheOption) *CacheWatch {
	w := &CacheWatch{}
	for _, o := range opts {
		if o != nil {
			o(w)
		}
	}
	return w
}

// Handle reads u when it is an artifact.Usage of the turn running in ctx;
// it ignores every other artifact and never fails the turn.
func (w *CacheWatch) Handle(ctx context.Context, a artifact.Artifact, e loop.Emitter) error {
	u, ok := a.(artifact.Usage)
	if !ok || u.InputTokens <= 0 {
		return nil
	}
	ratio := float64(min(max(u.CachedInputTokens, 0), u.InputTokens)) / float64(u.InputTokens)
	if w.ratio != nil {
		w.ratio.Record(ctx, ratio)
	}
	span := trace.SpanFromContext(ctx)
	if span.IsRecording() {
		span.SetAttributes(attribute.Float64("lode.cache.hit_ratio", ratio))
	}
	info, ok := loop.CurrentTurn(ctx)
	if !ok || info.State == nil {
		return nil
	}
	led := info.State.Turns()
	answer := len(led) - 1
	prevAt, prev, found := previousUsage(led, answer)
	if !found || prev.CachedInputTokens <= 0 || 2*u.CachedInputTokens >= prev.CachedInputTokens {
		return nil
	}
	if vs, ok := requestView(info); ok && !sharesPrefix(vs.policy.View(led[:prevAt]), vs.view) {
		return nil
	}
	ev := CacheLostEvent{Turn: answer, Cached: u.CachedInputTokens, Input: u.InputTokens, Previous: prev.CachedInputTokens}
	if span.IsRecording() {
		span.AddEvent("history.cache_lost", trace.WithAttributes(
			attribute.Int64("lode.cache.cached_tokens", ev.Cached),
			attribute.Int64("lode.cache.previous_cached_tokens", ev.Previous)))
	}
	if e != nil {
		e.Emit(ctx, ev)
	}
	return nil
}

// previousUsage finds the newest assistant turn before answer that
// carries a Usage, and its tokens summed.
func previousUsage(led []ledger.Turn, answer int) (int, artifact.Usage, bool) {
	for i := answer - 1; i >= 0; i-- {
		if led[i].Role != ledger.RoleAssistant {
			continue
		}
		var sum artifact.Usage
		found := false
		for _, a := range led[i].Artifacts {
			if u, ok := a.(artifact.Usage); ok {
				sum.InputTokens += u.InputTokens
				sum.CachedInputTokens += u.CachedInputTokens
				found = true
			}
		}
		if found {
			return i, sum, true
		}
	}
	return 0, artifact.Usage{}, false
}

func requestView(info *loop.TurnInfo) (*viewSource, bool) {
	if info.Request == nil {
		return nil, false
	}
	v, _ := info.Request.Extension(viewKey{})
	vs, ok := v.(*viewSource)
	return vs, ok && vs.view != nil
}

// sharesPrefix reports whether next begins with every turn of prev.
func sharesPrefix(prev, next []ledger.Turn) bool {
	if len(prev) > len(next) {
		return false
	}
	for i := range prev {
		if !sameTurn(prev[i], next[i]) && !reflect.DeepEqual(prev[i], next[i]) {
			return false
		}
	}
	return true
}
