package loop

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/lodeworks/lode/artifact"
	"github.com/lodeworks/lode/ledger"
)

// Guard checks what flows through a turn at four checkpoints: the user's
// message before the model sees it (artifact.AtInput), a tool call's
// arguments before it runs (AtCall), a tool's result before the model
// reads it (AtResult) and the model's answer before a person sees it
// (AtOutput). x/guard builds them from Go functions, rules and a model's
// verdict.
//
// Check returns nil to let the content pass, a *TripError to stop the
// turn (its Guard and Reason are the guard's; the turn fills in the rest),
// or ErrHold for a partial answer it can only judge whole. Any other error
// is the guard failing, and stops the turn as a trip does: a guard that
// cannot decide fails closed. It must be safe for concurrent use: the
// results of one answer's calls are checked as each call ends.
type Guard interface {
	Name() string
	Check(ctx context.Context, c Check) error
}

// Checkpoints is implemented by a Guard that checks only some
// checkpoints; a Guard that does not is asked at all four.
type Checkpoints interface {
	Checks(at string) bool
}

// Check is what a Guard is asked about.
type Check struct {
	// At is the checkpoint: artifact.AtInput, AtCall, AtResult or AtOutput.
	At string
	// State is the thread.
	State ledger.State
	// Text is the user's message (AtInput: the texts of the user turns the
	// model has not answered, joined by blank lines) or the answer's text
	// (AtOutput).
	Text string
	// Partial says Text is the part of the answer streamed so far: what
	// the guard passes is shown to observers before the answer ends.
	Partial bool
	// Call is the call checked (AtCall), or the call whose result is
	// (AtResult).
	Call artifact.ToolCall
	// Result is the result checked (AtResult).
	Result artifact.ToolResult
}

// ErrTripped is what every *TripError matches with errors.Is.
var ErrTripped = errors.New("loop: a guard stopped the turn")

// ErrHold is what a Guard returns for a partial answer it cannot judge
// before the answer ends: the text is held back from observers until the
// whole answer has been checked.
var ErrHold = errors.New("loop: hold the answer until it ends")

// TripError reports that a guard stopped a turn. The turn stored an
// artifact.Tripwire where it stopped (the thread's last turn), and nothing
// ran after it: Run and Resume on the thread return the stored trip again
// until a new user message follows it.
type TripError struct {
	Guard  string
	At     string // artifact.AtInput, AtCall, AtResult or AtOutput
	Reason string
	// ToolCallID is the call stopped at AtCall or AtResult.
	ToolCallID string
	// Err is the guard's own failure, when it failed rather than tripped.
	Err error
}

// Trip returns the *TripError a Guard returns to stop a turn.
func Trip(guard, reason string) *TripError { return &TripError{Guard: guard, Reason: reason} }

func (e *TripError) Error() string {
	var where string
	switch e.At {
	case artifact.AtInput:
		where = "the user's message"
	case artifact.AtCall:
		where = fmt.Sprintf("tool call %q", e.ToolCallID)
	case artifact.AtResult:
		where = fmt.Sprintf("the result of tool call %q", e.ToolCallID)
	case artifact.AtOutput:
		where = "the answer"
	default:
		where = "the turn"
	}
	return fmt.Sprintf("loop: guard %q stopped %s: %s", e.Guard, where, e.Reason)
}

// Is reports whether target is ErrTripped.
func (e *TripError) Is(target error) bool { return target == ErrTripped }

// Unwrap returns the guard's failure, if any.
func (e *TripError) Unwrap() error { return e.Err }

// Tripwire is e as it is stored.
func (e *TripError) Tripwire() artifact.Tripwire {
	return artifact.Tripwire{Guard: e.Guard, At: e.At, Reason: e.Reason, ToolCallID: e.ToolCallID}
}

// TripErrorOf is the *TripError a stored tripwire records.
func TripErrorOf(w artifact.Tripwire) *TripError {
	return &TripError{Guard: w.Guard, At: w.At, Reason: w.Reason, ToolCallID: w.ToolCallID}
}

// TrippedKey is the thread metadata a turn sets before it stores a
// tripwire: requests of a thread without it are built with no look for
// tripwires, so guards cost an untripped thread nothing per turn.
const TrippedKey = "lode.tripped"

// DefaultOutputWindow is WithOutputWindow's default, in bytes.
const DefaultOutputWindow = 256

// WithGuards adds guards, asked in this order at each checkpoint; the
// first to stop a turn is the one recorded. Nil guards are skipped.
func WithGuards(g ...Guard) Option {
	return func(s *Step) {
		for _, x := range g {
			if x != nil {
				s.guards = append(s.guards, x)
			}
		}
	}
}

// WithOutputWindow sets how far behind the model's stream observers are
// kept while an output guard checks the answer: the answer so far is
// checked each time n more bytes of text have come, and text is released
// up to n bytes short of what was checked, so that what a guard stops,
// if it is no longer than n bytes, is never shown in part. n < 1 means
// DefaultOutputWindow. Without an output guard, text is not held.
func WithOutputWindow(n int) Option { return func(s *Step) { s.window = n } }

// guards is a Step's guards sorted by checkpoint.
type guards struct {
	input, call, result, output []Guard
}

func newGuards(gs []Guard) *guards {
	if len(gs) == 0 {
		return nil
	}
	out := &guards{}
	for _, g := range gs {
		cp, ok := g.(Checkpoints)
		asks := func(at string) bool { return !ok || cp.Checks(at) }
		if asks(artifact.AtInput) {
			out.input = append(out.input, g)
		}
		if asks(artifact.AtCall) {
			out.call = append(out.call, g)
		}
		if asks(artifact.AtResult) {
			out.result = append(out.result, g)
		}
		if asks(artifact.AtOutput) {
			out.output = append(out.output, g)
		}
	}
	return out
}

// check asks each guard in gs about c and returns the first trip, as a
// *TripError with c's checkpoint filled in. hold reports that a guard
// asked to hold a partial answer.
func (s *Step) check(ctx context.Context, gs []Guard, c Check) (trip *TripError, hold bool) {
	return checkGuards(ctx, s.log(), gs, c)
}

// CheckAll asks the guards in gs that check c.At about c, in order, as a
// turn does, and returns the first trip (nil when all passed): for doors
// that run tools outside a loop, such as an MCP server. A guard that
// fails or panics trips, as in a turn; ErrHold from a guard asked about a
// whole answer is a failure.
func CheckAll(ctx context.Context, gs []Guard, c Check) *TripError {
	c.Partial = false
	var asked []Guard
	for _, g := range gs {
		if cp, ok := g.(Checkpoints); !ok || cp.Checks(c.At) {
			asked = append(asked, g)
		}
	}
	te, _ := checkGuards(ctx, slog.Default(), asked, c)
	return te
}

func checkGuards(ctx context.Context, log *slog.Logger, gs []Guard, c Check) (trip *TripError, hold bool) {
	for _, g := range gs {
		err := askGuard(ctx, log, g, c)
		if err == nil {
			continue
		}
		if c.Partial && errors.Is(err, ErrHold) {
			hold = true
			continue
		}
		te, ok := errors.AsType[*TripError](err)
		if !ok {
			te = &TripError{Guard: g.Name(), Reason: fmt.Sprintf("the guard failed, so the turn stops (%v)", err), Err: err}
		}
		te = &TripError{Guard: te.Guard, At: c.At, Reason: te.Reason, ToolCallID: c.Call.ID, Err: te.Err}
		if te.Guard == "" {
			te.Guard = g.Name()
		}
		if c.At == artifact.AtInput || c.At == artifact.AtOutput {
			te.ToolCallID = ""
		}
		return te, false
	}
	return nil, hold
}

// askGuard runs one guard; a panic fails closed, as an error does.
func askGuard(ctx context.Context, log *slog.Logger, g Guard, c Check) (err error) {
	defer func() {
		if v := recover(); v != nil {
			log.ErrorContext(ctx, "lode: guard panicked", "guard", g.Name(), "at", c.At, "panic", v, "stack", string(debug.Stack()))
			err = panicError(v)
		}
	}()
	return g.Check(ctx, c)
}

// markTripped sets TrippedKey before a tripwire is stored.
func (s *Step) markTripped(ctx context.Context, st ledger.State) (err error) {
	defer func() {
		if v := recover(); v != nil {
			err = s.ledgerPanic(ctx, v)
		}
	}()
	if err := st.SetMetadata(TrippedKey, "true"); err != nil {
		return &LedgerError{Err: err}
	}
	return nil
}

// StoppedBy returns the trip recorded in the thread's last turn, if that
// turn stopped at a tripwire: the thread takes no turn until a user
// message follows it.
func StoppedBy(turns []ledger.Turn) (*TripError, bool) {
	if len(turns) == 0 {
		return nil, false
	}
	for _, a := range turns[len(turns)-1].Artifacts {
		if w, ok := a.(artifact.Tripwire); ok {
			return TripErrorOf(w), true
		}
	}
	return nil, false
}

// unanswered is the text of the user turns at the end of turns, the
// message a model has not yet seen; "" when the thread does not end with
// one.
func unanswered(turns []ledger.Turn) string {
	i := len(turns)
	for i > 0 && turns[i-1].Role == ledger.RoleUser {
		i--
	}
	var parts []string
	for _, t := range turns[i:] {
		for _, a := range t.Artifacts {
			if x, ok := a.(artifact.Text); ok && x.Content != "" {
				parts = append(parts, x.Content)
			}
		}
	}
	return strings.Join(parts, "\n\n")
}

// withoutTripped is turns as a request may carry them: no tripwire, no
// user message an input guard stopped. Turns keep their places (a history
// policy's summaries count stored turns); what is dropped leaves a turn
// with nothing to send, which adapters skip.
func withoutTripped(turns []ledger.Turn) []ledger.Turn {
	var out []ledger.Turn
	for i, t := range turns {
		k := slices.IndexFunc(t.Artifacts, func(a artifact.Artifact) bool { return a.Kind() == artifact.KindTripwire })
		if k < 0 {
			continue
		}
		if out == nil {
			out = slices.Clone(turns)
		}
		input := false
		out[i].Artifacts = slices.DeleteFunc(slices.Clone(t.Artifacts), func(a artifact.Artifact) bool {
			w, ok := a.(artifact.Tripwire)
			input = input || (ok && w.At == artifact.AtInput)
			return ok
		})
		if input {
			for j := i - 1; j >= 0 && out[j].Role == ledger.RoleUser; j-- {
				out[j].Artifacts = nil
			}
		}
	}
	if out == nil {
		return turns
	}
	return out
}

// notRun is the result of a call a trip kept from running.
func notRun(call artifact.ToolCall, te *TripError) artifact.ToolResult {
	return artifact.ToolResult{ToolCallID: call.ID, Name: call.Name, IsError: true,
		Content: fmt.Sprintf("not run: guard %q stopped the turn before this call", te.Guard)}
}

// StoppedResult is what the model is given in place of a call or result
// the trip te stopped; doors that run calls outside a turn give the same.
func StoppedResult(call artifact.ToolCall, te *TripError) artifact.ToolResult {
	what := "call"
	if te.At == artifact.AtResult {
		what = "result"
	}
	return artifact.ToolResult{ToolCallID: call.ID, Name: call.Name, IsError: true,
		Content: fmt.Sprintf("stopped: guard %q withheld this %s: %s", te.Guard, what, te.Reason)}
}

// tripped is the first trip of one answer's handling, shared by its
// calls' collectors.
type tripped struct {
	mu  sync.Mutex
	err *TripError
}

func (t *tripped) get() *TripError {
	if t == nil {
		return nil
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.err
}

// set records te unless a trip came first, and reports whether it did.
func (t *tripped) set(te *TripError) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.err != nil {
		return false
	}
	t.err = te
	return true
}

// holdBack keeps an answer's deltas from observers until the output
// guards have passed the text before them (WithOutputWindow).
type holdBack struct {
	s      *Step
	st     ledger.State
	window int
	queue  []heldDelta
	text   strings.Builder
	// checked is the text the guards passed; hold, that one asked to see
	// the whole answer first.
	checked int
	hold    bool
	// released is the text already passed on.
	released int
}

// heldDelta is a delta and where the text stands once it is shown.
type heldDelta struct {
	d   artifact.Delta
	end int
}

func (s *Step) newHoldBack(st ledger.State) *holdBack {
	if s.g == nil || len(s.g.output) == 0 || len(s.observers) == 0 {
		return nil
	}
	w := s.window
	if w < 1 {
		w = DefaultOutputWindow
	}
	return &holdBack{s: s, st: st, window: w}
}

// add takes a delta; a trip means the answer stops here.
func (h *holdBack) add(ctx context.Context, d artifact.Delta) *TripError {
	if td, ok := d.(artifact.TextDelta); ok {
		h.text.WriteString(td.Content)
	}
	h.queue = append(h.queue, heldDelta{d: d, end: h.text.Len()})
	if h.hold || h.text.Len()-h.checked < h.window {
		return nil
	}
	te, hold := h.s.check(ctx, h.s.g.output, Check{At: artifact.AtOutput, State: h.st, Text: h.text.String(), Partial: true})
	switch {
	case te != nil:
		return te
	case hold:
		h.hold = true
	default:
		h.checked = h.text.Len()
		h.release(ctx, h.checked-h.window)
	}
	return nil
}

// release passes on the deltas that end at or before text offset upto,
// and the part of a text delta that reaches it.
func (h *holdBack) release(ctx context.Context, upto int) {
	n := 0
	for ; n < len(h.queue); n++ {
		q := h.queue[n]
		if q.end <= upto {
			h.s.notify(ctx, DeltaEvent{Delta: q.d})
			h.released = q.end
			continue
		}
		if td, ok := q.d.(artifact.TextDelta); ok && upto > h.released {
			start := q.end - len(td.Content)
			cut := upto - start
			for cut > 0 && !utf8.RuneStart(td.Content[cut]) {
				cut-- // a character is shown whole or not at all
			}
			if cut == 0 {
				break
			}
			h.s.notify(ctx, DeltaEvent{Delta: artifact.TextDelta{Content: td.Content[:cut]}})
			h.queue[n].d = artifact.TextDelta{Content: td.Content[cut:]}
			h.released = start + cut
		}
		break
	}
	h.queue = h.queue[n:]
}

// flush passes on what is left, once the whole answer passed.
func (h *holdBack) flush(ctx context.Context) {
	if h != nil {
		h.release(ctx, h.text.Len())
	}
}

// answerText is the text of an answer, as an output guard reads it.
func answerText(arts []artifact.Artifact) string {
	var b strings.Builder
	for _, a := range arts {
		if t, ok := a.(artifact.Text); ok {
			b.WriteString(t.Content)
		}
	}
	return b.String()
}

// kept is what a stopped answer keeps besides its tripwire: what it cost
// and why it ended.
func kept(arts []artifact.Artifact) []artifact.Artifact {
	var out []artifact.Artifact
	for _, a := range arts {
		switch a.(type) {
		case artifact.Usage, artifact.Finish:
			out = append(out, a)
		}
	}
	return out
}

// storeTrip stores a turn of role holding a tripwire and returns te, or
// the error that kept it from being stored.
func (s *Step) storeTrip(ctx context.Context, st ledger.State, role ledger.Role, arts []artifact.Artifact, te *TripError) error {
	if err := s.markTripped(ctx, st); err != nil {
		return err
	}
	if err := s.appendTurn(ctx, st, role, arts); err != nil {
		return err
	}
	if len(s.observers) > 0 {
		s.notify(ctx, TurnCompleteEvent{Role: role, Artifacts: arts})
	}
	return te
}

// checkCalls asks the call guards about every call of an answer before
// any runs. On a trip it returns the tool turn to store in place of
// running them: the stopped call's result, the others' "not run", and the
// tripwire.
func (s *Step) checkCalls(ctx context.Context, st ledger.State, arts []artifact.Artifact) ([]artifact.Artifact, *TripError) {
	if s.g == nil || len(s.g.call) == 0 {
		return nil, nil
	}
	for _, a := range arts {
		call, ok := a.(artifact.ToolCall)
		if !ok {
			continue
		}
		te, _ := s.check(ctx, s.g.call, Check{At: artifact.AtCall, State: st, Call: call})
		if te == nil {
			continue
		}
		var out []artifact.Artifact
		for _, b := range arts {
			if c, ok := b.(artifact.ToolCall); ok {
				if c.ID == call.ID {
					out = append(out, StoppedResult(c, te))
				} else {
					out = append(out, notRun(c, te))
				}
			}
		}
		return append(out, te.Tripwire()), te
	}
	return nil, nil
}

// guardResults asks the result guards about the results in a tool turn a
// handler emitted, before anyone reads them: a stopped result is replaced
// by an error result, followed by the tripwire of the answer's first trip.
func (c *collector) guardResults(ctx context.Context, tc TurnCompleteEvent) TurnCompleteEvent {
	s := c.step
	if s.g == nil || len(s.g.result) == 0 || tc.Role != ledger.RoleTool || c.trip == nil {
		return tc
	}
	arts := make([]artifact.Artifact, 0, len(tc.Artifacts))
	for _, a := range tc.Artifacts {
		r, ok := a.(artifact.ToolResult)
		if !ok {
			arts = append(arts, a)
			continue
		}
		call := c.call
		if call.ID != r.ToolCallID {
			call = artifact.ToolCall{ID: r.ToolCallID, Name: r.Name}
		}
		te, _ := s.check(ctx, s.g.result, Check{At: artifact.AtResult, State: c.st, Call: call, Result: r})
		if te == nil {
			arts = append(arts, r)
			continue
		}
		arts = append(arts, StoppedResult(call, te))
		if c.trip.set(te) {
			arts = append(arts, te.Tripwire())
		}
	}
	tc.Artifacts = arts
	return tc
}

// CheckCalls asks the Step's call guards about every call of answer
// before any runs, as a turn does, for a door that runs an answer's calls
// apart from its model turn (x/temporal). On a trip it returns the tool
// turn a turn stores in their place (the stopped call's result, "not run"
// for the others, the tripwire) and the trip; the caller sets TrippedKey
// on the thread before it stores that turn.
func (s *Step) CheckCalls(ctx context.Context, st ledger.State, answer []artifact.Artifact) ([]artifact.Artifact, *TripError) {
	return s.checkCalls(ctx, st, answer)
}

// CheckResults asks the Step's result guards about the results in arts,
// what a handler emitted for call, as a turn does before anyone reads
// them: a stopped result is replaced by the error result the model reads,
// followed by the tripwire. It returns arts so changed and the trip, if
// any; the caller sets TrippedKey on the thread before it stores them.
func (s *Step) CheckResults(ctx context.Context, st ledger.State, call artifact.ToolCall, arts []artifact.Artifact) ([]artifact.Artifact, *TripError) {
	if s.g == nil || len(s.g.result) == 0 {
		return arts, nil
	}
	c := &collector{step: s, st: st, call: call, trip: &tripped{}}
	tc := c.guardResults(ctx, TurnCompleteEvent{Role: ledger.RoleTool, Artifacts: arts})
	return tc.Artifacts, c.trip.get()
}

// NotRun is the result a turn gives a call of an answer that the trip te
// kept from running.
func NotRun(call artifact.ToolCall, te *TripError) artifact.ToolResult { return notRun(call, te) }
