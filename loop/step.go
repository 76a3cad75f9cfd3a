package loop

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/lodeworks/lode/artifact"
	"github.com/lodeworks/lode/capture"
	"github.com/lodeworks/lode/internal/runspan"
	"github.com/lodeworks/lode/ledger"
	"github.com/lodeworks/lode/provider"
)

// Handler acts on the artifacts of an assistant turn. It is called once per
// artifact, possibly concurrently for different artifacts of one turn, and
// reports what it produced through the Emitter before it returns: an event
// emitted after Handle has returned is dropped (and logged). A
// TurnCompleteEvent it emits is appended to the ledger; one with an invalid
// role ends the turn with a *HandlerError. Returning an error ends the turn
// with a *HandlerError too; a tool failure a model should read is not such
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
	observerBuf observerBuffer
	concurrency int
	maxTurns    int
	maxTokens   int64
	timeLimit   time.Duration
	lease       leaseConfig
	pricer      Pricer
	maxCost     float64
	meters      *meters
	// admitters are WithAdmitters', then the invoke options that are
	// Admitters, in order; estimator is WithEstimator's.
	admitters []Admitter
	estimator Estimator
	// approvalExpiry is how long Recover lets a call wait for approval;
	// 0: for ever.
	approvalExpiry time.Duration
	// recoverBy is WithRecoverBy's.
	recoverBy string
	// guards are WithGuards', g the same by checkpoint; window is
	// WithOutputWindow's.
	guards []Guard
	g      *guards
	window int
	// capture is WithCapture's.
	capture capture.Config
}

// Option configures a Step.
type Option func(*Step)

// WithHandlers appends handlers; each artifact goes to each, in this order.
// Nil handlers are skipped.
func WithHandlers(h ...Handler) Option {
	return func(s *Step) {
		for _, x := range h {
			if x != nil {
				s.handlers = append(s.handlers, x)
			}
		}
	}
}

// WithInvokeOptions appends options resolved on every invocation, before
// the options given to Turn or Run.
func WithInvokeOptions(o ...provider.InvokeOption) Option {
	return func(s *Step) { s.invokeOpts = append(s.invokeOpts, o...) }
}

// WithTracer records a span per turn and per run. Without one, tracing costs
// nothing.
//
// Whatever the tracer, a run's context says whose run it is, and every
// lode span started in it (these, an adapter's chat spans, x/tool's
// execute_tool, a fallback attempt, a child agent's run) carries
// gen_ai.conversation.id (the thread) and session.id (the outermost run's
// thread) and, from the thread metadata a door writes (x/auth), user.id,
// user.roles and lode.tenant. See WithRunIdentity and SpanAttributes.
func WithTracer(t trace.Tracer) Option { return func(s *Step) { s.tracer = t } }

// WithLogger sets where handler panics and dropped observer panics are
// logged; nil means slog.Default at the time of the panic.
func WithLogger(l *slog.Logger) Option { return func(s *Step) { s.logger = l } }

// WithObserver adds an observer that receives every event asynchronously,
// in order, on its own goroutine. Its queue is bounded (WithObserverBuffer):
// a turn posting to a full queue waits, so a slow observer slows the model's
// stream rather than growing memory. A nil observer is skipped.
func WithObserver(e Emitter) Option {
	return func(s *Step) {
		if e != nil {
			s.observers = append(s.observers, newMailbox(e, s))
		}
	}
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
	for _, o := range s.invokeOpts {
		if a, ok := o.(Admitter); ok {
			s.admitters = append(s.admitters, a)
		}
	}
	s.g = newGuards(s.guards)
	return s
}

func (s *Step) log() *slog.Logger {
	if s.logger != nil {
		return s.logger
	}
	return slog.Default()
}

// Flush blocks until every observer has received every event posted so far,
// or ctx ends. An observer that calls it with the ctx it was given does not
// wait for itself.
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
	// paused says that the server paused the answer, to be carried on by
	// another turn (artifact.FinishPauseTurn).
	paused bool
	usage  artifact.Usage
	cost   float64 // US dollars, of the priced usage
	// unpriced names a model that reported usage the Pricer had no
	// price for.
	unpriced string
	// pending lists the calls that wait for approval: the turn stopped, or
	// never started, for them.
	pending []artifact.Pending
}

// Turn runs one turn on st with prov and returns st. opts are resolved after
// the Step's own invoke options. On a ledger.StoredThread it holds the
// thread's lease for the turn, as Run does.
func (s *Step) Turn(ctx context.Context, st ledger.State, prov provider.Provider, opts ...provider.InvokeOption) (_ ledger.State, err error) {
	if err := checkArgs(st, prov); err != nil {
		return st, err
	}
	held, err := s.acquireLease(ctx, st)
	if err != nil {
		s.notify(ctx, ErrorEvent{Err: err})
		return st, err
	}
	ctx = held.start(ctx)
	defer func() { err = held.end(ctx, err) }()
	out, err := s.turn(ctx, st, prov, opts)
	if err == nil && out.pending != nil {
		err = &PendingError{Thread: st.ID(), Calls: out.pending}
	}
	return st, err
}

// checkArgs turns a missing ledger or provider into an error rather than a
// panic deep in a turn.
func checkArgs(st ledger.State, prov provider.Provider) error {
	if st == nil {
		return &LedgerError{Err: errors.New("no ledger.State given")}
	}
	if prov == nil {
		return &ProviderError{Err: errors.New("no provider given")}
	}
	return nil
}

func (s *Step) turn(ctx context.Context, st ledger.State, prov provider.Provider, opts []provider.InvokeOption) (out turnOutcome, err error) {
	ctx, err = s.identity(ctx, st)
	if err != nil {
		s.notify(ctx, ErrorEvent{Err: err})
		return out, err
	}
	if s.tracer != nil {
		var span trace.Span
		ctx, span = s.tracer.Start(ctx, "lode.turn", trace.WithAttributes(runspan.Attributes(ctx)...))
		defer func() {
			if err != nil {
				span.RecordError(err)
				span.SetStatus(codes.Error, err.Error())
				span.SetAttributes(attribute.String("error.type", fmt.Sprintf("%T", err)))
			}
			span.SetAttributes(attribute.Int("lode.tool_calls", out.calls))
			if out.cost != 0 {
				span.SetAttributes(attribute.Float64("lode.cost_usd", out.cost))
			}
			span.End()
		}()
	}
	defer func() {
		if err != nil {
			err = wrapCause(ctx, err)
			s.notify(ctx, ErrorEvent{Err: err})
		}
	}()
	ctx, charged := s.charging(ctx)
	if charged != nil {
		defer charged.addTo(&out)
	}

	if err := ctx.Err(); err != nil {
		return out, &ProviderError{Err: err}
	}
	// A call waiting for approval has no result yet, and must not get one
	// from repair: the thread takes no turn until Resume decides.
	if out.pending, err = s.paused(ctx, st); err != nil || out.pending != nil {
		return out, err
	}
	turns, err := s.repair(ctx, st)
	if err != nil {
		return out, err
	}
	// A turn a guard stopped is not taken again: the thread waits for a
	// new message.
	if te, ok := StoppedBy(turns); ok {
		return out, te
	}
	if s.g != nil && len(s.g.input) > 0 {
		if text := unanswered(turns); text != "" {
			if te, _ := s.check(ctx, s.g.input, Check{At: artifact.AtInput, State: st, Text: text}); te != nil {
				return out, s.storeTrip(ctx, st, ledger.RoleAssistant, []artifact.Artifact{te.Tripwire()}, te)
			}
		}
	}
	if _, ok := st.Metadata(TrippedKey); ok {
		turns = withoutTripped(turns)
	}

	req := &provider.Request{Turns: turns}
	if err := s.resolve(ctx, st, req, opts); err != nil {
		return out, err
	}
	// Admission comes after every option, so that what a limit counts is
	// what will be sent.
	adm, err := s.admit(ctx, st, prov, req, callAdmitters(opts))
	if err != nil {
		return out, err
	}

	ctx, hold := s.capturing(ctx)
	if hold != nil {
		// Whatever ends the turn early, the chat spans end without output.
		defer hold.Release(false)
	}
	hb := s.newHoldBack(st)
	arts, err := s.stream(ctx, st, prov, req, hb)
	// A provider that ends its stream on cancellation without saying so must
	// not have its truncated answer taken for a whole one.
	if cerr := ctx.Err(); err == nil && cerr != nil {
		err = &ProviderError{Err: cerr, Partial: arts, Started: true}
	}
	if te, ok := err.(*TripError); ok {
		// Stopped while it streamed: what came is billed, not kept.
		adm.settle(ctx, arts, nil)
		return out, s.storeTrip(ctx, st, ledger.RoleAssistant, append([]artifact.Artifact{te.Tripwire()}, kept(arts)...), te)
	}
	if err != nil {
		adm.settle(ctx, arts, err)
		return out, err
	}

	out.cost, out.unpriced = s.price(ctx, prov, arts)
	adm.settle(ctx, arts, nil)
	if s.meters != nil {
		s.meters.record(ctx, prov, arts)
	}
	if s.g != nil && len(s.g.output) > 0 {
		if te, _ := s.check(ctx, s.g.output, Check{At: artifact.AtOutput, State: st, Text: answerText(arts)}); te != nil {
			return out, s.storeTrip(ctx, st, ledger.RoleAssistant, append([]artifact.Artifact{te.Tripwire()}, kept(arts)...), te)
		}
	}
	hb.flush(ctx)
	if hold != nil {
		hold.Release(true)
		if len(s.observers) > 0 {
			s.notify(ctx, contentEvent(ctx, req, arts))
		}
	}
	for _, a := range arts {
		switch a := a.(type) {
		case artifact.ToolCall:
			out.calls++
		case artifact.Finish:
			out.paused = a.Reason == artifact.FinishPauseTurn
		case artifact.Usage:
			out.usage.InputTokens += a.InputTokens
			out.usage.OutputTokens += a.OutputTokens
		}
	}
	if err := s.appendTurn(ctx, st, ledger.RoleAssistant, arts); err != nil {
		return out, err
	}
	if len(s.observers) > 0 {
		s.notify(ctx, TurnCompleteEvent{Role: ledger.RoleAssistant, Artifacts: arts})
	}
	if len(s.handlers) == 0 {
		return out, nil
	}
	lt := s.newLiveTurn(ctx, TurnInfo{State: st, Request: req, Answer: arts})
	herr := s.handle(lt, st, arts)
	lt.end()
	if herr != nil {
		return out, herr
	}
	if err := ctx.Err(); err != nil {
		return out, &ProviderError{Err: err}
	}
	if out.calls > 0 {
		out.pending, err = s.paused(ctx, st)
	}
	return out, err
}

// The State is the caller's code as much as a handler is: these wrappers
// turn its panics into a *LedgerError, so a broken store fails the turn
// rather than the program.

func (s *Step) ledgerPanic(ctx context.Context, v any) *LedgerError {
	lerr := &LedgerError{Err: panicError(v), Panic: v, Stack: debug.Stack()}
	s.log().ErrorContext(ctx, "lode: ledger panicked", "panic", v, "stack", string(lerr.Stack))
	return lerr
}

// identity returns ctx carrying whose run of st this is (its thread, and
// the caller a door wrote in its metadata), so that every span started
// inside the run says it, whatever package starts it: see
// internal/runspan. A run inside a run of the same thread keeps ctx's.
func (s *Step) identity(ctx context.Context, st ledger.State) (_ context.Context, err error) {
	defer func() {
		if v := recover(); v != nil {
			err = s.ledgerPanic(ctx, v)
		}
	}()
	return WithRunIdentity(ctx, st), nil
}

func (s *Step) repair(ctx context.Context, st ledger.State) (turns []ledger.Turn, err error) {
	defer func() {
		if v := recover(); v != nil {
			turns, err = nil, s.ledgerPanic(ctx, v)
		}
	}()
	return repairDangling(st)
}

func (s *Step) appendTurn(ctx context.Context, st ledger.State, role ledger.Role, arts []artifact.Artifact) (err error) {
	defer func() {
		if v := recover(); v != nil {
			err = s.ledgerPanic(ctx, v)
		}
	}()
	if err := st.Append(role, arts...); err != nil {
		return &LedgerError{Err: err}
	}
	return nil
}

// callAdmitters are the options given to Turn or Run that are Admitters.
func callAdmitters(opts []provider.InvokeOption) []Admitter {
	var out []Admitter
	for _, o := range opts {
		if a, ok := o.(Admitter); ok {
			out = append(out, a)
		}
	}
	return out
}

// resolve applies the Step's invoke options, then opts, to req. An option
// that fails or panics stops the turn with an *OptionError before the
// provider is called: a bug in a tool filter fails one turn, never the
// program.
func (s *Step) resolve(ctx context.Context, st ledger.State, req *provider.Request, opts []provider.InvokeOption) error {
	for i, o := range s.invokeOpts {
		if err := s.applyOption(ctx, i, o, st, req); err != nil {
			return err
		}
	}
	for i, o := range opts {
		if err := s.applyOption(ctx, len(s.invokeOpts)+i, o, st, req); err != nil {
			return err
		}
	}
	return nil
}

func (s *Step) applyOption(ctx context.Context, i int, o provider.InvokeOption, st ledger.State, req *provider.Request) (err error) {
	if o == nil {
		return nil
	}
	defer func() {
		if v := recover(); v != nil {
			oerr := &OptionError{Index: i, Err: panicError(v), Panic: v, Stack: debug.Stack()}
			s.log().ErrorContext(ctx, "lode: invoke option panicked", "option", i, "panic", v, "stack", string(oerr.Stack))
			err = oerr
		}
	}()
	if oerr := o.ApplyInvoke(ctx, st, req); oerr != nil {
		return &OptionError{Index: i, Err: oerr}
	}
	return nil
}

// stream collects the whole artifacts of one invocation and passes deltas
// to the observers. A provider that panics fails the turn like one that
// returns an error, and one that goes on yielding after it was told to stop
// is not listened to: neither takes the program down. With observers, the
// provider's context lets it post to them with Notify (a fallback reporting
// its attempts) until its stream ends; without, it is ctx itself, so the
// turn costs nothing more.
func (s *Step) stream(ctx context.Context, st ledger.State, prov provider.Provider, req *provider.Request, hb *holdBack) (arts []artifact.Artifact, err error) {
	pctx := ctx
	if len(s.observers) > 0 {
		lt := s.newLiveTurn(ctx, TurnInfo{State: st, Request: req})
		pctx = lt
		defer lt.end()
	}
	in := &intake{s: s, ctx: ctx, hb: hb}
	defer func() {
		in.stopped.Store(true)
		if v := recover(); v != nil {
			s.log().ErrorContext(ctx, "lode: provider panicked", "panic", v, "stack", string(debug.Stack()))
			arts, err = in.arts, &ProviderError{Err: panicError(v), Partial: in.arts, Started: in.started}
		}
	}()
	seq := prov.Invoke(pctx, req)
	if seq == nil {
		return nil, &ProviderError{Err: errors.New("the provider returned no stream")}
	}
	seq(in.yield)
	return in.arts, in.err
}

// intake is what stream keeps of one invocation while the provider
// yields, in one allocation.
type intake struct {
	s       *Step
	ctx     context.Context
	hb      *holdBack
	arts    []artifact.Artifact
	err     error
	started bool
	// stopped is set once the stream may no longer add: a provider that
	// goes on yielding after it was told to stop, even from another
	// goroutine, is not listened to.
	stopped atomic.Bool
}

func (in *intake) yield(a artifact.Artifact, serr error) bool {
	if in.stopped.Load() {
		return false
	}
	if serr != nil {
		in.err = &ProviderError{Err: serr, Partial: in.arts, Started: in.started}
		in.stopped.Store(true)
		return false
	}
	if a = artifact.Normalize(a); a == nil {
		return true
	}
	in.started = true
	if d, ok := a.(artifact.Delta); ok {
		if in.hb != nil {
			if te := in.hb.add(in.ctx, d); te != nil {
				in.err = te
				in.stopped.Store(true)
				return false
			}
		} else if len(in.s.observers) > 0 {
			in.s.notify(in.ctx, DeltaEvent{Delta: d})
		}
		return true
	}
	in.arts = append(in.arts, a)
	return true
}
