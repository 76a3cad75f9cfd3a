package loop

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/lodeworks/lode/artifact"
	"github.com/lodeworks/lode/provider"
)

// Pricer prices what a model invocation used, in US dollars, and says
// whether the model is priced at all. x/catalog's Catalog is one.
type Pricer interface {
	Cost(model string, u artifact.Usage) (usd float64, priced bool)
}

// WithPricer prices every model turn: each artifact.Usage the provider
// reports is stored with its Model (the provider's, when it does not say),
// CostUSD and Priced, and the turn's and the run's spans carry
// lode.cost_usd.
func WithPricer(p Pricer) Option { return func(s *Step) { s.pricer = p } }

// WithMaxCost bounds what one Run spends, in US dollars. Before each
// request is sent, once every invoke option has shaped it (whatever their
// order), the request is admitted (see Admitter): its largest cost — the
// estimated input, tools included, and MaxTokens at the output price — is
// reserved against what the run has left, MaxTokens lowered (or set, see
// Quote.Cap) to what is left, and a request that cannot pay for its input
// and MinAnswerTokens of answer is refused, unsent, with a *LimitError
// (LimitCost, NextUSD set). Run also stops with one when the priced turns
// reach usd while the model still calls tools. It counts every turn of the
// run, the turns of child agents run within it included
// (a child without its own Pricer is priced with this Step's). It needs a
// Pricer and a provider that names its model (a Model() string method, or
// Models() []string for one that may answer with several): Run refuses to
// start, with an error matching ErrUnpriced, when a model it may use is not
// priced, rather than keep a limit over part of the run.
func WithMaxCost(usd float64) Option { return func(s *Step) { s.maxCost = usd } }

// ErrUnpriced matches the error Run returns at start when a cost limit is
// set and a model it would use has no price.
var ErrUnpriced = errors.New("loop: the model has no price, so the cost limit cannot be kept")

// LimitCost is the limit WithMaxCost sets; its LimitError's Used and Max
// are in millionths of a US dollar, and UsedUSD and MaxUSD in dollars.
const LimitCost Limit = "cost"

// spend adds up the cost of one run and of the child runs within it.
type spend struct {
	pricer Pricer
	max    float64 // the tree's limit, 0 for none
	mu     sync.Mutex
	usd    float64
	// reserved is what the requests in flight may cost, until they are
	// settled.
	reserved float64
}

func (sp *spend) add(usd float64) float64 {
	sp.mu.Lock()
	defer sp.mu.Unlock()
	sp.usd += usd
	return sp.usd
}

func (sp *spend) total() float64 {
	sp.mu.Lock()
	defer sp.mu.Unlock()
	return sp.usd
}

type spendKey struct{}

func spendFrom(ctx context.Context) *spend {
	sp, _ := ctx.Value(spendKey{}).(*spend)
	return sp
}

// withSpend gives ctx the run's spend: the one of an enclosing run if it
// has one, so that a child's turns count toward its caller's limit.
func (s *Step) withSpend(ctx context.Context) (context.Context, *spend) {
	if sp := spendFrom(ctx); sp != nil {
		return ctx, sp
	}
	if s.pricer == nil && s.maxCost <= 0 {
		return ctx, nil
	}
	sp := &spend{pricer: s.pricer, max: s.maxCost}
	return context.WithValue(ctx, spendKey{}, sp), sp
}

// limits returns the Pricer and the cost limit a run keeps: its own, or
// those of the run it is a child of.
func (s *Step) limits(sp *spend) (Pricer, float64) {
	pricer, max := s.pricer, s.maxCost
	if sp != nil {
		if pricer == nil {
			pricer = sp.pricer
		}
		if max <= 0 {
			max = sp.max
		}
	}
	return pricer, max
}

// modelsOf is the models prov says it may answer with.
func modelsOf(prov provider.Provider) []string {
	switch p := prov.(type) {
	case interface{ Models() []string }:
		return p.Models()
	case interface{ Model() string }:
		if m := p.Model(); m != "" {
			return []string{m}
		}
	}
	return nil
}

// checkPriced refuses a cost limit that cannot be kept.
func checkPriced(pricer Pricer, max float64, prov provider.Provider) error {
	if max == 0 {
		return nil
	}
	if math.IsNaN(max) || math.IsInf(max, 0) || max < 0 {
		return fmt.Errorf("%w: the limit is %v", ErrUnpriced, max)
	}
	if pricer == nil {
		return fmt.Errorf("%w: no Pricer was given (loop.WithPricer)", ErrUnpriced)
	}
	models := modelsOf(prov)
	if len(models) == 0 {
		return fmt.Errorf("%w: the provider does not name its model", ErrUnpriced)
	}
	for _, m := range models {
		if _, ok := pricer.Cost(m, artifact.Usage{}); !ok {
			return fmt.Errorf("%w: %q", ErrUnpriced, m)
		}
	}
	return nil
}

// price fills in each Usage of an answer and returns what they cost, and
// the name of a model it found no price for.
func (s *Step) price(ctx context.Context, prov provider.Provider, arts []artifact.Artifact) (usd float64, unpriced string) {
	sp := spendFrom(ctx)
	pricer, _ := s.limits(sp)
	if pricer == nil {
		return 0, ""
	}
	model := ""
	for i, a := range arts {
		u, ok := a.(artifact.Usage)
		if !ok {
			continue
		}
		if u.Model == "" {
			if model == "" {
				if ms := modelsOf(prov); len(ms) > 0 {
					model = ms[0]
				}
			}
			u.Model = model
		}
		u.CostUSD, u.Priced = pricer.Cost(u.Model, u)
		if !u.Priced && unpriced == "" {
			unpriced = u.Model
		}
		arts[i] = u
		usd += u.CostUSD
	}
	if sp != nil && usd != 0 {
		sp.add(usd)
	}
	return usd, unpriced
}

func costLimit(used, max float64) *LimitError {
	return &LimitError{Limit: LimitCost, Used: int64(math.Round(used * 1e6)), Max: int64(math.Round(max * 1e6)), UsedUSD: used, MaxUSD: max}
}

// meters are the instruments WithMeter records into.
type meters struct {
	tokens metric.Int64Histogram
	cost   metric.Float64Counter
}

// WithMeter records each model turn's usage into m: the tokens in
// gen_ai.client.token.usage (a histogram, by gen_ai.token.type input and
// output, as OpenTelemetry's GenAI conventions name it) and, with a
// Pricer, the dollars in lode.cost (a counter, for priced usage only).
// Both carry gen_ai.request.model. A nil m records nothing.
func WithMeter(m metric.Meter) Option {
	return func(s *Step) {
		if m == nil {
			return
		}
		tokens, err1 := m.Int64Histogram("gen_ai.client.token.usage", metric.WithUnit("{token}"),
			metric.WithDescription("Number of input and output tokens used"))
		cost, err2 := m.Float64Counter("lode.cost", metric.WithUnit("USD"),
			metric.WithDescription("US dollars the priced model turns cost"))
		if err1 == nil && err2 == nil {
			s.meters = &meters{tokens: tokens, cost: cost}
		}
	}
}

// record puts an answer's usage on the meters; a usage that does not name
// its model is prov's.
func (m *meters) record(ctx context.Context, prov provider.Provider, arts []artifact.Artifact) {
	for _, a := range arts {
		u, ok := a.(artifact.Usage)
		if !ok {
			continue
		}
		name := u.Model
		if name == "" {
			if ms := modelsOf(prov); len(ms) > 0 {
				name = ms[0]
			}
		}
		model := attribute.String("gen_ai.request.model", name)
		op := attribute.String("gen_ai.operation.name", "chat")
		m.tokens.Record(ctx, u.InputTokens, metric.WithAttributes(op, model, attribute.String("gen_ai.token.type", "input")))
		m.tokens.Record(ctx, u.OutputTokens, metric.WithAttributes(op, model, attribute.String("gen_ai.token.type", "output")))
		if u.Priced {
			m.cost.Add(ctx, u.CostUSD, metric.WithAttributes(model))
		}
	}
}
