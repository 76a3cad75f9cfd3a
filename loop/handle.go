package loop

import (
	"context"
	"fmt"
	"reflect"
	"runtime/debug"
	"slices"
	"sync"

	"github.com/lodeworks/lode/artifact"
	"github.com/lodeworks/lode/ledger"
)

// collector gathers what handlers emit for one artifact and forwards every
// event to the observers. It is sealed when the artifact's handlers have
// returned: an event emitted later cannot be put in its place in the
// ledger, and is dropped.
type collector struct {
	step *Step
	// st, call and trip are for the result guards: the thread, the call
	// handled, and the answer's first trip.
	st      ledger.State
	call    artifact.ToolCall
	trip    *tripped
	mu      sync.Mutex
	handler int
	sealed  bool
	turns   []TurnCompleteEvent
	err     *HandlerError
}

func (c *collector) Emit(ctx context.Context, ev Event) {
	if ev == nil {
		return
	}
	tc, isTurn := ev.(TurnCompleteEvent)
	if p, ok := ev.(*TurnCompleteEvent); ok {
		// The pointer is an Event too; it means the same turn.
		if p == nil {
			return
		}
		tc, isTurn = *p, true
	}
	if isTurn {
		tc = c.guardResults(ctx, cleanTurn(tc))
		ev = tc
	}
	c.mu.Lock()
	if c.sealed {
		c.mu.Unlock()
		c.step.log().WarnContext(ctx, "lode: a handler emitted an event after it returned; dropped", "event", ev.EventName())
		return
	}
	if isTurn {
		if !tc.Role.Valid() {
			if c.err == nil {
				c.err = &HandlerError{Handler: c.handler, Err: fmt.Errorf("emitted a turn with invalid role %q", tc.Role)}
			}
			c.mu.Unlock()
			return
		}
		if len(tc.Artifacts) > 0 {
			c.turns = append(c.turns, tc)
		}
	}
	c.mu.Unlock()
	c.step.notify(ctx, ev)
}

// cleanTurn drops nil artifacts, which carry nothing and which no ledger
// accepts, and stores pointers to artifacts as their values.
func cleanTurn(tc TurnCompleteEvent) TurnCompleteEvent {
	for i, a := range tc.Artifacts {
		if a == nil || reflect.TypeOf(a).Kind() == reflect.Pointer {
			out := make([]artifact.Artifact, 0, len(tc.Artifacts))
			out = append(out, tc.Artifacts[:i]...)
			for _, a := range tc.Artifacts[i:] {
				if a = artifact.Normalize(a); a != nil {
					out = append(out, a)
				}
			}
			tc.Artifacts = out
			break
		}
	}
	return tc
}

func (c *collector) setHandler(i int) {
	c.mu.Lock()
	c.handler = i
	c.mu.Unlock()
}

// seal stops the collector taking events and returns what it took, and
// the first invalid event as an error.
func (c *collector) seal() ([]TurnCompleteEvent, *HandlerError) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.sealed = true
	return c.turns, c.err
}

func (s *Step) handle(ctx context.Context, st ledger.State, arts []artifact.Artifact) error {
	if stopped, te := s.checkCalls(ctx, st, arts); te != nil {
		return s.storeTrip(ctx, st, ledger.RoleTool, stopped, te)
	}
	var trip *tripped
	if s.g != nil && len(s.g.result) > 0 {
		trip = &tripped{}
	}
	cols := make([]collector, len(arts))
	errs := make([]error, len(arts))
	for i := range cols {
		cols[i].step = s
		cols[i].st = st
		cols[i].trip = trip
		if c, ok := arts[i].(artifact.ToolCall); ok {
			cols[i].call = c
		}
	}
	// Tool calls are what takes time; everything else is handled inline.
	calls := 0
	for i, a := range arts {
		if _, ok := a.(artifact.ToolCall); ok {
			calls++
			continue
		}
		errs[i] = s.handleOne(ctx, i, a, &cols[i])
	}
	// After a guard stopped a result, no call of the answer starts.
	callOne := func(i int, a artifact.Artifact) {
		if te := trip.get(); te != nil {
			cols[i].turns = []TurnCompleteEvent{{Role: ledger.RoleTool, Artifacts: []artifact.Artifact{notRun(cols[i].call, te)}}}
			return
		}
		errs[i] = s.handleCall(ctx, i, a, &cols[i], trip)
	}
	if calls == 1 || (calls > 1 && s.concurrency == 1) {
		for i, a := range arts {
			if _, ok := a.(artifact.ToolCall); ok {
				callOne(i, a)
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
				callOne(i, a)
			}()
		}
		wg.Wait()
	}
	te := trip.get()
	if te != nil {
		// A call left waiting for approval would run on Resume: it is
		// not run, as the calls after the trip are not.
		for i := range cols {
			for k, tc := range cols[i].turns {
				if !slices.ContainsFunc(tc.Artifacts, func(a artifact.Artifact) bool { _, ok := a.(artifact.Pending); return ok }) {
					continue
				}
				// Observers were handed tc.Artifacts when it was emitted:
				// the stored turn gets a copy, not a rewrite of what they
				// read.
				arts := slices.Clone(tc.Artifacts)
				for j, a := range arts {
					if p, ok := a.(artifact.Pending); ok {
						arts[j] = notRun(artifact.ToolCall{ID: p.ToolCallID, Name: p.Name}, te)
					}
				}
				tc.Artifacts = arts
				cols[i].turns[k] = tc
			}
		}
		if err := s.markTripped(ctx, st); err != nil {
			return err
		}
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
		lerr = s.appendTurn(ctx, st, role, pending)
		pending = nil
	}
	for i := range cols {
		turns, herr := cols[i].seal()
		if herr != nil && errs[i] == nil {
			herr.Artifact = arts[i]
			errs[i] = herr
		}
		for _, tc := range turns {
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
	if lerr == nil && te != nil {
		return te
	}
	return lerr
}

// handleOne hands artifact i of the answer to every handler in turn, then
// seals its collector.
func (s *Step) handleOne(ctx context.Context, i int, a artifact.Artifact, c *collector) error {
	ctx = context.WithValue(ctx, indexKey{}, i)
	defer c.seal()
	for h, hd := range s.handlers {
		c.setHandler(h)
		if err := s.callHandler(ctx, h, hd, a, c); err != nil {
			return err
		}
	}
	return nil
}

func (s *Step) callHandler(ctx context.Context, i int, h Handler, a artifact.Artifact, e Emitter) (err error) {
	defer func() {
		if v := recover(); v != nil {
			herr := &HandlerError{Handler: i, Artifact: a, Panic: v, Stack: debug.Stack()}
			herr.Err = panicError(v)
			s.log().ErrorContext(ctx, "lode: handler panicked", "handler", i, "artifact", a.Kind(), "panic", v, "stack", string(herr.Stack))
			err = herr
		}
	}()
	if herr := h.Handle(ctx, a, e); herr != nil {
		return &HandlerError{Handler: i, Artifact: a, Err: herr}
	}
	return nil
}
