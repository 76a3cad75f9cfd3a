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
	// first holds turns' first element: most handlers emit one turn.
	first [1]TurnCompleteEvent
	// failed is what handling the artifact returned.
	failed error
	// ctx is the handlers' context, which answers ArtifactIndex.
	ctx indexCtx
}

// indexCtx is a context that answers ArtifactIndex, kept in the
// collector rather than allocated by context.WithValue.
type indexCtx struct {
	context.Context
	i int
}

func (c *indexCtx) Value(key any) any {
	if _, ok := key.(indexKey); ok {
		return c.i
	}
	return c.Context.Value(key)
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
			if c.turns == nil {
				c.turns = c.first[:0]
			}
			c.turns = append(c.turns, tc)
		}
	}
	c.mu.Unlock()
	if len(c.step.observers) == 0 {
		// Boxing the turn as an Event is for observers only.
		return
	}
	if isTurn {
		ev = tc
	}
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
		cols[i].failed = s.handleOne(ctx, i, a, &cols[i])
	}
	// After a guard stopped a result, no call of the answer starts.
	if calls == 1 || (calls > 1 && s.concurrency == 1) {
		for i, a := range arts {
			if _, ok := a.(artifact.ToolCall); ok {
				s.callOne(ctx, i, a, &cols[i], trip)
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
				s.callOne(ctx, i, a, &cols[i], trip)
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
		if herr != nil && cols[i].failed == nil {
			herr.Artifact = arts[i]
			cols[i].failed = herr
		}
		for _, tc := range turns {
			if tc.Role != role {
				flush()
				role = tc.Role
			}
			if pending == nil {
				// Clipped, so that merging a second turn copies rather
				// than writing past what the handler emitted.
				pending = slices.Clip(tc.Artifacts)
			} else {
				pending = append(pending, tc.Artifacts...)
			}
		}
	}
	flush()
	for i := range cols {
		if err := cols[i].failed; err != nil {
			return err
		}
	}
	if lerr == nil && te != nil {
		return te
	}
	return lerr
}

// callOne handles call a, artifact i of the answer, unless a guard
// already stopped a result of the answer: then it is not run.
func (s *Step) callOne(ctx context.Context, i int, a artifact.Artifact, c *collector, trip *tripped) {
	if te := trip.get(); te != nil {
		c.turns = []TurnCompleteEvent{{Role: ledger.RoleTool, Artifacts: []artifact.Artifact{notRun(c.call, te)}}}
		return
	}
	c.failed = s.handleCall(ctx, i, a, c, trip)
}

// handleOne hands artifact i of the answer to every handler in turn, then
// seals its collector.
func (s *Step) handleOne(ctx context.Context, i int, a artifact.Artifact, c *collector) error {
	c.ctx = indexCtx{Context: ctx, i: i}
	ctx = &c.ctx
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
