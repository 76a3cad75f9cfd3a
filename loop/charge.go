package loop

import (
	"context"
	"sync"

	"github.com/lodeworks/lode/artifact"
	"github.com/lodeworks/lode/provider"
)

// UsageEvent reports the usage of a model call made for a turn outside the
// thread, which Charge counted: a history policy's summary, say. The
// answer's own usage comes in its TurnCompleteEvent.
type UsageEvent struct {
	Usage artifact.Usage
	// For says what the call was for ("history summary").
	For string
}

// EventName returns "usage".
func (UsageEvent) EventName() string { return "usage" }

// Charge counts u, the usage of a model call made for the running turn
// outside the thread (a history policy's summariser, a tool that asks a
// model), as the turn's own: it prices u with the Step's Pricer, adds its
// cost to the turn's and the run's, so that WithMaxCost and the spans see
// it, records it on WithMeter's instruments and sends the Step's
// observers a UsageEvent; for says what the call was for. A usage that
// names no model is prov's. With a cost limit, a usage without a price
// stops Run after the turn with ErrUnpriced, as an answer's would.
//
// ctx is the one the turn gives its InvokeOptions and handlers; with any
// other, or on a Step with no Pricer, meter or observer, Charge does
// nothing. It returns u priced (CostUSD, Priced), or as it was.
func Charge(ctx context.Context, prov provider.Provider, what string, u artifact.Usage) artifact.Usage {
	c, _ := ctx.Value(chargeKey{}).(*charger)
	if c == nil {
		return u
	}
	arts := []artifact.Artifact{u}
	usd, unpriced := c.step.price(ctx, prov, arts)
	u = arts[0].(artifact.Usage)
	c.mu.Lock()
	c.usd += usd
	if unpriced != "" && c.unpriced == "" {
		c.unpriced = unpriced
	}
	c.mu.Unlock()
	if c.step.meters != nil {
		c.step.meters.record(ctx, prov, arts)
	}
	if len(c.step.observers) > 0 {
		c.step.notify(ctx, UsageEvent{Usage: u, For: what})
	}
	return u
}

type chargeKey struct{}

// charger adds up what Charge counted in one turn.
type charger struct {
	step     *Step
	mu       sync.Mutex
	usd      float64
	unpriced string
}

// chargeCtx is a turn's context with its charger: one allocation for
// both.
type chargeCtx struct {
	context.Context
	c charger
}

func (c *chargeCtx) Value(key any) any {
	if key == (chargeKey{}) {
		return &c.c
	}
	return c.Context.Value(key)
}

// charging gives ctx a charger for one turn when Charge has anything to do
// on s; nil when not.
func (s *Step) charging(ctx context.Context) (context.Context, *charger) {
	if s.pricer == nil && s.meters == nil && len(s.observers) == 0 && spendFrom(ctx) == nil {
		return ctx, nil
	}
	cc := &chargeCtx{Context: ctx, c: charger{step: s}}
	return cc, &cc.c
}

// addTo adds what c counted to out.
func (c *charger) addTo(out *turnOutcome) {
	c.mu.Lock()
	defer c.mu.Unlock()
	out.cost += c.usd
	if out.unpriced == "" {
		out.unpriced = c.unpriced
	}
}
