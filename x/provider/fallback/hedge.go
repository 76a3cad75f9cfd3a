package fallback

import (
	"context"
	"fmt"
	"time"

	"github.com/lodeworks/lode/artifact"
	"github.com/lodeworks/lode/provider"
)

// hedged runs the attempts in goroutines of their own, at most two at a
// time, and streams the first that yields an artifact other than Usage.
// It returns only once every attempt's goroutine has ended, so that none
// outlives the invocation and every attempt's usage is known.
func (p *Provider) hedged(ctx context.Context, req *provider.Request, yield func(artifact.Artifact, error) bool) {
	h := &hedge{p: p, ctx: ctx, req: req}
	defer func() {
		h.stopTimer()
		for _, a := range h.all {
			a.cancel()
		}
	}()
	h.launch(false)
	winner, err := h.race()
	if winner == nil {
		h.spent = append(h.spent, h.settle(StatusStopped)...)
		if yieldUsage(yield, h.spent) {
			yield(nil, err)
		}
		return
	}
	// The loser, if any, is cancelled; the answer is the winner's.
	h.loseAll(winner)
	if !yieldUsage(yield, h.spent) {
		h.stop(winner)
		return
	}
	for _, art := range h.early {
		if !yield(art, nil) {
			h.stop(winner)
			return
		}
	}
	for {
		select {
		case art := <-winner.out:
			if _, ok := art.(artifact.Usage); ok {
				continue // yielded at the end, after the loser's
			}
			if !yield(art, nil) {
				h.stop(winner)
				return
			}
		case <-winner.done:
			// Every Usage comes last: the loser's first, then the
			// winner's, so that the last Usage of the answer is the one
			// of the request that produced it.
			if !yieldUsage(yield, h.settle(StatusLost)) || !yieldUsage(yield, winner.usages) {
				p.end(ctx, winner, StatusStopped, nil, false)
				return
			}
			if winner.err != nil {
				p.end(ctx, winner, StatusFailed, winner.err, false)
				yield(nil, winner.err)
				return
			}
			p.end(ctx, winner, StatusAnswered, nil, false)
			return
		}
	}
}

// hedge is the state of one hedged invocation. Only the invoking
// goroutine touches it.
type hedge struct {
	p   *Provider
	ctx context.Context
	req *provider.Request

	slots [2]*attempt
	n     int // attempts started
	next  int // the next provider to try
	timer <-chan time.Time
	stopT func() bool

	failed []*AttemptError
	spent  []artifact.Usage
	// early holds what the winner yielded before it won (its Usage).
	early []artifact.Artifact
	// losers are the attempts cancelled for the winner, still draining
	// until settled.
	losers []*attempt
	all    []*attempt
}

// launch starts the next provider in a free slot, and the hedge timer
// when it is the only attempt in flight and another provider is left.
func (h *hedge) launch(isHedge bool) {
	a := &attempt{
		n: h.n, prov: h.next, hedge: isHedge,
		out: make(chan artifact.Artifact), done: make(chan struct{}), lost: make(chan struct{}),
	}
	h.n++
	h.next++
	a.ctx, a.cancel = context.WithCancel(h.ctx)
	h.all = append(h.all, a)
	h.p.begin(h.ctx, a)
	go a.run(h.p.provs[a.prov], h.p.models[a.prov], h.req)
	if h.slots[0] == nil {
		h.slots[0] = a
	} else {
		h.slots[1] = a
	}
	h.arm()
}

// arm starts the hedge timer when one attempt is in flight and another
// provider is left; otherwise it stops it.
func (h *hedge) arm() {
	h.stopTimer()
	if h.inFlight() == 1 && h.next < len(h.p.provs) {
		h.timer, h.stopT = h.p.cfg.clock.Timer(h.p.cfg.hedge)
	}
}

func (h *hedge) stopTimer() {
	if h.stopT != nil {
		h.stopT()
	}
	h.timer, h.stopT = nil, nil
}

func (h *hedge) inFlight() int {
	n := 0
	for _, a := range h.slots {
		if a != nil {
			n++
		}
	}
	return n
}

// race waits for an attempt to yield an artifact other than Usage (the
// winner), or for every attempt to fail; then the error says why.
func (h *hedge) race() (*attempt, error) {
	for {
		var out0, out1 <-chan artifact.Artifact
		var done0, done1 <-chan struct{}
		if a := h.slots[0]; a != nil {
			out0, done0 = a.out, a.done
		}
		if a := h.slots[1]; a != nil {
			out1, done1 = a.out, a.done
		}
		select {
		case <-h.timer:
			h.timer, h.stopT = nil, nil
			if h.ctx.Err() == nil && h.inFlight() == 1 && h.next < len(h.p.provs) {
				h.launch(true)
			}
		case art := <-out0:
			if w := h.got(0, art); w != nil {
				return w, nil
			}
		case art := <-out1:
			if w := h.got(1, art); w != nil {
				return w, nil
			}
		case <-done0:
			if w, err, over := h.ended(0); over {
				return w, err
			}
		case <-done1:
			if w, err, over := h.ended(1); over {
				return w, err
			}
		}
	}
}

// got takes an artifact of the attempt in slot i: a Usage waits, anything
// else makes the attempt the winner.
func (h *hedge) got(i int, art artifact.Artifact) *attempt {
	a := h.slots[i]
	if _, ok := art.(artifact.Usage); ok {
		return nil
	}
	h.early = append(h.early, art)
	return a
}

// ended handles the end of the attempt in slot i before it won: an empty
// answer is still an answer; a failure falls back, or ends the race.
func (h *hedge) ended(i int) (w *attempt, err error, over bool) {
	a := h.slots[i]
	if a.err == nil {
		return a, nil, true
	}
	h.slots[i] = nil
	c := Classify(h.ctx, a.err)
	a.class = c
	fall := h.p.falls(h.ctx, c)
	moreLeft := h.next < len(h.p.provs)
	h.p.end(h.ctx, a, StatusFailed, a.err, fall && (moreLeft || h.inFlight() > 0))
	h.failed = append(h.failed, a.failure(h.p, a.err))
	h.spent = append(h.spent, a.usages...)
	switch {
	case !fall:
		return nil, failure(h.failed, false), true
	case h.inFlight() > 0:
		// The other attempt goes on, now alone: it may be hedged again.
		h.arm()
		return nil, nil, false
	case moreLeft:
		h.launch(false)
		return nil, nil, false
	}
	return nil, failure(h.failed, true), true
}

// loseAll cancels every attempt but w, to be settled later, and empties
// the slots.
func (h *hedge) loseAll(w *attempt) {
	h.stopTimer()
	for _, a := range h.slots {
		if a != nil && a != w {
			close(a.lost)
			a.cancel()
			h.losers = append(h.losers, a)
		}
	}
	h.slots = [2]*attempt{}
}

// settle waits for every attempt but the winner to end, and reports it
// with status s: the losers, or those cut short by a failure. It returns
// the Usage they reported.
func (h *hedge) settle(s Status) (usages []artifact.Usage) {
	for i, a := range h.slots {
		if a != nil {
			close(a.lost)
			a.cancel()
			h.losers = append(h.losers, a)
			h.slots[i] = nil
		}
	}
	for _, a := range h.losers {
		<-a.done
		a.cancel()
		h.p.end(h.ctx, a, s, nil, false)
		usages = append(usages, a.usages...)
	}
	h.losers = nil
	return usages
}

// stop ends an invocation the caller stopped reading: the winner is
// cancelled too, and every attempt drained.
func (h *hedge) stop(w *attempt) {
	close(w.lost)
	w.cancel()
	h.settle(StatusLost)
	<-w.done
	h.p.end(h.ctx, w, StatusStopped, nil, false)
}

// run streams the provider's answer to out until the attempt is lost,
// then only drains it, keeping its usage. A panic is the attempt's error:
// in a goroutine of its own, nothing above would recover it.
func (a *attempt) run(pr provider.Provider, model string, req *provider.Request) {
	defer close(a.done)
	defer func() {
		if v := recover(); v != nil {
			a.err = fmt.Errorf("fallback: provider %d panicked: %v", a.prov, v)
		}
	}()
	ended := false
	invoke(a.ctx, pr, req, model)(func(art artifact.Artifact, err error) bool {
		if ended {
			// A provider that goes on after its error is not listened to.
			return false
		}
		if err != nil {
			a.err, ended = err, true
			return false
		}
		if art == nil {
			return true
		}
		if isUsage(art) {
			a.usages = append(a.usages, art.(artifact.Usage))
		}
		select {
		case a.out <- art:
		case <-a.lost:
		}
		return true
	})
}
