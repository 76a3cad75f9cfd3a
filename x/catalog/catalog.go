package catalog

import (
	_ "embed"
	"encoding/json"
	"fmt"
	"math"
	"regexp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/lodeworks/lode/artifact"
	"github.com/lodeworks/lode/x/catalog/internal/match"
)

//go:generate go run ./internal/gen -o models.json

//go:embed models.json
var modelsJSON []byte

// Model is what the catalog knows of one model.
type Model struct {
	// Name is the model's name as its provider spells it.
	Name string
	// Provider names who serves it at these prices ("openai", "anthropic",
	// "google", "openrouter", …).
	Provider string
	// ContextWindow is how many tokens a request and its answer may hold;
	// 0 when unknown.
	ContextWindow int
	// MaxOutput is how many tokens one answer may hold; 0 when unknown.
	MaxOutput int
	// Prices are nil when the model is not priced.
	Prices *Prices
}

// Prices are in US dollars per million tokens. A zero CachedInput or
// CacheWrite means those tokens are billed as Input, and a zero Reasoning
// that reasoning tokens are billed as Output; a model that is free has a
// Prices of zeros, not a nil one.
type Prices struct {
	Input       float64
	Output      float64
	CachedInput float64
	CacheWrite  float64
	Reasoning   float64
	// Tiers replace the prices above for a request whose input tokens
	// exceed a tier's Above: the tier with the highest such Above applies
	// to the whole request, as long-context prices do.
	Tiers []Tier
}

// Tier is the prices of a request whose input exceeds Above tokens.
type Tier struct {
	Above       int64
	Input       float64
	Output      float64
	CachedInput float64
	CacheWrite  float64
	Reasoning   float64
}

// rates returns the prices that apply to a request of input tokens.
func (p *Prices) rates(input int64) Tier {
	t := Tier{Input: p.Input, Output: p.Output, CachedInput: p.CachedInput, CacheWrite: p.CacheWrite, Reasoning: p.Reasoning}
	best := int64(-1)
	for _, tier := range p.Tiers {
		if input > tier.Above && tier.Above > best {
			t, best = tier, tier.Above
		}
	}
	return t
}

// Cost is what usage u costs at p, in US dollars. InputTokens holds the
// cached and cache-written tokens, and OutputTokens the reasoning ones, as
// artifact.Usage says.
func (p *Prices) Cost(u artifact.Usage) float64 {
	r := p.rates(u.InputTokens)
	cached, write := max(u.CachedInputTokens, 0), max(u.CacheWriteTokens, 0)
	plain := max(u.InputTokens-cached-write, 0)
	cost := float64(plain) * r.Input
	cost += float64(cached) * or(r.CachedInput, r.Input)
	cost += float64(write) * or(r.CacheWrite, r.Input)
	out := max(u.OutputTokens, 0)
	if r.Reasoning != 0 {
		reasoning := min(max(u.ReasoningTokens, 0), out)
		cost += float64(reasoning) * r.Reasoning
		out -= reasoning
	}
	cost += float64(out) * r.Output
	return cost / 1e6
}

func or(v, fallback float64) float64 {
	if v != 0 {
		return v
	}
	return fallback
}

// Catalog answers what a model's window and prices are. Its methods are
// safe for concurrent use; a Catalog does not change once made.
type Catalog struct {
	overrides map[string]Model // by lower-cased name
	providers []provider
	exacts    map[string]Model // the first listed model of each lower-cased name
	generated string

	// found remembers what Lookup answered for each name asked, since the
	// name rules are a scan and a run asks for the same model every turn.
	found  sync.Map // string -> lookup
	nfound atomic.Int32
}

// maxFound bounds the names remembered, as a server names the model that
// answered and could name a new one each time.
const maxFound = 1024

type lookup struct {
	m  Model
	ok bool
}

type provider struct {
	id       string
	match    *match.Rule
	fallback []string
	models   []entry
}

type entry struct {
	lower string // the name, lower-cased
	rule  match.Rule
	model Model
}

// Default returns the catalog generated into this package (see Generated
// for the day and Sources for where it came from), parsed on first use.
func Default() *Catalog { return defaultCatalog() }

var defaultCatalog = sync.OnceValue(func() *Catalog {
	c, err := parse(modelsJSON)
	if err != nil {
		panic("catalog: the generated models.json does not parse: " + err.Error())
	}
	return c
})

// Generated is the day the catalog's data was generated, as YYYY-MM-DD;
// empty for a catalog made by New.
func (c *Catalog) Generated() string { return c.generated }

// New returns a catalog that knows only models, by their exact names.
func New(models ...Model) *Catalog {
	return (&Catalog{}).With(models...)
}

// With returns a copy of c that knows models first, by their exact names
// (without regard to case). For a model c already knows, the fields an
// override sets (non-zero, or non-nil Prices) replace the known ones and
// the others are kept, so an override can give only a window or only
// prices.
func (c *Catalog) With(models ...Model) *Catalog {
	out := &Catalog{providers: c.providers, exacts: c.exacts, generated: c.generated, overrides: make(map[string]Model, len(c.overrides)+len(models))}
	for k, m := range c.overrides {
		out.overrides[k] = m
	}
	for _, m := range models {
		key := strings.ToLower(strings.TrimSpace(m.Name))
		base, ok := out.lookup(m.Name)
		if !ok {
			out.overrides[key] = m
			continue
		}
		base.Name = m.Name
		if m.Provider != "" {
			base.Provider = m.Provider
		}
		if m.ContextWindow != 0 {
			base.ContextWindow = m.ContextWindow
		}
		if m.MaxOutput != 0 {
			base.MaxOutput = m.MaxOutput
		}
		if m.Prices != nil {
			base.Prices = m.Prices
		}
		out.overrides[key] = base
	}
	return out
}

// preferred are the providers lode has adapters for, asked first when a
// name is in several providers' lists.
var preferred = []string{"openai", "anthropic", "google"}

// Lookup finds a model by name: an override's exact name, then a listed
// model's exact name, then the name without a "vendor/" part as gateways
// write it ("openai/gpt-5"), then the source's own name rules, which take
// dated and suffixed names ("claude-sonnet-4-5-20250929", "gpt-4o-mini-
// 2024-07-18") to their model.
func (c *Catalog) Lookup(name string) (Model, bool) {
	if v, ok := c.found.Load(name); ok {
		l := v.(lookup)
		return l.m, l.ok
	}
	m, ok := c.lookup(name)
	if c.nfound.Add(1) <= maxFound {
		c.found.Store(name, lookup{m, ok})
	}
	return m, ok
}

func (c *Catalog) lookup(name string) (Model, bool) {
	n := strings.ToLower(strings.TrimSpace(name))
	if n == "" {
		return Model{}, false
	}
	if m, ok := c.overrides[n]; ok {
		return m, true
	}
	if m, ok := c.exact(n); ok {
		return m, true
	}
	if vendor, rest, ok := strings.Cut(n, "/"); ok && rest != "" {
		if m, ok := c.overrides[rest]; ok {
			return m, true
		}
		if m, ok := c.exact(rest); ok {
			return m, true
		}
		if p := c.provider(vendor); p != nil {
			if m, ok := c.ruled(p, rest); ok {
				return m, true
			}
		}
		n = rest
	}
	if m, ok := c.byRules(n); ok {
		return m, true
	}
	if d := dashedDate(n); d != n {
		return c.byRules(d)
	}
	return Model{}, false
}

func (c *Catalog) exact(n string) (Model, bool) {
	m, ok := c.exacts[n]
	return m, ok
}

func (c *Catalog) provider(id string) *provider {
	for i := range c.providers {
		if c.providers[i].id == id {
			return &c.providers[i]
		}
	}
	return nil
}

// byRules asks each provider whose own rule takes n, in order, for the
// first model whose rule does.
func (c *Catalog) byRules(n string) (Model, bool) {
	for i := range c.providers {
		p := &c.providers[i]
		if p.match == nil || !p.match.Match(n) {
			continue
		}
		if m, ok := c.ruled(p, n); ok {
			return m, true
		}
	}
	return Model{}, false
}

func (c *Catalog) ruled(p *provider, n string) (Model, bool) {
	for j := range p.models {
		if p.models[j].rule.Match(n) {
			return p.models[j].model, true
		}
	}
	for _, id := range p.fallback {
		if f := c.provider(id); f != nil && f != p {
			for j := range f.models {
				if f.models[j].rule.Match(n) {
					return f.models[j].model, true
				}
			}
		}
	}
	return Model{}, false
}

var compactDate = regexp.MustCompile(`-(20\d{2})(0[1-9]|1[0-2])(0[1-9]|[12]\d|3[01])(-|:|$)`)

// dashedDate writes a date in a name as the source's rules spell it:
// -20250929 as -2025-09-29.
func dashedDate(n string) string {
	return compactDate.ReplaceAllString(n, "-$1-$2-$3$4")
}

// ContextWindow returns the context window of the named model, so that a
// Catalog serves as x/history's Windower.
func (c *Catalog) ContextWindow(model string) (int, bool) {
	m, ok := c.Lookup(model)
	if !ok || m.ContextWindow <= 0 {
		return 0, false
	}
	return m.ContextWindow, true
}

// MaxOutput returns the most tokens one answer of the named model may
// hold, where the catalog knows it.
func (c *Catalog) MaxOutput(model string) (int, bool) {
	m, ok := c.Lookup(model)
	if !ok || m.MaxOutput <= 0 {
		return 0, false
	}
	return m.MaxOutput, true
}

// Cost returns what u costs with the named model, in US dollars, and
// whether the model is priced; an unpriced model costs 0 and false.
func (c *Catalog) Cost(model string, u artifact.Usage) (float64, bool) {
	m, ok := c.Lookup(model)
	if !ok || m.Prices == nil {
		return 0, false
	}
	return m.Prices.Cost(u), true
}

// Priced reports whether the named model has prices, for a caller that
// must refuse a spend limit it cannot keep.
func (c *Catalog) Priced(model string) bool {
	m, ok := c.Lookup(model)
	return ok && m.Prices != nil
}

// The generated file's shapes.
type fileJSON struct {
	Generated string         `json:"generated"`
	Providers []providerJSON `json:"providers"`
}

type providerJSON struct {
	ID       string      `json:"id"`
	Match    *match.Rule `json:"match"`
	Fallback []string    `json:"fallback"`
	Models   []modelJSON `json:"models"`
}

type modelJSON struct {
	ID        string              `json:"id"`
	Match     match.Rule          `json:"match"`
	Context   int                 `json:"context"`
	MaxOutput int                 `json:"max_output"`
	Prices    map[string]rateJSON `json:"prices"`
}

// rateJSON is a price: a number, or a base with tiers.
type rateJSON struct {
	Base  float64 `json:"base"`
	Tiers []struct {
		Start int64   `json:"start"`
		Price float64 `json:"price"`
	} `json:"tiers"`
}

func (r *rateJSON) UnmarshalJSON(b []byte) error {
	if len(b) > 0 && b[0] != '{' {
		return json.Unmarshal(b, &r.Base)
	}
	type plain rateJSON
	return json.Unmarshal(b, (*plain)(r))
}

func parse(data []byte) (*Catalog, error) {
	var f fileJSON
	if err := json.Unmarshal(data, &f); err != nil {
		return nil, err
	}
	c := &Catalog{generated: f.Generated}
	for _, p := range f.Providers {
		cp := provider{id: p.ID, match: p.Match, fallback: p.Fallback, models: make([]entry, 0, len(p.Models))}
		for _, m := range p.Models {
			prices, err := toPrices(m.Prices)
			if err != nil {
				return nil, fmt.Errorf("%s/%s: %w", p.ID, m.ID, err)
			}
			cp.models = append(cp.models, entry{
				lower: strings.ToLower(m.ID),
				rule:  m.Match,
				model: Model{Name: m.ID, Provider: p.ID, ContextWindow: m.Context, MaxOutput: m.MaxOutput, Prices: prices},
			})
		}
		c.providers = append(c.providers, cp)
	}
	slices.SortStableFunc(c.providers, func(a, b provider) int { return rank(a.id) - rank(b.id) })
	c.exacts = make(map[string]Model)
	for _, p := range c.providers {
		for _, e := range p.models {
			if _, dup := c.exacts[e.lower]; !dup {
				c.exacts[e.lower] = e.model
			}
		}
	}
	return c, nil
}

func rank(id string) int {
	if i := slices.Index(preferred, id); i >= 0 {
		return i
	}
	return len(preferred)
}

// toPrices turns the source's per-price tiers into whole tiers: at each
// start any price has, every price as it stands above that start.
func toPrices(in map[string]rateJSON) (*Prices, error) {
	if len(in) == 0 {
		return nil, nil
	}
	at := func(key string, input int64) float64 {
		r := in[key]
		price, best := r.Base, int64(-1)
		for _, t := range r.Tiers {
			if input > t.Start && t.Start > best {
				price, best = t.Price, t.Start
			}
		}
		return price
	}
	for k, r := range in {
		if math.IsNaN(r.Base) || r.Base < 0 {
			return nil, fmt.Errorf("price %s is %v", k, r.Base)
		}
	}
	p := &Prices{Input: at("input", 0), Output: at("output", 0), CachedInput: at("cached_input", 0), CacheWrite: at("cache_write", 0), Reasoning: at("reasoning", 0)}
	var starts []int64
	for _, r := range in {
		for _, t := range r.Tiers {
			starts = append(starts, t.Start)
		}
	}
	slices.Sort(starts)
	for _, s := range slices.Compact(starts) {
		p.Tiers = append(p.Tiers, Tier{Above: s, Input: at("input", s+1), Output: at("output", s+1),
			CachedInput: at("cached_input", s+1), CacheWrite: at("cache_write", s+1), Reasoning: at("reasoning", s+1)})
	}
	return p, nil
}
