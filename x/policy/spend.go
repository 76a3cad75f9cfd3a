package policy

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"sync"
	"time"

	"github.com/lodeworks/lode/artifact"
	"github.com/lodeworks/lode/ledger"
	"github.com/lodeworks/lode/loop"
	"github.com/lodeworks/lode/provider"
	"github.com/lodeworks/lode/x/auth"
)

// TenantKey is the thread metadata key that names the caller's tenant, for
// the tenants: limits.
const TenantKey = auth.TenantKey

// AnyTenant is the tenants: entry that binds each tenant without one of
// its own.
const AnyTenant = "*"

// ErrSpendLimit matches every *SpendError with errors.Is; so does
// loop.ErrLimit.
var ErrSpendLimit = errors.New("policy: spend limit reached")

// ErrSpendSetup is returned, wrapped, before a model call when a spend
// limit binds the caller and cannot be kept: no prices for the model, or
// no shared counters for a daily limit. The limit is never kept over part
// of the spending only.
var ErrSpendSetup = errors.New("policy: a spend limit binds the caller and cannot be kept")

// SpendError says which limit stopped a model call.
type SpendError struct {
	// Scope is who the limit binds: "tenant acme", "role viewer",
	// "role viewer of tenant acme".
	Scope string
	// Period is "run" (since the last user message) or "day" (UTC).
	Period string
	// SpentUSD is what was spent (or reserved for calls in flight), and
	// LimitUSD the limit.
	SpentUSD, LimitUSD float64
}

func (e *SpendError) Error() string {
	return fmt.Sprintf("policy: %s has spent $%.4f of its $%.4f per %s", e.Scope, e.SpentUSD, e.LimitUSD, e.Period)
}

// Unwrap returns ErrSpendLimit and loop.ErrLimit.
func (e *SpendError) Unwrap() []error { return []error{ErrSpendLimit, loop.ErrLimit} }

// WithSpend lets the Enforcer keep the usd_per_run and usd_per_day limits:
// pricer prices the models (x/catalog's Catalog is one), models are those
// the loop may call (the priciest is assumed, so that a fallback cannot
// pass a limit), and counter keeps the day's spending where every process
// and replica sharing the store sees it (lode's file, SQLite and
// PostgreSQL stores are Counters; nil refuses daily limits).
func WithSpend(counter ledger.Counter, pricer loop.Pricer, models ...string) EnforcerOption {
	return func(e *Enforcer) {
		e.spend = &spender{counter: counter, pricer: pricer, models: models, now: time.Now, held: map[string]reservation{}}
	}
}

// WithSpendClock sets the clock that says which day it is; for tests.
func WithSpendClock(now func() time.Time) EnforcerOption {
	return func(e *Enforcer) {
		if e.spend != nil && now != nil {
			e.spend.now = now
		}
	}
}

type spender struct {
	counter ledger.Counter
	pricer  loop.Pricer
	models  []string
	now     func() time.Time

	mu   sync.Mutex
	held map[string]reservation // by thread: reserved for the call in flight
}

// reservation is what a model call holds of the day's counters until its
// usage is known.
type reservation struct {
	req   *provider.Request
	names []string
	micro int64 // millionths of a dollar, on each counter
}

// minAnswer is the fewest answer tokens worth a call: below it the call is
// refused rather than cut to nothing.
const minAnswer = 16

// defaultAnswer is the answer size reserved for when neither the request
// nor the catalog bounds it.
const defaultAnswer = 4096

// SpendLimit returns the invoke option that keeps the spend limits before
// each model call (give it to loop.WithInvokeOptions, with SpendRecorder
// among the handlers): it refuses the call with a *SpendError when a
// limit is used up, and otherwise reserves what the call may cost on the
// day's counters, lowering the request's MaxTokens to what the limits can
// pay for, so that processes sharing a store never pass a daily limit
// together. Without WithSpend, or for a caller no usd_ limit binds, it
// does nothing.
func (e *Enforcer) SpendLimit() provider.InvokeOption {
	return provider.OptionFunc(func(ctx context.Context, st ledger.State, req *provider.Request) error {
		return e.reserve(ctx, st, req)
	})
}

// SpendRecorder returns the handler that settles each answer's usage on
// the day's counters: what the call cost replaces what was reserved.
func (e *Enforcer) SpendRecorder() loop.Handler {
	return loop.HandlerFunc(func(ctx context.Context, a artifact.Artifact, _ loop.Emitter) error {
		u, ok := a.(artifact.Usage)
		if !ok || e.spend == nil {
			return nil
		}
		turn, ok := loop.CurrentTurn(ctx)
		if !ok || turn.State == nil {
			return nil
		}
		return e.spend.settle(ctx, turn.State.ID(), turn.Request, u)
	})
}

// bound is one limit that binds a call.
type bound struct {
	scope, period string
	usd           float64
	counter       string // the day's counter; "" for a run limit
}

func (e *Enforcer) bounds(st ledger.State, day string) []bound {
	pol := e.policy()
	if pol == nil {
		return nil
	}
	roles := Roles(st)
	tenant := ""
	if st != nil {
		tenant, _ = st.Metadata(TenantKey)
	}
	var out []bound
	of := ""
	if tenant != "" {
		of = " of tenant " + tenant
	}
	for _, r := range roles {
		role, ok := pol.doc.Roles[r]
		if !ok {
			continue
		}
		if role.Limits.USDPerRun > 0 {
			out = append(out, bound{scope: "role " + r + of, period: "run", usd: role.Limits.USDPerRun})
		}
		if role.Limits.USDPerDay > 0 {
			out = append(out, bound{scope: "role " + r + of, period: "day", usd: role.Limits.USDPerDay,
				counter: "lode.spend:" + day + ":role:" + r + ":tenant:" + tenant})
		}
	}
	if tenant != "" {
		lim, ok := pol.doc.Tenants[tenant]
		if !ok {
			lim = pol.doc.Tenants[AnyTenant]
		}
		if lim.USDPerRun > 0 {
			out = append(out, bound{scope: "tenant " + tenant, period: "run", usd: lim.USDPerRun})
		}
		if lim.USDPerDay > 0 {
			out = append(out, bound{scope: "tenant " + tenant, period: "day", usd: lim.USDPerDay, counter: "lode.spend:" + day + ":tenant:" + tenant})
		}
	}
	return out
}

func (e *Enforcer) reserve(ctx context.Context, st ledger.State, req *provider.Request) error {
	sp := e.spend
	if sp == nil {
		return nil
	}
	day := sp.now().UTC().Format(time.DateOnly)
	bounds := e.bounds(st, day)
	if len(bounds) == 0 {
		return nil
	}
	sp.release(ctx, st.ID())
	if sp.pricer == nil || len(sp.models) == 0 {
		return fmt.Errorf("%w: no prices were given (policy.WithSpend)", ErrSpendSetup)
	}
	for _, m := range sp.models {
		if _, ok := sp.pricer.Cost(m, artifact.Usage{}); !ok {
			return fmt.Errorf("%w: the model %q has no price", ErrSpendSetup, m)
		}
	}
	in := estimateInput(req)
	inCost, perOut := sp.rates(in)
	answer := int64(req.MaxTokens)
	if answer <= 0 {
		answer = sp.maxOutput()
	}
	// What every limit leaves, in dollars.
	room := math.Inf(1)
	runSpent := sp.runSpent(st)
	for _, b := range bounds {
		spent := runSpent
		if b.counter != "" {
			if sp.counter == nil {
				return fmt.Errorf("%w: %s has a daily limit and the store keeps no shared counters (ledger.Counter)", ErrSpendSetup, b.scope)
			}
			total, _, err := sp.counter.AddCounter(ctx, b.counter, 0, ledger.NoLimit)
			if err != nil {
				return fmt.Errorf("policy: read the day's spending: %w", err)
			}
			spent = float64(total) / 1e6
		}
		left := b.usd - spent
		if left < inCost+float64(minAnswer)*perOut {
			return &SpendError{Scope: b.scope, Period: b.period, SpentUSD: spent, LimitUSD: b.usd}
		}
		room = min(room, left)
	}
	if perOut > 0 {
		if affordable := int64((room - inCost) / perOut); affordable < answer {
			answer = affordable
		}
	}
	if answer < minAnswer {
		answer = minAnswer
	}
	micro := int64(math.Ceil((inCost + float64(answer)*perOut) * 1e6))
	// Reserve on every daily counter, each under its limit; a counter
	// that refuses gives back what the others took.
	var names []string
	for _, b := range bounds {
		if b.counter == "" {
			continue
		}
		total, ok, err := sp.counter.AddCounter(ctx, b.counter, micro, int64(math.Floor(b.usd*1e6)))
		if err == nil && ok {
			names = append(names, b.counter)
			continue
		}
		sp.giveBack(ctx, names, micro)
		if err != nil {
			return fmt.Errorf("policy: reserve the day's spending: %w", err)
		}
		return &SpendError{Scope: b.scope, Period: b.period, SpentUSD: float64(total) / 1e6, LimitUSD: b.usd}
	}
	if req.MaxTokens <= 0 || int64(req.MaxTokens) > answer {
		req.MaxTokens = int(answer)
	}
	if len(names) > 0 {
		sp.mu.Lock()
		sp.held[st.ID()] = reservation{req: req, names: names, micro: micro}
		sp.mu.Unlock()
	}
	return nil
}

// rates are what the input costs and what one answer token costs, at the
// priciest of the models.
func (sp *spender) rates(input int64) (inCost, perOut float64) {
	for _, m := range sp.models {
		in, _ := sp.pricer.Cost(m, artifact.Usage{InputTokens: input})
		withOut, _ := sp.pricer.Cost(m, artifact.Usage{InputTokens: input, OutputTokens: 1_000_000})
		inCost = max(inCost, in)
		perOut = max(perOut, (withOut-in)/1_000_000)
	}
	return inCost, perOut
}

// maxOutput is the largest answer the models may give, where the pricer
// knows it.
func (sp *spender) maxOutput() int64 {
	var n int64
	for _, m := range sp.models {
		if c, ok := sp.pricer.(interface{ MaxOutput(string) (int, bool) }); ok {
			if v, ok := c.MaxOutput(m); ok {
				n = max(n, int64(v))
			}
		}
	}
	if n == 0 {
		n = defaultAnswer
	}
	return n
}

// runSpent is what the thread's model turns cost since its last user
// message.
func (sp *spender) runSpent(st ledger.State) float64 {
	turns := st.Turns()
	var usd float64
	for i := len(turns) - 1; i >= 0 && turns[i].Role != ledger.RoleUser; i-- {
		for _, a := range turns[i].Artifacts {
			if u, ok := a.(artifact.Usage); ok {
				usd += sp.cost(u)
			}
		}
	}
	return usd
}

func (sp *spender) cost(u artifact.Usage) float64 {
	model := u.Model
	if model == "" && len(sp.models) > 0 {
		model = sp.models[0]
	}
	usd, ok := sp.pricer.Cost(model, u)
	if !ok {
		// A model the pricer does not know answered: count it at the
		// priciest known rates rather than as free.
		in, out := sp.rates(u.InputTokens)
		usd = in + float64(u.OutputTokens)*out
	}
	return usd
}

// settle replaces a call's reservation with what it cost.
func (sp *spender) settle(ctx context.Context, thread string, req *provider.Request, u artifact.Usage) error {
	sp.mu.Lock()
	r, ok := sp.held[thread]
	if ok && r.req == req {
		delete(sp.held, thread)
	}
	sp.mu.Unlock()
	if !ok || r.req != req {
		return nil
	}
	actual := int64(math.Ceil(sp.cost(u) * 1e6))
	for _, name := range r.names {
		if _, _, err := sp.counter.AddCounter(ctx, name, actual-r.micro, ledger.NoLimit); err != nil {
			return fmt.Errorf("policy: record the day's spending: %w", err)
		}
	}
	return nil
}

// release gives back the reservation of a call on thread that ended
// without usage (it failed), before the thread's next call reserves.
func (sp *spender) release(ctx context.Context, thread string) {
	sp.mu.Lock()
	r, ok := sp.held[thread]
	delete(sp.held, thread)
	sp.mu.Unlock()
	if ok {
		sp.giveBack(ctx, r.names, r.micro)
	}
}

func (sp *spender) giveBack(ctx context.Context, names []string, micro int64) {
	for _, name := range names {
		_, _, _ = sp.counter.AddCounter(context.WithoutCancel(ctx), name, -micro, ledger.NoLimit)
	}
}

// imageBytes stands for a picture, as x/history counts one: 800 tokens.
const imageBytes = 4 * 800

// estimateInput bounds the tokens of a request from above: a token is at
// least two bytes of the text and schemas sent in most tokenisers (English
// runs near four), plus a few per turn.
func estimateInput(req *provider.Request) int64 {
	n := 0
	for _, t := range req.Turns {
		n += 8
		for _, a := range t.Artifacts {
			switch a := a.(type) {
			case artifact.Text:
				n += len(a.Content)
			case artifact.Reasoning:
				n += len(a.Content)
			case artifact.ToolCall:
				n += len(a.Name) + len(a.Arguments) + len(a.ID)
			case artifact.ToolResult:
				n += len(a.Content) + len(a.ToolCallID) + 2*imageBytes*len(a.Parts)
			case artifact.Usage, artifact.Finish:
				// Not sent.
			case artifact.Image:
				n += 2 * imageBytes
			default:
				if b, err := json.Marshal(a); err == nil {
					n += len(b)
				}
			}
		}
	}
	for _, t := range req.Tools {
		n += len(t.Name) + len(t.Description) + len(t.Schema)
	}
	return int64(n/2 + 16)
}
