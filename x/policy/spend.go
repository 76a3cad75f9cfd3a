package policy

import (
	"context"
	"errors"
	"fmt"
	"math"
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
		e.spend = &spender{counter: counter, pricer: pricer, models: models, now: time.Now}
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
}

// reserveTries is how often a call tries to reserve on the day's counters,
// each time sized to what the last refusal said was left.
const reserveTries = 4

// SpendAdmitter keeps the spend limits before each model call. It is a
// loop.Admitter, and an invoke option whose ApplyInvoke does nothing, so
// that it may go to loop.WithInvokeOptions in any place among the other
// options, or to loop.WithAdmitters.
type SpendAdmitter struct{ e *Enforcer }

// SpendLimit returns what keeps the spend limits before each model call
// (give it to loop.WithInvokeOptions or loop.WithAdmitters). The loop asks
// it once every invoke option has shaped the request, whatever their
// order, so its estimate covers the whole request: the system prompt, the
// history as the history policy shortened it, every tool offered (name,
// description, schema), and the answer at the output price (see
// loop.EstimateInput and loop.Quote).
//
// It refuses the call, before it is sent, with a *SpendError when a limit
// cannot pay for the input and loop.MinAnswerTokens of answer. Otherwise it
// lowers the request's MaxTokens to what every limit can pay for — and
// sets it when the request had none and the catalog knows no maximum
// output for the models, so that the server never answers past what was
// counted — and reserves that largest cost on the day's counters,
// each under its limit, so that runs and processes sharing a store never
// pass a daily limit together. When the answer is known the reservation is
// settled: what the answer's usage cost replaces it; a call that failed
// before anything arrived gives it back, and one that failed midway keeps
// it (the server may bill what it streamed). Without WithSpend, or for a
// caller no usd_ limit binds, it does nothing.
func (e *Enforcer) SpendLimit() *SpendAdmitter { return &SpendAdmitter{e: e} }

// ApplyInvoke does nothing: the limits are kept when the loop admits the
// resolved request (Admit).
func (*SpendAdmitter) ApplyInvoke(context.Context, ledger.State, *provider.Request) error {
	return nil
}

// Admit keeps the limits for req, which every invoke option has shaped;
// est is its input estimate.
func (a *SpendAdmitter) Admit(ctx context.Context, st ledger.State, req *provider.Request, est loop.Estimate) (loop.Settle, error) {
	return a.e.reserve(ctx, st, req, est)
}

// SpendRecorder returns a handler that does nothing: SpendLimit settles
// each call itself when the loop's stream ends.
//
// Deprecated: drop it; SpendLimit alone keeps the limits.
func (e *Enforcer) SpendRecorder() loop.Handler {
	return loop.HandlerFunc(func(context.Context, artifact.Artifact, loop.Emitter) error { return nil })
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

func (e *Enforcer) reserve(ctx context.Context, st ledger.State, req *provider.Request, est loop.Estimate) (loop.Settle, error) {
	sp := e.spend
	if sp == nil {
		return nil, nil
	}
	day := sp.now().UTC().Format(time.DateOnly)
	bounds := e.bounds(st, day)
	if len(bounds) == 0 {
		return nil, nil
	}
	if sp.pricer == nil || len(sp.models) == 0 {
		return nil, fmt.Errorf("%w: no prices were given (policy.WithSpend)", ErrSpendSetup)
	}
	for _, m := range sp.models {
		if _, ok := sp.pricer.Cost(m, artifact.Usage{}); !ok {
			return nil, fmt.Errorf("%w: the model %q has no price", ErrSpendSetup, m)
		}
	}
	for _, b := range bounds {
		if b.counter != "" && sp.counter == nil {
			return nil, fmt.Errorf("%w: %s has a daily limit and the store keeps no shared counters (ledger.Counter)", ErrSpendSetup, b.scope)
		}
	}
	q := est.Quote(req, sp.pricer, sp.models...)
	// What each limit has spent: the run's from the thread; a day's is
	// taken as nothing until its counter says otherwise — the reservation
	// itself is checked against the limit, and a refusal says the total —
	// so that the usual call costs one write per counter, not a read too.
	spent := make([]float64, len(bounds))
	known := make([]bool, len(bounds))
	runSpent := sp.runSpent(st)
	for i, b := range bounds {
		if b.counter == "" {
			spent[i], known[i] = runSpent, true
		}
	}
	for try := 1; ; try++ {
		room := math.Inf(1)
		for i, b := range bounds {
			if _, ok := q.Fit(b.usd - spent[i]); !ok {
				if !known[i] {
					total, _, err := sp.counter.AddCounter(ctx, b.counter, 0, ledger.NoLimit)
					if err != nil {
						return nil, fmt.Errorf("policy: read the day's spending: %w", err)
					}
					spent[i] = float64(total) / 1e6
				}
				return nil, &SpendError{Scope: b.scope, Period: b.period, SpentUSD: spent[i], LimitUSD: b.usd}
			}
			room = min(room, b.usd-spent[i])
		}
		answer, _ := q.Fit(room)
		micro := int64(math.Ceil(q.Cost(answer) * 1e6))
		names, refused, total, err := sp.take(ctx, bounds, micro)
		if err != nil {
			return nil, err
		}
		if refused >= 0 {
			// The day has less left than was asked: size the call to
			// what it has, and try again.
			spent[refused], known[refused] = float64(total)/1e6, true
			if try < reserveTries {
				continue
			}
			b := bounds[refused]
			return nil, &SpendError{Scope: b.scope, Period: b.period, SpentUSD: spent[refused], LimitUSD: b.usd}
		}
		q.Cap(req, answer)
		if len(names) == 0 {
			return nil, nil
		}
		return func(ctx context.Context, answer []artifact.Artifact, err error) {
			sp.settle(ctx, names, micro, answer, err)
		}, nil
	}
}

// take reserves micro on every daily counter, each under its limit. A
// counter that refuses gives back what the others took; refused is its
// index in bounds (-1 when none refused), and total what it holds.
func (sp *spender) take(ctx context.Context, bounds []bound, micro int64) (names []string, refused int, total int64, err error) {
	for i, b := range bounds {
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
			return nil, -1, 0, fmt.Errorf("policy: reserve the day's spending: %w", err)
		}
		return nil, i, total, nil
	}
	return names, -1, 0, nil
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
		q := loop.Estimate{InputTokens: u.InputTokens}.Quote(&provider.Request{MaxTokens: 1}, sp.pricer, sp.models...)
		usd = q.InputUSD + float64(u.OutputTokens)*q.AnswerTokenUSD
	}
	return usd
}

// settle replaces a call's reservation of micro on the named counters
// with what its answer cost. A call that failed before anything arrived
// gives the reservation back; one that failed midway, or whose answer
// reports no usage, keeps it: what it cost is not known to be less.
func (sp *spender) settle(ctx context.Context, names []string, micro int64, answer []artifact.Artifact, failed error) {
	var usd float64
	reported := false
	for _, a := range answer {
		if u, ok := a.(artifact.Usage); ok {
			reported = true
			usd += sp.cost(u)
		}
	}
	var delta int64
	switch {
	case reported:
		delta = int64(math.Ceil(usd*1e6)) - micro
	case failed != nil && !started(failed) && len(answer) == 0:
		delta = -micro
	default:
		return
	}
	for _, name := range names {
		// Settled even when the turn's context ended: the spending
		// happened.
		_, _, _ = sp.counter.AddCounter(context.WithoutCancel(ctx), name, delta, ledger.NoLimit)
	}
}

// started says whether a failed call got anything from its server: a
// failure that is not the provider's (a later limit refused the call)
// sent nothing.
func started(err error) bool {
	var pe *loop.ProviderError
	return errors.As(err, &pe) && (pe.Started || len(pe.Partial) > 0)
}

func (sp *spender) giveBack(ctx context.Context, names []string, micro int64) {
	for _, name := range names {
		_, _, _ = sp.counter.AddCounter(context.WithoutCancel(ctx), name, -micro, ledger.NoLimit)
	}
}
