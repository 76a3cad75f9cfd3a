package loop

import (
	"context"
	"fmt"
	"log/slog"
	"runtime/debug"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/lodeworks/lode/artifact"
	"github.com/lodeworks/lode/ledger"
	"github.com/lodeworks/lode/provider"
)

// Handler acts on the artifacts of an assistant turn. It is called once per
// artifact, possibly concurrently for different artifacts of one turn, and
// reports what it produced through the Emitter. Returning an error ends the
// turn with a *HandlerError; a tool failure a model should read is not such
// an error but a result the handler emits.
type Handler interface {
	Handle(ctx context.Context, art artifact.Artifact, e Emitter) error
}

// HandlerFunc adapts a function to a Handler.
type HandlerFunc func(ctx context.Context, art artifact.Artifact, e Emitter) error

// Handle calls f.
func (f HandlerFunc) Handle(ctx context.Context, art artifact.Artifact, e Emitter) error {
	return f(ctx, art, e)
}

// DefaultConcurrency bounds how many artifacts of one turn are handled at
// once when WithConcurrency is not given.
const DefaultConcurrency = 8

// Step runs turns. It holds configuration only and is safe for concurrent
// use on different threads.
type Step struct {
	handlers    []Handler
	invokeOpts  []provider.InvokeOption
	tracer      trace.Tracer
	logger      *slog.Logger
	observers   []*mailbox
	concurrency int
	maxTurns    int
	maxTokens   int64
	timeLimit   time.Duration
}

// Option configures a Step.
type Option func(*Step)

// WithHandlers appends handlers; each artifact goes to each, in this order.
func WithHandlers(h ...Handler) Option {
	return func(s *Step) { s.handlers = append(s.handlers, h...) }
}

// WithInvokeOptions appends options resolved on every invocation, before
// the options given to Turn or Run.
func WithInvokeOptions(o ...provider.InvokeOption) Option {
	return func(s *Step) { s.invokeOpts = append(s.invokeOpts, o...) }
}

// WithTracer records a span per turn and per run. Without one, tracing costs
// nothing.
func WithTracer(t trace.Tracer) Option { return func(s *Step) { s.tracer = t } }

// WithLogger sets where handler panics and dropped observer panics are
// logged; nil means slog.Default at the time of the panic.
func WithLogger(l *slog.Logger) Option { return func(s *Step) { s.logger = l } }

// WithObserver adds an observer that receives every event asynchronously,
// in order, without ever blocking the turn.
func WithObserver(e Emitter) Option {
	return func(s *Step) { s.observers = append(s.observers, newMailbox(e, s)) }
}

// WithConcurrency bounds how many artifacts of one answer are handled at
// once; n < 1 means DefaultConcurrency.
func WithConcurrency(n int) Option { return func(s *Step) { s.concurrency = n } }

// WithMaxTurns stops Run with a *LimitError when the model still calls
// tools after n assistant turns; 0 means no limit.
func WithMaxTurns(n int) Option { return func(s *Step) { s.maxTurns = n } }

// WithMaxTokens stops Run with a *LimitError when the tokens reported by the
// provider's Usage reach n while the model still calls tools; 0 means no
// limit.
func WithMaxTokens(n int64) Option { return func(s *Step) { s.maxTokens = n } }

// WithTimeLimit bounds the wall time of one Run; 0 means no limit. When it
// passes, the turn in flight is cancelled and Run returns a *LimitError.
func WithTimeLimit(d time.Duration) Option { return func(s *Step) { s.timeLimit = d } }

// New returns a Step.
func New(opts ...Option) *Step {
	s := &Step{}
	for _, o := range opts {
		o(s)
	}
	if s.concurrency < 1 {
		s.concurrency = DefaultConcurrency
	}
	return s
}

func (s *Step) log() *slog.Logger {
	if s.logger != nil {
		return s.logger
	}
	return slog.Default()
}

// Flush blocks until every observer has received every event posted so far,
// or ctx ends.
func (s *Step) Flush(ctx context.Context) error {
	for _, m := range s.observers {
		if err := m.wait(ctx); err != nil {
			return err
		}
	}
	return nil
}

func (s *Step) notify(ctx context.Context, ev Event) {
	for _, m := range s.observers {
		m.post(ctx, ev)
	}
}

// turnOutcome is what Run needs to know about a finished turn.
type turnOutcome struct {
	calls int
	usage artifact.Usage
}

// Turn runs one turn on st with prov and returns st. opts are resolved after
// the Step's own invoke options.
func (s *Step) Turn(ctx context.Context, st ledger.State, prov provider.Provider, opts ...provider.InvokeOption) (ledger.State, error) {
	_, err := s.turn(ctx, st, prov, opts)
	return st, err
}

func (s *Step) turn(ctx context.Context, st ledger.State, prov provider.Provider, opts []provider.InvokeOption) (out turnOutcome, err error) {
	if s.tracer != nil {
		var span trace.Span
		ctx, span = s.tracer.Start(ctx, "lode.turn", trace.WithAttributes(
			attribute.String("gen_ai.conversation.id", st.ID()),
		))
		defer func() {
			if err != nil {
				span.RecordError(err)
				span.SetStatus(codes.Error, err.Error())
				span.SetAttributes(attribute.String("error.type", fmt.Sprintf("%T", err)))
			}
			span.SetAttributes(attribute.Int("lode.tool_calls", out.calls))
			span.End()
		}()
	}
	defer func() {
		if err != nil {
			err = wrapCause(ctx, err)
			s.notify(ctx, ErrorEvent{Err: err})
		}
	}()

	if err := ctx.Err(); err != nil {
		return out, &ProviderError{Err: err}
	}
	turns, err := repairDangling(st)
	if err != nil {
		return out, err
	}

	req := &provider.Request{Turns: turns}
	if err := provider.Resolve(ctx, st, req, s.invokeOpts...); err != nil {
		return out, &ProviderError{Err: fmt.Errorf("invoke option: %w", err)}
	}
	if err := provider.Resolve(ctx, st, req, opts...); err != nil {
		return out, &ProviderError{Err: fmt.Errorf("invoke option: %w", err)}
	}

	var arts []artifact.Artifact
	for a, serr := range prov.Invoke(ctx, req) {
		if serr != nil {
			return out, &ProviderError{Err: serr, Partial: arts}
		}
		if a == nil {
			continue
		}
		if d, ok := a.(artifact.Delta); ok {
			if len(s.observers) > 0 {
				s.notify(ctx, DeltaEvent{Delta: d})
			}
			continue
		}
		arts = append(arts, a)
	}
	// A provider that ends its stream on cancellation without saying so must
	// not have its truncated answer taken for a whole one.
	if err := ctx.Err(); err != nil {
		return out, &ProviderError{Err: err, Partial: arts}
	}

	for _, a := range arts {
		switch a := a.(type) {
		case artifact.ToolCall:
			out.calls++
		case artifact.Usage:
			out.usage.InputTokens += a.InputTokens
			out.usage.OutputTokens += a.OutputTokens
		}
	}
	if err := st.Append(ledger.RoleAssistant, arts...); err != nil {
		return out, &LedgerError{Err: err}
	}
	if len(s.observers) > 0 {
		s.notify(ctx, TurnCompleteEvent{Role: ledger.RoleAssistant, Artifacts: arts})
	}
	if len(s.handlers) == 0 {
		return out, nil
	}
	hctx := context.WithValue(ctx, turnKey{}, &TurnInfo{State: st, Request: req, Answer: arts})
	if err := s.handle(hctx, st, arts); err != nil {
		return out, err
	}
	if err := ctx.Err(); err != nil {
		return out, &ProviderError{Err: err}
	}
	return out, nil
}

// TurnInfo describes the turn a handler is called in.
type TurnInfo struct {
	// State is the thread the turn runs on.
	State ledger.State
	// Request is what the provider was sent, after every option: its Tools
	// are exactly the tools this turn offered the model.
	Request *provider.Request
	// Answer is the assistant turn being handled.
	Answer []artifact.Artifact
}

type turnKey struct{}

// CurrentTurn returns the turn a handler is running in. Handlers use it to
// refuse calls to tools the turn did not offer.
func CurrentTurn(ctx context.Context) (*TurnInfo, bool) {
	t, ok := ctx.Value(turnKey{}).(*TurnInfo)
	return t, ok
}

// collector gathers what handlers emit for one artifact and forwards every
// event to the observers.
type collector struct {
	step  *Step
	mu    sync.Mutex
	turns []TurnCompleteEvent
}

func (c *collector) Emit(ctx context.Context, ev Event) {
	if tc, ok := ev.(TurnCompleteEvent); ok {
		c.mu.Lock()
		c.turns = append(c.turns, tc)
		c.mu.Unlock()
	}
	c.step.notify(ctx, ev)
}

func (s *Step) handle(ctx context.Context, st ledger.State, arts []artifact.Artifact) error {
	cols := make([]collector, len(arts))
	errs := make([]error, len(arts))
	for i := range cols {
		cols[i].step = s
	}
	// Tool calls are what takes time; everything else is handled inline.
	calls := 0
	for i, a := range arts {
		if _, ok := a.(artifact.ToolCall); ok {
			calls++
			continue
		}
		errs[i] = s.handleOne(ctx, a, &cols[i])
	}
	if calls == 1 || (calls > 1 && s.concurrency == 1) {
		for i, a := range arts {
			if _, ok := a.(artifact.ToolCall); ok {
				errs[i] = s.handleOne(ctx, a, &cols[i])
			}
		}
	} else if calls > 1 {
		sem := make(chan struct{}, s.concurrency)
		var wg sync.WaitGroup
		for i, a := range arts {
			if _, ok := a.(artifact.ToolCall); !ok {
				continue
			}
			sem <- struct{}{}
			wg.Add(1)
			go func() {
				defer func() { <-sem; wg.Done() }()
				errs[i] = s.handleOne(ctx, a, &cols[i])
			}()
		}
		wg.Wait()
	}

	// Append in artifact order, merging neighbouring events of one role into
	// one turn so that the results of one answer form one tool turn.
	var (
		role    ledger.Role
		pending []artifact.Artifact
		lerr    error
	)
	flush := func() {
		if len(pending) == 0 || lerr != nil {
			return
		}
		if err := st.Append(role, pending...); err != nil {
			lerr = &LedgerError{Err: err}
		}
		pending = nil
	}
	for i := range cols {
		for _, tc := range cols[i].turns {
			if tc.Role != role {
				flush()
				role = tc.Role
			}
			pending = append(pending, tc.Artifacts...)
		}
	}
	flush()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return lerr
}

func (s *Step) handleOne(ctx context.Context, a artifact.Artifact, e Emitter) error {
	for i, h := range s.handlers {
		if err := s.callHandler(ctx, i, h, a, e); err != nil {
			return err
		}
	}
	return nil
}

func (s *Step) callHandler(ctx context.Context, i int, h Handler, a artifact.Artifact, e Emitter) (err error) {
	defer func() {
		if v := recover(); v != nil {
			herr := &HandlerError{Handler: i, Artifact: a, Panic: v, Stack: debug.Stack()}
			herr.Err = fmt.Errorf("panic: %v", v)
			s.log().ErrorContext(ctx, "lode: handler panicked", "handler", i, "artifact", a.Kind(), "panic", v, "stack", string(herr.Stack))
			err = herr
		}
	}()
	if herr := h.Handle(ctx, a, e); herr != nil {
		return &HandlerError{Handler: i, Artifact: a, Err: herr}
	}
	return nil
}
