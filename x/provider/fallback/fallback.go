package fallback

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"slices"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/lodeworks/lode/artifact"
	"github.com/lodeworks/lode/internal/runspan"
	"github.com/lodeworks/lode/provider"
)

// Provider is one provider.Provider over several, tried in order.
type Provider struct {
	provs  []provider.Provider
	models []string
	cfg    config
}

type config struct {
	classes Class
	hedge   time.Duration
	tracer  trace.Tracer
	clock   Clock
}

// Option configures a Provider.
type Option func(*config)

// WithFallbackOn sets the classes of failure that move on to the next
// provider; 0 means DefaultClasses. A failure after the answer started
// never falls back, whatever its class, and neither does one that comes
// when the caller's context is done.
func WithFallbackOn(c Class) Option {
	return func(cfg *config) { cfg.classes = c }
}

// WithHedge sends the next provider the same request when the attempt in
// flight has not started answering after delay; the first of the two to
// yield an artifact answers, and the other is cancelled and drained. No
// more than two attempts are ever in flight. 0 or a negative delay means
// no hedging. To hedge one model, give New the same provider twice.
func WithHedge(delay time.Duration) Option {
	return func(cfg *config) { cfg.hedge = delay }
}

// WithTracer records a span per attempt, a child of the span in the
// invocation's context; nil means none.
func WithTracer(t trace.Tracer) Option {
	return func(cfg *config) { cfg.tracer = t }
}

// Clock makes the timer of the hedge delay.
type Clock interface {
	// Timer returns a channel that receives once d has passed, and a
	// function that stops the timer.
	Timer(d time.Duration) (<-chan time.Time, func() bool)
}

// WithClock sets the clock of the hedge delay, for tests; nil means the
// real one.
func WithClock(c Clock) Option {
	return func(cfg *config) { cfg.clock = c }
}

type realClock struct{}

func (realClock) Timer(d time.Duration) (<-chan time.Time, func() bool) {
	t := time.NewTimer(d)
	return t.C, t.Stop
}

// New returns a Provider that sends each request to provs in order. It
// fails with ErrNoProviders without any, and when one of them is nil.
func New(provs []provider.Provider, opts ...Option) (*Provider, error) {
	if len(provs) == 0 {
		return nil, ErrNoProviders
	}
	p := &Provider{provs: append([]provider.Provider(nil), provs...), models: make([]string, len(provs))}
	for i, pr := range p.provs {
		if pr == nil {
			return nil, fmt.Errorf("fallback: provider %d is nil", i)
		}
		if m, ok := pr.(interface{ Model() string }); ok {
			p.models[i] = m.Model()
		}
	}
	for _, o := range opts {
		if o != nil {
			o(&p.cfg)
		}
	}
	if p.cfg.classes == 0 {
		p.cfg.classes = DefaultClasses
	}
	if p.cfg.clock == nil {
		p.cfg.clock = realClock{}
	}
	return p, nil
}

// Model is the first provider's model, when it names one: the model a
// request is meant for. Which provider answered a given request is in
// the AttemptEvents and spans.
func (p *Provider) Model() string { return p.models[0] }

// Models names every provider's model, in order, so that a cost limit
// (loop.WithMaxCost) can refuse to start when any of them has no price.
func (p *Provider) Models() []string { return slices.Clone(p.models) }

// ContextWindow is the smallest window among the providers that report
// one, since any of them may get the request; false when none does.
func (p *Provider) ContextWindow() (int, bool) {
	best, found := 0, false
	for _, pr := range p.provs {
		w, ok := pr.(interface{ ContextWindow() (int, bool) })
		if !ok {
			continue
		}
		if n, ok := w.ContextWindow(); ok && (!found || n < best) {
			best, found = n, true
		}
	}
	return best, found
}

// SupportsResponseFormat reports whether every provider honours the
// response format typ: any of them may answer, and one that ignores the
// format would answer in prose.
func (p *Provider) SupportsResponseFormat(typ string) bool {
	for _, pr := range p.provs {
		s, ok := pr.(provider.ResponseFormatSupporter)
		if !ok || !s.SupportsResponseFormat(typ) {
			return false
		}
	}
	return true
}

// Invoke streams the answer of the first provider that gives one (see the
// package doc).
func (p *Provider) Invoke(ctx context.Context, req *provider.Request) iter.Seq2[artifact.Artifact, error] {
	return func(yield func(artifact.Artifact, error) bool) {
		if p.cfg.hedge > 0 && len(p.provs) > 1 {
			p.hedged(ctx, req, yield)
			return
		}
		p.sequential(ctx, req, yield)
	}
}

// falls reports whether err, of class c, moves on to another provider.
func (p *Provider) falls(ctx context.Context, c Class) bool {
	return ctx.Err() == nil && p.cfg.classes&c != 0
}

// failure is the error of an invocation whose attempts all failed: the
// one attempt's error as it is, or all of them.
func failure(failed []*AttemptError, exhausted bool) error {
	if len(failed) == 1 {
		return failed[0].Err
	}
	return &Error{Attempts: failed, Exhausted: exhausted}
}

// sequential tries the providers one after another, in the caller's
// goroutine: a first attempt that answers costs little more than the
// provider alone.
func (p *Provider) sequential(ctx context.Context, req *provider.Request, yield func(artifact.Artifact, error) bool) {
	s := &seqRun{yield: yield}
	for i, pr := range p.provs {
		s.a = attempt{n: i, prov: i, ctx: ctx}
		s.started, s.stopped, s.err = false, false, nil
		p.begin(ctx, &s.a)
		invoke(s.a.ctx, pr, req, p.models[i])(s.take)
		switch {
		case s.stopped:
			p.end(ctx, &s.a, StatusStopped, nil, false)
			return
		case s.err == nil:
			// An answer, possibly empty.
			if !s.started && (!yieldUsage(yield, s.spent) || !yieldUsage(yield, s.a.usages)) {
				p.end(ctx, &s.a, StatusStopped, nil, false)
				return
			}
			p.end(ctx, &s.a, StatusAnswered, nil, false)
			return
		case s.started:
			p.end(ctx, &s.a, StatusFailed, s.err, false)
			yield(nil, s.err)
			return
		}
		err := s.err
		c := Classify(ctx, err)
		fall := p.falls(ctx, c)
		s.a.class = c
		p.end(ctx, &s.a, StatusFailed, err, fall && i+1 < len(p.provs))
		s.failed = append(s.failed, s.a.failure(p, err))
		s.spent = append(s.spent, s.a.usages...)
		if !fall || i+1 == len(p.provs) {
			if yieldUsage(yield, s.spent) {
				yield(nil, failure(s.failed, fall))
			}
			return
		}
	}
}

// seqRun is the state of a sequential invocation; take is the loop body
// of each attempt's stream.
type seqRun struct {
	yield   func(artifact.Artifact, error) bool
	a       attempt
	started bool
	stopped bool
	err     error
	failed  []*AttemptError
	spent   []artifact.Usage
}

// take passes an attempt's artifact on. Usage before the answer starts is
// held: the attempt may still fail and fall back.
func (s *seqRun) take(art artifact.Artifact, err error) bool {
	if s.stopped || s.err != nil {
		// A provider that goes on after being told to stop is not
		// listened to.
		return false
	}
	if err != nil {
		s.err = err
		return false
	}
	if art == nil {
		return true
	}
	if isUsage(art) {
		s.a.usages = append(s.a.usages, art.(artifact.Usage))
		if !s.started {
			return true
		}
	} else if !s.started {
		s.started = true
		if !yieldUsage(s.yield, s.spent) || !yieldUsage(s.yield, s.a.usages) {
			s.stopped = true
			return false
		}
	}
	if !s.yield(art, nil) {
		s.stopped = true
		return false
	}
	return true
}

// invoke is pr's stream, or one that says pr gave none. A Usage that does
// not name its model gets model's name, so that each attempt is priced at
// its own model's prices (loop.WithPricer).
func invoke(ctx context.Context, pr provider.Provider, req *provider.Request, model string) iter.Seq2[artifact.Artifact, error] {
	if seq := pr.Invoke(ctx, req); seq != nil {
		if model == "" {
			return seq
		}
		return func(yield func(artifact.Artifact, error) bool) {
			seq(func(art artifact.Artifact, err error) bool {
				if u, ok := art.(artifact.Usage); ok && u.Model == "" {
					u.Model = model
					art = u
				}
				return yield(art, err)
			})
		}
	}
	return func(yield func(artifact.Artifact, error) bool) {
		yield(nil, errors.New("fallback: the provider returned no stream"))
	}
}

func yieldUsage(yield func(artifact.Artifact, error) bool, us []artifact.Usage) bool {
	for _, u := range us {
		if !yield(u, nil) {
			return false
		}
	}
	return true
}

// attempt is one request to one provider.
type attempt struct {
	n, prov int
	hedge   bool
	ctx     context.Context
	span    trace.Span
	class   Class
	// usages are the Usage artifacts the provider yielded, in order.
	usages []artifact.Usage

	// The fields of a hedged attempt, which runs in its own goroutine:
	// it sends its artifacts on out until lost is closed, then only
	// drains; it sets err and usages, then closes done.
	cancel context.CancelFunc
	out    chan artifact.Artifact
	done   chan struct{}
	lost   chan struct{}
	err    error
}

func (a *attempt) failure(p *Provider, err error) *AttemptError {
	return &AttemptError{Attempt: a.n, Provider: a.prov, Model: p.models[a.prov], Class: a.class, Err: err}
}

func (a *attempt) total() (artifact.Usage, bool) {
	var t artifact.Usage
	for _, u := range a.usages {
		t.InputTokens += u.InputTokens
		t.OutputTokens += u.OutputTokens
		t.CachedInputTokens += u.CachedInputTokens
		t.CacheWriteTokens += u.CacheWriteTokens
		t.ReasoningTokens += u.ReasoningTokens
	}
	return t, len(a.usages) > 0
}

// begin opens a's span and reports its start.
func (p *Provider) begin(ctx context.Context, a *attempt) {
	if p.cfg.tracer != nil {
		attrs := []attribute.KeyValue{
			attribute.Int("lode.fallback.attempt", a.n),
			attribute.Int("lode.fallback.provider", a.prov),
			attribute.Bool("lode.fallback.hedge", a.hedge),
		}
		if m := p.models[a.prov]; m != "" {
			attrs = append(attrs, attribute.String("gen_ai.request.model", m))
		}
		a.ctx, a.span = p.cfg.tracer.Start(a.ctx, "lode.fallback.attempt", trace.WithAttributes(attrs...),
			trace.WithAttributes(runspan.Attributes(a.ctx)...))
	}
	p.notify(ctx, a, StatusStarted, nil, false)
}

// end closes a's span and reports how it ended.
func (p *Provider) end(ctx context.Context, a *attempt, s Status, err error, fellBack bool) {
	if a.span != nil {
		a.span.SetAttributes(attribute.String("lode.fallback.status", string(s)), attribute.Bool("lode.fallback.fell_back", fellBack))
		if u, ok := a.total(); ok {
			a.span.SetAttributes(
				attribute.Int64("gen_ai.usage.input_tokens", u.InputTokens),
				attribute.Int64("gen_ai.usage.output_tokens", u.OutputTokens),
			)
		}
		if err != nil {
			// A closed set of names: the raw text may carry a prompt.
			kind := errorType(ctx, err)
			a.span.RecordError(err)
			a.span.SetStatus(codes.Error, kind)
			a.span.SetAttributes(attribute.String("error.type", kind))
		}
		a.span.End()
	}
	p.notify(ctx, a, s, err, fellBack)
}

// notify posts an AttemptEvent to whoever listens in ctx (provider.Notify:
// the observers of the loop turn running the invocation), if anyone does;
// it costs nothing otherwise.
func (p *Provider) notify(ctx context.Context, a *attempt, s Status, err error, fellBack bool) {
	if !provider.Listening(ctx) {
		return
	}
	ev := AttemptEvent{
		Attempt: a.n, Provider: a.prov, Model: p.models[a.prov], Hedge: a.hedge,
		Status: s, Err: err, FellBack: fellBack,
	}
	if err != nil {
		ev.Class = Classify(ctx, err)
	}
	if u, ok := a.total(); ok && s != StatusStarted {
		ev.Usage = &u
	}
	provider.Notify(ctx, ev)
}

// errorType names err for a span, from a closed set: its class, or
// "canceled" when the caller's context ended.
func errorType(ctx context.Context, err error) string {
	if ctx.Err() != nil {
		return "canceled"
	}
	return Classify(ctx, err).String()
}

// isUsage reports whether a is an artifact.Usage without copying it out,
// which on every artifact of a stream costs more than the test.
func isUsage(a artifact.Artifact) bool {
	_, ok := a.(artifact.Usage)
	return ok
}
