package loop

import (
	"context"
	"errors"
	"fmt"
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

// RecoverPoint says where Recover found a run that stopped.
type RecoverPoint string

// The points a stopped run is continued from.
const (
	// RecoverTurn: the model's answer never landed (the run stopped while
	// the model streamed, or between a tool result and the next turn); the
	// model is asked again.
	RecoverTurn RecoverPoint = "turn"
	// RecoverCalls: tool calls had started and had no result; each gets
	// InterruptedMessage, or runs again when its tool is idempotent.
	RecoverCalls RecoverPoint = "calls"
	// RecoverApproval: calls waited for approval longer than
	// WithApprovalExpiry allows; each is denied with ApprovalExpiredReason
	// and the run goes on.
	RecoverApproval RecoverPoint = "approval"
	// RecoverPending: calls wait for approval; they stay pending and
	// nothing runs.
	RecoverPending RecoverPoint = "pending"
	// RecoverDone: the run had finished (or never had a turn to take) and
	// only its lease was left; the lease is released and no model is
	// asked.
	RecoverDone RecoverPoint = "done"
)

// ApprovalExpiredReason is the reason of the denial Recover records for a
// call that waited for approval longer than WithApprovalExpiry allows; the
// model reads it.
const ApprovalExpiredReason = "no one decided within the time allowed for approvals"

// defaultRecoverBy is Decision.By on Recover's denials when WithRecoverBy
// names no one.
const defaultRecoverBy = "recover"

// RecoverBy is what lode's commands give WithRecoverBy.
//
// Deprecated: Decision.By on the denials Recover records is
// WithRecoverBy's name, "recover" when none is given; the command that
// recovers names itself.
const RecoverBy = "lode recover"

// Recovery reports one thread that Recover continued.
type Recovery struct {
	Thread string
	From   RecoverPoint
	// Turn is how many turns the thread held when it was recovered: the
	// index of the first turn the continued run wrote.
	Turn int
	// Calls are the IDs of the calls the recovery answered: interrupted,
	// run again, or denied for want of a decision.
	Calls []string
	// Rerun are those of Calls that ran again because their tool is
	// idempotent.
	Rerun []string
	// Owner is the lease owner that continued the run; PreviousOwner the
	// one whose lease had expired ("" for a paused thread with no lease).
	Owner, PreviousOwner string
	// Err is how the continued run ended: nil, a *PendingError when calls
	// wait for approval, or the error that stopped it.
	Err error
}

// RecoveredEvent reports, before the run goes on, that Recover took over a
// stopped run. Its Err is always nil.
type RecoveredEvent struct {
	Recovery
}

// EventName returns "recovered".
func (RecoveredEvent) EventName() string { return "recovered" }

// WithApprovalExpiry lets Recover deny, with ApprovalExpiredReason, a call
// that has waited for approval for longer than d (measured from the tool
// turn that paused it, by WithClock's clock), and continue the run. 0 or
// negative means pending calls wait for as long as it takes.
func WithApprovalExpiry(d time.Duration) Option {
	return func(s *Step) { s.approvalExpiry = d }
}

// WithRecoverBy names who denies, for the record (artifact.Decision.By),
// the calls Recover denies because they waited past WithApprovalExpiry:
// the program or command that recovers. "" means "recover".
func WithRecoverBy(by string) Option {
	return func(s *Step) { s.recoverBy = by }
}

// Recover finds the threads of store whose run stopped without finishing
// — their lease expired without being released: the process holding it
// died — and continues each, as Resume does with no decisions, one after
// the other. It returns what it did to each, in thread order; a thread
// whose lease is live, or that another recoverer took first, is left
// alone and not reported.
//
// Each thread is continued under a new lease (see WithLease), taken with
// the store's compare-and-swap: of two recoverers, in one process or many,
// exactly one continues a thread, and the other skips it. Where the run
// stopped decides what comes next (RecoverPoint):
//
//   - a tool call that started and has no result gets an error result,
//     InterruptedMessage, unless a CallChecker handler says it is
//     idempotent (tool.Hints.Idempotent), in which case it runs again; so
//     does a call approved earlier whose result is missing;
//   - a model answer that never landed is asked for again;
//   - calls waiting for approval stay pending, unless WithApprovalExpiry
//     is set and they waited longer: then each is denied with
//     ApprovalExpiredReason, which the model reads, and the run goes on.
//     With an expiry set, Recover also visits threads with no lease that
//     were last changed before the expiry, to find such calls;
//   - a run that had finished has only its lease released.
//
// A run cancelled by ctx keeps its lease until it expires, so that a
// recoverer stopped mid-run (lode worker on SIGTERM) hands the thread to
// the next one rather than leaving it half done.
//
// Observers get a RecoveredEvent before the run goes on, and with a tracer
// a "lode.recover" span carries lode.recovered.from, lode.recovered.turn,
// lode.recovered.calls, lode.lease.owner and lode.lease.previous_owner,
// the continued run's spans inside it. Recover's own error reports threads
// it could not list or read, joined; how each continued run ended is in
// its Recovery.Err.
func (s *Step) Recover(ctx context.Context, store ledger.Store, prov provider.Provider, opts ...provider.InvokeOption) ([]Recovery, error) {
	if store == nil {
		return nil, &LedgerError{Err: errors.New("no ledger.Store given")}
	}
	if prov == nil {
		return nil, &ProviderError{Err: errors.New("no provider given")}
	}
	var ids []string
	var errs []error
	now := s.now()
	for info, err := range store.List(ctx) {
		if err != nil {
			if info.ID == "" {
				// The listing itself failed: nothing more comes.
				errs = append(errs, err)
				break
			}
			errs = append(errs, fmt.Errorf("loop: recover thread %s: %w", info.ID, err))
			continue
		}
		if s.recoverable(info, now) {
			ids = append(ids, info.ID)
		}
	}
	var out []Recovery
	for _, id := range ids {
		if err := ctx.Err(); err != nil {
			errs = append(errs, err)
			break
		}
		rec, ok, err := s.recoverOne(ctx, store, id, prov, opts)
		if err != nil {
			errs = append(errs, err)
		}
		if ok {
			out = append(out, rec)
		}
	}
	return out, errors.Join(errs...)
}

// recoverable says from a listing whether a thread may need recovering:
// its lease expired unreleased, or, with an approval expiry, it has no
// lease and was last changed long enough ago for a call to have waited
// too long.
func (s *Step) recoverable(info ledger.ThreadInfo, now time.Time) bool {
	v := info.Metadata[ledger.LeaseKey]
	if v != "" {
		l, err := ledger.ParseLease(v)
		if err != nil {
			return true // Load reports the damage
		}
		return !l.Live(now)
	}
	return s.approvalExpiry > 0 && !info.Updated.IsZero() && now.Sub(info.Updated) >= s.approvalExpiry
}

// recoverOne continues thread id when it still needs it; ok says it did.
func (s *Step) recoverOne(ctx context.Context, store ledger.Store, id string, prov provider.Provider, opts []provider.InvokeOption) (rec Recovery, ok bool, err error) {
	st, err := store.Load(ctx, id)
	if errors.Is(err, ledger.ErrNotFound) {
		return rec, false, nil // deleted since the listing
	}
	if err != nil {
		return rec, false, fmt.Errorf("loop: recover thread %s: %w", id, err)
	}
	defer st.Close()
	prev, err := st.Lease()
	if err != nil {
		return rec, false, fmt.Errorf("loop: recover thread %s: %w", id, err)
	}
	now := s.now()
	if prev.Live(now) {
		return rec, false, nil
	}
	if prev.Owner == "" && !s.expiredPending(st.Turns(), now) {
		// No lease: a finished or paused run, unless calls waited too long.
		return rec, false, nil
	}

	if ctx, err = s.identity(ctx, st); err != nil {
		return rec, false, fmt.Errorf("loop: recover thread %s: %w", id, err)
	}
	if s.tracer != nil {
		var span trace.Span
		ctx, span = s.tracer.Start(ctx, "lode.recover", trace.WithAttributes(runspan.Attributes(ctx)...),
			trace.WithAttributes(attribute.String("lode.lease.previous_owner", prev.Owner)))
		defer func() {
			span.SetAttributes(
				attribute.String("lode.recovered.from", string(rec.From)),
				attribute.Int("lode.recovered.turn", rec.Turn),
				attribute.StringSlice("lode.recovered.calls", rec.Calls),
				attribute.StringSlice("lode.recovered.rerun", rec.Rerun),
			)
			if rec.Err != nil && !errors.Is(rec.Err, ErrPaused) {
				span.RecordError(rec.Err)
				span.SetStatus(codes.Error, rec.Err.Error())
			}
			span.End()
		}()
	}
	held, err := s.acquireLease(ctx, st)
	if err != nil {
		if errors.Is(err, ledger.ErrConflict) {
			// Another recoverer (or a Resume) took the thread first.
			return rec, false, nil
		}
		return rec, false, fmt.Errorf("loop: recover thread %s: %w", id, err)
	}
	if held == nil {
		return rec, false, fmt.Errorf("loop: recover thread %s: leases are off (WithLease(-1)); Recover needs them to keep two recoverers off one thread", id)
	}
	rec = Recovery{Thread: id, Owner: held.owner, PreviousOwner: prev.Owner, Turn: st.Len()}
	rec.Err = s.continueRun(ctx, st, held, prov, opts, &rec)
	return rec, true, nil
}

// expiredPending reports whether a call of turns has waited for approval
// longer than the approval expiry.
func (s *Step) expiredPending(turns []ledger.Turn, now time.Time) bool {
	if s.approvalExpiry <= 0 {
		return false
	}
	return len(s.expired(turns, now)) > 0
}

// expired lists the undecided calls of turns paused for longer than the
// approval expiry.
func (s *Step) expired(turns []ledger.Turn, now time.Time) []artifact.Pending {
	if s.approvalExpiry <= 0 {
		return nil
	}
	since := pausedAt(turns)
	var out []artifact.Pending
	for _, p := range readTail(turns).undecided() {
		if t, ok := since[p.ToolCallID]; ok && !t.IsZero() && now.Sub(t) >= s.approvalExpiry {
			out = append(out, p)
		}
	}
	return out
}

// pausedAt maps each call of the last answer to the time of the latest
// tool turn that paused it.
func pausedAt(turns []ledger.Turn) map[string]time.Time {
	at := make(map[string]time.Time)
	for i := len(turns) - 1; i >= 0 && turns[i].Role != ledger.RoleAssistant; i-- {
		for _, a := range turns[i].Artifacts {
			if p, ok := a.(artifact.Pending); ok {
				if _, seen := at[p.ToolCallID]; !seen {
					at[p.ToolCallID] = turns[i].Time
				}
			}
		}
	}
	return at
}

// continueRun goes on with st from where it stopped, under held, and
// releases held when it returns.
func (s *Step) continueRun(ctx context.Context, st *ledger.StoredThread, held *heldLease, prov provider.Provider, opts []provider.InvokeOption, rec *Recovery) (err error) {
	turns := st.Turns()
	tl := readTail(turns)
	var denials []artifact.Decision
	for _, p := range s.expired(turns, s.now()) {
		d := Deny(p.ToolCallID, ApprovalExpiredReason)
		d.By = s.recoverBy
		if d.By == "" {
			d.By = defaultRecoverBy
		}
		denials = append(denials, d)
		rec.Calls = append(rec.Calls, p.ToolCallID)
	}
	started := startedCalls(tl)
	approvedOpen := approvedUnanswered(tl)
	switch {
	case len(started) > 0 || len(approvedOpen) > 0:
		rec.From = RecoverCalls
	case len(denials) > 0:
		rec.From = RecoverApproval
	case len(tl.undecided()) > 0:
		rec.From = RecoverPending
	case len(turns) == 0 || turns[len(turns)-1].Role == ledger.RoleAssistant && !hasCalls(tl.answer):
		rec.From = RecoverDone
	default:
		rec.From = RecoverTurn
	}
	for _, c := range approvedOpen {
		rec.Calls = append(rec.Calls, c.ID)
		if s.idempotent(c) {
			rec.Rerun = append(rec.Rerun, c.ID)
		}
	}
	for _, c := range started {
		rec.Calls = append(rec.Calls, c.call.ID)
		if s.idempotent(c.call) {
			rec.Rerun = append(rec.Rerun, c.call.ID)
		}
	}
	if span := trace.SpanFromContext(ctx); span.IsRecording() {
		span.AddEvent("lode.recovered", trace.WithAttributes(
			attribute.String("lode.recovered.from", string(rec.From)),
			attribute.String("lode.lease.owner", rec.Owner),
		))
	}
	ev := *rec
	s.notify(ctx, RecoveredEvent{Recovery: ev})

	// The claim (denials, and approved calls with no result) is appended
	// at the version read before anything runs, as Resume's is, so
	// renewing starts after it.
	run, err := s.claim(ctx, st, denials)
	if err != nil {
		s.notify(ctx, ErrorEvent{Err: err})
		return held.end(ctx, err)
	}
	parent := ctx
	ctx = held.start(ctx)
	defer func() {
		if parent.Err() != nil {
			// The recoverer was stopped (a worker's signal): the lease is
			// left to expire, so that the next recoverer finishes the run.
			err = held.drop(ctx, err)
			return
		}
		err = held.end(ctx, err)
	}()
	if len(started) > 0 {
		if err := s.answerStarted(ctx, st, tl.answer, started); err != nil {
			s.notify(ctx, ErrorEvent{Err: err})
			return err
		}
	}
	if len(run) > 0 {
		if err := s.runApproved(ctx, st, run); err != nil {
			s.notify(ctx, ErrorEvent{Err: err})
			return err
		}
	}
	calls, err := s.paused(ctx, st)
	if err != nil {
		return err
	}
	if calls != nil {
		return &PendingError{Thread: st.ID(), Calls: calls}
	}
	if rec.From == RecoverDone {
		return nil
	}
	_, err = s.run(ctx, st, prov, opts, false)
	return err
}

func hasCalls(arts []artifact.Artifact) bool {
	for _, a := range arts {
		if _, ok := a.(artifact.ToolCall); ok {
			return true
		}
	}
	return false
}

// startedCall is a call of the last answer that has neither a result nor
// a pending record: its handler was running when the run stopped.
type startedCall struct {
	index int
	call  artifact.ToolCall
}

func startedCalls(tl tail) []startedCall {
	var out []startedCall
	seen := make(map[string]bool)
	for i, a := range tl.answer {
		c, ok := a.(artifact.ToolCall)
		if !ok || seen[c.ID] {
			continue
		}
		seen[c.ID] = true
		if tl.answered[c.ID] {
			continue
		}
		if _, ok := tl.pending[c.ID]; ok {
			continue
		}
		out = append(out, startedCall{index: i, call: c})
	}
	return out
}

// approvedUnanswered lists the calls approved earlier that have no result:
// the claim gives them one or runs them again.
func approvedUnanswered(tl tail) []artifact.ToolCall {
	var out []artifact.ToolCall
	for _, a := range tl.answer {
		c, ok := a.(artifact.ToolCall)
		if !ok || tl.answered[c.ID] {
			continue
		}
		if d, ok := tl.decided[c.ID]; ok && d.Approved {
			out = append(out, c)
		}
	}
	return out
}

// answerStarted gives each started call its result as one tool turn, in
// call order: an idempotent call runs again through the handlers (which
// may ask for approval again), any other gets InterruptedMessage. A call
// run again has its result judged by the result guards, as in a turn.
func (s *Step) answerStarted(ctx context.Context, st ledger.State, answer []artifact.Artifact, started []startedCall) error {
	hctx := context.WithValue(ctx, turnKey{}, &TurnInfo{State: st, Answer: answer})
	if s.capture.On {
		hctx = capture.With(hctx, s.capture)
	}
	var trip *tripped
	if s.g != nil && len(s.g.result) > 0 {
		trip = &tripped{}
	}
	var arts []artifact.Artifact
	for _, c := range started {
		if !s.idempotent(c.call) {
			arts = append(arts, artifact.ToolResult{ToolCallID: c.call.ID, Name: c.call.Name, IsError: true, Content: InterruptedMessage})
			continue
		}
		if te := trip.get(); te != nil {
			arts = append(arts, notRun(c.call, te))
			continue
		}
		col := collector{step: s, st: st, call: c.call, trip: trip}
		if err := s.handleCall(hctx, c.index, c.call, &col, trip); err != nil {
			return err
		}
		turns, herr := col.seal()
		if herr != nil {
			herr.Artifact = c.call
			return herr
		}
		for _, tc := range turns {
			if tc.Role != ledger.RoleTool {
				return &HandlerError{Artifact: c.call, Err: fmt.Errorf("emitted a %s turn for a call run again; only tool turns are kept", tc.Role)}
			}
			arts = append(arts, tc.Artifacts...)
		}
	}
	if len(arts) == 0 {
		return nil
	}
	if te := trip.get(); te != nil {
		if err := s.markTripped(ctx, st); err != nil {
			return err
		}
		if err := s.appendTurn(ctx, st, ledger.RoleTool, arts); err != nil {
			return err
		}
		return te
	}
	return s.appendTurn(ctx, st, ledger.RoleTool, arts)
}
