package loop

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/lodeworks/lode/artifact"
	"github.com/lodeworks/lode/capture"
	"github.com/lodeworks/lode/internal/runspan"
	"github.com/lodeworks/lode/ledger"
	"github.com/lodeworks/lode/provider"
)

// ErrPaused matches every *PendingError with errors.Is: the run stopped
// because tool calls wait for a person's decision, and Resume continues
// it. x/tool's ErrAwaitingApproval is another value: an Approver or a tool
// returns it to make one call wait, and the Handler turns it into an
// artifact.Pending record; a run never returns that one. They stay two
// values so that an error about one call never reads as a paused run.
var ErrPaused = errors.New("loop: tool calls wait for approval")

// ErrPending is ErrPaused.
//
// Deprecated: use ErrPaused, whose name says what it means.
var ErrPending = ErrPaused

// ErrNotPending: a decision names a call that is not waiting for one.
var ErrNotPending = errors.New("loop: no such pending call")

// PendingError reports that the run paused because tool calls wait for a
// person's approval. Every turn is stored, the pending calls as
// artifact.Pending records in the ledger; Resume continues the run, in this
// process or any other that opens the same store.
type PendingError struct {
	Thread string
	Calls  []artifact.Pending
}

func (e *PendingError) Error() string {
	var sb strings.Builder
	fmt.Fprintf(&sb, "loop: thread %s: %d tool call(s) wait for approval:", e.Thread, len(e.Calls))
	for i, c := range e.Calls {
		if i > 0 {
			sb.WriteByte(';')
		}
		fmt.Fprintf(&sb, " %s %s (%s)", c.Name, c.Arguments, c.ToolCallID)
		if c.Reason != "" {
			sb.WriteString(": " + c.Reason)
		}
	}
	return sb.String()
}

// Unwrap returns ErrPaused.
func (e *PendingError) Unwrap() error { return ErrPaused }

// DecisionError reports a decision Resume cannot apply; nothing was
// recorded and nothing ran. Err is ErrNotPending, ledger.ErrConflict (the
// call was decided by someone else) or why edited arguments are invalid.
type DecisionError struct {
	ToolCallID string
	Err        error
}

func (e *DecisionError) Error() string {
	return fmt.Sprintf("loop: decision on call %q: %s", e.ToolCallID, errText(e.Err))
}
func (e *DecisionError) Unwrap() error { return e.Err }

// PausedEvent reports that a turn stopped, or would not start, because the
// listed calls wait for approval.
type PausedEvent struct {
	Calls []artifact.Pending
}

// DecidedEvent reports the decisions Resume recorded (Decision.By says who
// decided), once they are in the ledger and before any approved call runs.
type DecidedEvent struct {
	Decisions []artifact.Decision
}

// EventName returns "paused".
func (PausedEvent) EventName() string { return "paused" }

// EventName returns "decided".
func (DecidedEvent) EventName() string { return "decided" }

// CallChecker is what Resume asks of a handler that runs tool calls, found
// by interface assertion (x/tool's Handler implements it).
type CallChecker interface {
	// CheckCall reports why call could not run as sent (an unknown tool,
	// arguments that break the schema), so that Resume refuses an edited
	// call before it claims anything.
	CheckCall(ctx context.Context, call artifact.ToolCall) error
	// Idempotent reports whether running call a second time is harmless.
	Idempotent(call artifact.ToolCall) bool
}

// Approve approves the pending call id as the model sent it.
func Approve(id string) artifact.Decision {
	return artifact.Decision{ToolCallID: id, Approved: true}
}

// ApproveWith approves the pending call id with arguments in place of the
// model's; they are validated against the tool's schema again.
func ApproveWith(id, arguments string) artifact.Decision {
	return artifact.Decision{ToolCallID: id, Approved: true, Arguments: arguments}
}

// Deny refuses the pending call id; the model reads reason.
func Deny(id, reason string) artifact.Decision {
	return artifact.Decision{ToolCallID: id, Reason: reason}
}

type approvedKey struct{}

// Approved returns the decision under which Resume is running a call, so
// that a handler runs it without asking again. A handler must check that
// the decision's ToolCallID is the call's.
func Approved(ctx context.Context) (artifact.Decision, bool) {
	d, ok := ctx.Value(approvedKey{}).(artifact.Decision)
	return d, ok
}

// tail is what the turns after the last assistant answer say about its
// calls. Pending records can only follow the last answer, since a thread
// with an undecided one takes no more turns, so reading the tail is enough
// and costs the same however long the thread is.
type tail struct {
	answer   []artifact.Artifact // the last assistant turn; nil if none
	pending  map[string]artifact.Pending
	decided  map[string]artifact.Decision
	answered map[string]bool
}

func readTail(turns []ledger.Turn) tail {
	var tl tail
	i := len(turns) - 1
	for ; i >= 0 && turns[i].Role != ledger.RoleAssistant; i-- {
	}
	if i < 0 {
		return tl
	}
	tl.answer = turns[i].Artifacts
	for _, t := range turns[i+1:] {
		if t.Role != ledger.RoleTool {
			continue
		}
		for _, a := range t.Artifacts {
			switch a := a.(type) {
			case artifact.Pending:
				if tl.pending == nil {
					tl.pending = make(map[string]artifact.Pending)
				}
				tl.pending[a.ToolCallID] = a
				// A call that pauses again while it runs approved (a tool
				// whose own work waits, see x/tool's PendingError) waits
				// for a new decision.
				delete(tl.decided, a.ToolCallID)
			case artifact.Decision:
				if tl.decided == nil {
					tl.decided = make(map[string]artifact.Decision)
				}
				tl.decided[a.ToolCallID] = a
			case artifact.ToolResult:
				if tl.answered == nil {
					tl.answered = make(map[string]bool)
				}
				tl.answered[a.ToolCallID] = true
			}
		}
	}
	return tl
}

// awaitsDecision reports whether turns end with a Pending record after their
// last assistant answer: only then can a call wait for a decision, and
// the common answer, no, costs a look at the tail and no maps.
func awaitsDecision(turns []ledger.Turn) bool {
	for i := len(turns) - 1; i >= 0 && turns[i].Role != ledger.RoleAssistant; i-- {
		if turns[i].Role != ledger.RoleTool {
			continue
		}
		for _, a := range turns[i].Artifacts {
			if _, ok := a.(artifact.Pending); ok {
				return true
			}
		}
	}
	return false
}

// undecided lists the calls that wait for a decision, in call order.
func (tl tail) undecided() []artifact.Pending {
	if len(tl.pending) == 0 {
		return nil
	}
	var out []artifact.Pending
	for _, a := range tl.answer {
		c, ok := a.(artifact.ToolCall)
		if !ok {
			continue
		}
		p, ok := tl.pending[c.ID]
		if !ok || tl.answered[c.ID] {
			continue
		}
		if _, ok := tl.decided[c.ID]; ok {
			continue
		}
		if !containsPending(out, c.ID) {
			out = append(out, p)
		}
	}
	return out
}

func containsPending(ps []artifact.Pending, id string) bool {
	for _, p := range ps {
		if p.ToolCallID == id {
			return true
		}
	}
	return false
}

// Pending returns the calls of st that wait for a decision, in call order.
func Pending(st ledger.State) []artifact.Pending {
	if st == nil {
		return nil
	}
	return readTail(st.Turns()).undecided()
}

// turns reads st's history, turning a panic into a *LedgerError.
func (s *Step) turns(ctx context.Context, st ledger.State) (turns []ledger.Turn, err error) {
	defer func() {
		if v := recover(); v != nil {
			turns, err = nil, s.ledgerPanic(ctx, v)
		}
	}()
	return st.Turns(), nil
}

// paused returns the calls of st that wait for a decision and reports them
// to the observers and the span in ctx.
func (s *Step) paused(ctx context.Context, st ledger.State) ([]artifact.Pending, error) {
	turns, err := s.turns(ctx, st)
	if err != nil {
		return nil, err
	}
	if !awaitsDecision(turns) {
		return nil, nil
	}
	calls := readTail(turns).undecided()
	if calls == nil {
		return nil, nil
	}
	if span := trace.SpanFromContext(ctx); span.IsRecording() {
		span.AddEvent("lode.paused", trace.WithAttributes(attribute.Int("lode.pending_calls", len(calls))))
	}
	s.notify(ctx, PausedEvent{Calls: calls})
	return calls, nil
}

// Resume records decisions on st's pending calls and continues the run:
// approved calls run (once), denied ones get an error result the model
// reads, and calls without a decision stay pending, in which case Resume
// returns a *PendingError without invoking the model. Otherwise it goes on
// as Run does, with prov and opts.
//
// On a ledger.StoredThread, Resume first takes the thread's lease (see
// WithLease), before it reads anything, and holds it, renewing it, until it
// returns. A resumer that meets another owner's live lease — a resumer
// still inside an approved call, a Run still going — records nothing, runs
// nothing and returns a *LedgerError wrapping a *ledger.LeaseError that
// names the holder and the expiry (errors.Is ledger.ErrLeased and
// ledger.ErrConflict). Only an expired lease is taken over.
//
// The decisions are then committed as one tool turn of artifact.Decision
// records before any approved call runs, appended only at the version the
// pending calls were read at, so of two resumers of one thread, in one
// process or two, one records its decisions and the other gets an error
// matching ledger.ErrConflict and runs nothing. Each resumer needs its own
// StoredThread (Load it).
//
// A call approved earlier whose result is missing, once its claimer's
// lease has expired (the process stopped while it ran), is not run again
// silently: it gets an error result saying it was interrupted and may have
// partly taken effect, unless a handler that is a CallChecker says it is
// idempotent, in which case it is claimed again and run again.
//
// A decision on a call that is not pending fails with a *DecisionError
// (ErrNotPending, or ledger.ErrConflict when it was already decided), as
// do edited arguments that a CallChecker handler refuses; nothing is
// recorded then.
func (s *Step) Resume(ctx context.Context, st ledger.State, prov provider.Provider, decisions []artifact.Decision, opts ...provider.InvokeOption) (_ ledger.State, err error) {
	if err := checkArgs(st, prov); err != nil {
		return st, err
	}
	if ctx, err = s.identity(ctx, st); err != nil {
		return st, err
	}
	if s.tracer != nil {
		var span trace.Span
		ctx, span = s.tracer.Start(ctx, "lode.resume", trace.WithAttributes(runspan.Attributes(ctx)...),
			trace.WithAttributes(attribute.Int("lode.decisions", len(decisions))))
		defer func() {
			if err != nil && !errors.Is(err, ErrPaused) {
				span.RecordError(err)
				span.SetStatus(codes.Error, err.Error())
			}
			span.End()
		}()
	}
	held, err := s.acquireLease(ctx, st)
	if err != nil {
		s.notify(ctx, ErrorEvent{Err: err})
		return st, err
	}
	run, err := s.claim(ctx, st, decisions)
	if err != nil {
		s.notify(ctx, ErrorEvent{Err: err})
		return st, held.end(ctx, err)
	}
	// Renewing starts after the claim: a renewal moves the version the
	// claim is appended at.
	ctx = held.start(ctx)
	defer func() { err = held.end(ctx, err) }()
	if len(run) > 0 {
		if err := s.runApproved(ctx, st, run); err != nil {
			s.notify(ctx, ErrorEvent{Err: err})
			return st, err
		}
	}
	calls, err := s.paused(ctx, st)
	if err != nil {
		return st, err
	}
	if calls != nil {
		return st, &PendingError{Thread: st.ID(), Calls: calls}
	}
	return s.run(ctx, st, prov, opts, false)
}

// approvedCall is a call Resume runs: where it stands in the answer, with
// the arguments to run it with, and the decision that lets it run.
type approvedCall struct {
	index    int
	call     artifact.ToolCall
	decision artifact.Decision
	answer   []artifact.Artifact
}

// versioned is a State that can append at a version: a ledger.StoredThread.
type versioned interface {
	Version() int64
	AppendAt(version int64, role ledger.Role, artifacts ...artifact.Artifact) error
}

// claim checks decisions against st and commits them, with the results of
// denied and interrupted calls, as one tool turn; it returns the calls to
// run.
func (s *Step) claim(ctx context.Context, st ledger.State, decisions []artifact.Decision) ([]approvedCall, error) {
	vs, isVersioned := st.(versioned)
	var version int64
	if isVersioned {
		version = vs.Version() // before the turns: a change in between is a conflict, never missed
	}
	turns, err := s.turns(ctx, st)
	if err != nil {
		return nil, err
	}
	tl := readTail(turns)
	open := make(map[string]artifact.Pending)
	for _, p := range tl.undecided() {
		open[p.ToolCallID] = p
	}
	given := make(map[string]artifact.Decision, len(decisions))
	for _, d := range decisions {
		if _, dup := given[d.ToolCallID]; dup {
			return nil, &DecisionError{ToolCallID: d.ToolCallID, Err: errors.New("decided twice in one Resume")}
		}
		p, ok := open[d.ToolCallID]
		if !ok {
			if _, was := tl.pending[d.ToolCallID]; was {
				return nil, &DecisionError{ToolCallID: d.ToolCallID, Err: fmt.Errorf("the call was already decided: %w", ledger.ErrConflict)}
			}
			return nil, &DecisionError{ToolCallID: d.ToolCallID, Err: ErrNotPending}
		}
		d.Name = p.Name
		if !d.Approved {
			d.Arguments = ""
		} else if d.Arguments != "" {
			call := artifact.ToolCall{ID: p.ToolCallID, Name: p.Name, Arguments: d.Arguments}
			if err := s.checkCall(ctx, call); err != nil {
				return nil, &DecisionError{ToolCallID: d.ToolCallID, Err: err}
			}
		}
		given[d.ToolCallID] = d
	}

	var (
		record []artifact.Artifact
		run    []approvedCall
		seen   = make(map[string]bool)
	)
	for i, a := range tl.answer {
		c, ok := a.(artifact.ToolCall)
		if !ok || seen[c.ID] {
			continue
		}
		seen[c.ID] = true
		if d, ok := given[c.ID]; ok {
			record = append(record, d)
			if !d.Approved {
				record = append(record, artifact.ToolResult{ToolCallID: c.ID, Name: c.Name, IsError: true, Content: deniedMessage(d)})
				continue
			}
			if d.Arguments != "" {
				c.Arguments = d.Arguments
			}
			run = append(run, approvedCall{index: i, call: c, decision: d, answer: tl.answer})
			continue
		}
		d, ok := tl.decided[c.ID]
		if !ok || !d.Approved || tl.answered[c.ID] {
			continue
		}
		// Approved before, never answered: the run that claimed it stopped.
		if d.Arguments != "" {
			c.Arguments = d.Arguments
		}
		if s.idempotent(c) {
			record = append(record, d) // claimed again, so that one resumer reruns it
			run = append(run, approvedCall{index: i, call: c, decision: d, answer: tl.answer})
			continue
		}
		record = append(record, artifact.ToolResult{ToolCallID: c.ID, Name: c.Name, IsError: true, Content: InterruptedMessage})
	}
	if len(record) == 0 {
		return nil, nil
	}
	if isVersioned {
		err = vs.AppendAt(version, ledger.RoleTool, record...)
	} else {
		err = st.Append(ledger.RoleTool, record...)
	}
	if err != nil {
		return nil, &LedgerError{Err: err}
	}
	var recorded []artifact.Decision
	for _, a := range record {
		if d, ok := a.(artifact.Decision); ok {
			recorded = append(recorded, d)
		}
	}
	if len(recorded) > 0 {
		if span := trace.SpanFromContext(ctx); span.IsRecording() {
			for _, d := range recorded {
				span.AddEvent("lode.decision", trace.WithAttributes(
					attribute.String("gen_ai.tool.call.id", d.ToolCallID),
					attribute.String("gen_ai.tool.name", d.Name),
					attribute.Bool("lode.approved", d.Approved),
					attribute.Bool("lode.arguments_edited", d.Arguments != ""),
					attribute.String("lode.decided_by", d.By),
					attribute.String("lode.reason", d.Reason),
				))
			}
		}
		s.notify(ctx, DecidedEvent{Decisions: recorded})
	}
	return run, nil
}

func deniedMessage(d artifact.Decision) string {
	msg := fmt.Sprintf("the call to %s was denied by the person approving tool calls; it did not run", d.Name)
	if d.Reason != "" {
		msg += ". Their reason: " + d.Reason
	}
	return msg
}

// checkCall asks every CallChecker handler whether call can run.
func (s *Step) checkCall(ctx context.Context, call artifact.ToolCall) (err error) {
	defer func() {
		if v := recover(); v != nil {
			err = panicError(v)
		}
	}()
	for _, h := range s.handlers {
		if c, ok := h.(CallChecker); ok {
			if err := c.CheckCall(ctx, call); err != nil {
				return err
			}
		}
	}
	return nil
}

// idempotent reports whether a CallChecker handler says call may run again.
func (s *Step) idempotent(call artifact.ToolCall) (ok bool) {
	defer func() {
		if recover() != nil {
			ok = false
		}
	}()
	for _, h := range s.handlers {
		if c, isChecker := h.(CallChecker); isChecker && c.Idempotent(call) {
			return true
		}
	}
	return false
}

// runApproved hands each approved call to the handlers, as the turn that
// made it would have, and appends what they emit as one tool turn.
func (s *Step) runApproved(ctx context.Context, st ledger.State, run []approvedCall) error {
	hctx := context.WithValue(ctx, turnKey{}, &TurnInfo{State: st, Answer: run[0].answer})
	if s.capture.On {
		hctx = capture.With(hctx, s.capture)
	}
	var trip *tripped
	if s.g != nil && len(s.g.result) > 0 {
		trip = &tripped{}
	}
	cols := make([]collector, len(run))
	for i, r := range run {
		cols[i].step, cols[i].st, cols[i].call, cols[i].trip = s, st, r.call, trip
		if te := trip.get(); te != nil {
			cols[i].turns = []TurnCompleteEvent{{Role: ledger.RoleTool, Artifacts: []artifact.Artifact{notRun(r.call, te)}}}
			continue
		}
		cctx := WithApproval(hctx, r.decision)
		if err := s.handleCall(cctx, r.index, r.call, &cols[i], trip); err != nil {
			return err
		}
	}
	var arts []artifact.Artifact
	for i := range cols {
		turns, herr := cols[i].seal()
		if herr != nil {
			herr.Artifact = run[i].call
			return herr
		}
		for _, tc := range turns {
			if tc.Role != ledger.RoleTool {
				return &HandlerError{Artifact: run[i].call, Err: fmt.Errorf("emitted a %s turn for an approved call; only tool turns are kept", tc.Role)}
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

// WithApproval marks ctx with a decision, as Resume does for each approved
// call it hands to the handlers; for handlers' own tests and for callers
// that run approved calls outside a loop.
func WithApproval(ctx context.Context, d artifact.Decision) context.Context {
	return context.WithValue(ctx, approvedKey{}, d)
}
