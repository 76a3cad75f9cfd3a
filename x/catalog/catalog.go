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
	"time"

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
	// "google", "openrouter", …): genai-prices' id for the provider whose
	// listing was found. Where that listing lacks a window, a maximum
	// output or prices, they are the model's own vendor's.
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
	overrides map[string]Model // by lower-cased name, as given to With
	data      *data            // nil for a catalog made by New
	host      int              // the index in data.providers of ForHost's provider; -1 for none

	// found remembers what Lookup answered for each name asked, since the
	// name rules are a scan and a run asks for the same model every turn.
	found  sync.Map // string -> lookup
	nfound atomic.Int32
}

// data is the generated catalog, shared by every Catalog made from it.
type data struct {
	generated string
	providers []provider // in the source's order, as its model_match rules are tried
	byID      map[string]int
	scan      []int            // providers in the order a name no rule claims is looked for
	exacts    map[string]Model // the first listed model of each lower-cased id, in scan order
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
	api      *regexp.Regexp // the start of a base URL this provider serves
	match    *match.Rule
	fallback []int
	models   []entry
	// equals indexes the models whose rule is only equals (or an or of
	// them): each name to the first such model; others are the rest, in
	// order, which a name is matched against one by one.
	equals map[string]int
	others []int
}

type entry struct {
	rule  match.Rule
	model Model
}

// Default returns the catalog generated into this package (see Generated
// for the day; models.json names the pinned sources), parsed on first use.
func Default() *Catalog { return defaultCatalog() }

var defaultCatalog = sync.OnceValue(func() *Catalog {
	d, err := parse(modelsJSON)
	if err != nil {
		panic("catalog: the generated models.json does not parse: " + err.Error())
	}
	return &Catalog{data: d, host: -1}
})

// Generated is the day the catalog's data was generated, as YYYY-MM-DD;
// empty for a catalog made by New.
func (c *Catalog) Generated() string {
	if c.data == nil {
		return ""
	}
	return c.data.generated
}

// New returns a catalog that knows only models, by their exact names.
func New(models ...Model) *Catalog {
	return (&Catalog{host: -1}).With(models...)
}

// clone is a copy of c that remembers no lookups.
func (c *Catalog) clone(extra int) *Catalog {
	out := &Catalog{data: c.data, host: c.host, overrides: make(map[string]Model, len(c.overrides)+extra)}
	for k, m := range c.overrides {
		out.overrides[k] = m
	}
	return out
}

// With returns a copy of c that knows models first, by their exact names
// (without regard to case). For a model c already knows, the fields an
// override sets (non-zero, or non-nil Prices) replace the known ones and
// the others are kept, so an override can give only a window or only
// prices; the known ones are those of the host ForHost names, when it is
// called before or after With.
func (c *Catalog) With(models ...Model) *Catalog {
	out := c.clone(len(models))
	for _, m := range models {
		key := strings.ToLower(strings.TrimSpace(m.Name))
		if old, ok := out.overrides[key]; ok {
			m = merge(old, m)
		}
		out.overrides[key] = m
	}
	return out
}

// merge is base with the fields over sets.
func merge(base, over Model) Model {
	base.Name = over.Name
	if over.Provider != "" {
		base.Provider = over.Provider
	}
	if over.ContextWindow != 0 {
		base.ContextWindow = over.ContextWindow
	}
	if over.MaxOutput != 0 {
		base.MaxOutput = over.MaxOutput
	}
	if over.Prices != nil {
		base.Prices = over.Prices
	}
	return base
}

// ForHost returns a copy of c that knows models as the provider whose API
// is at baseURL sells them: baseURL is what a client is configured with
// ("https://openrouter.ai/api/v1"), matched as genai-prices matches it,
// by each provider's api_pattern against its start. A name that provider
// lists, by its rules, takes its window and prices (OpenRouter's
// "moonshotai/kimi-k2.5" at OpenRouter's rates, not another host's); one
// it does not list is found as without a host. A baseURL no provider
// serves (a local server, "") gives a copy of c without a host.
func (c *Catalog) ForHost(baseURL string) *Catalog {
	out := c.clone(0)
	out.host = -1
	if c.data == nil {
		return out
	}
	u := strings.TrimSpace(baseURL)
	for i := range c.data.providers {
		if api := c.data.providers[i].api; u != "" && api != nil && api.MatchString(u) {
			out.host = i
			break
		}
	}
	return out
}

// Host is the id of the provider ForHost chose ("openrouter"); "" for a
// catalog without one.
func (c *Catalog) Host() string {
	if c.host < 0 || c.data == nil {
		return ""
	}
	return c.data.providers[c.host].id
}

// preferred are the providers lode has adapters for, asked first for a
// name no provider's own rule claims.
var preferred = []string{"openai", "anthropic", "google"}

// Lookup finds a model by name, lower-cased, in this order:
//
//   - an override's exact name (With), or the name without a "vendor/"
//     part;
//   - with a host (ForHost), the host's models by the source's rules:
//     each model's match rule, then the providers the host falls back on,
//     then the name with a compact date written as the rules do
//     ("-20250929" as "-2025-09-29");
//   - the model's own vendor, as genai-prices finds it without a host:
//     the first provider whose model_match rule takes the name ("grok-3"
//     is xAI's, "deepseek-chat" DeepSeek's), then, for "vendor/name", the
//     provider named vendor with name ("moonshotai/kimi-k2.5" is Moonshot
//     AI's kimi-k2.5);
//   - every provider's models by their rules (OpenAI, Anthropic and Google
//     first, then the source's order), which finds a gateway's own names
//     ("z-ai/glm-5-turbo-20260315", OpenRouter's);
//   - the same for the name without a "vendor/" part ("acme/gpt-4" is
//     OpenAI's gpt-4), then a listed model's exact id.
//
// A listing without prices is passed over for the next one with prices
// (Google lists "gemma-3-12b-it" unpriced, OpenRouter prices it), except at
// the host: there a model the host lists without a window, a maximum
// output or prices takes them from the model's own vendor, as does one
// found at a gateway, so that OpenRouter's window-less "grok-3" still has
// xAI's window.
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
	_, rest, _ := strings.Cut(n, "/")
	over, ok := c.overrides[n]
	if !ok && rest != "" {
		over, ok = c.overrides[rest]
	}
	if !ok {
		return c.known(n, rest)
	}
	if base, found := c.known(n, rest); found {
		return merge(base, over), true
	}
	return over, true
}

// known looks n up in the generated data; rest is n without its "vendor/"
// part, or "".
func (c *Catalog) known(n, rest string) (Model, bool) {
	d := c.data
	if d == nil {
		return Model{}, false
	}
	q := query{n, dashedDate(n), rest, dashedDate(rest)}
	if c.host >= 0 {
		if m, ok := d.ruled(c.host, q.n, q.dn); ok {
			return d.fill(m, q), true
		}
	}
	// A listing without prices does not hide a priced one further on.
	var unpriced Model
	if m, ok := d.own(q); ok {
		if m.Prices != nil {
			return m, true
		}
		unpriced = m
	}
	for _, name := range [][2]string{{q.n, q.dn}, {q.rest, q.drest}} {
		if name[0] == "" {
			continue
		}
		for _, i := range d.scan {
			if m, ok := d.ruled(i, name[0], name[1]); ok {
				if m.Prices != nil {
					return d.fill(m, q), true
				}
				if unpriced.Name == "" {
					unpriced = m
				}
			}
		}
	}
	if m, ok := d.exacts[n]; ok && (m.Prices != nil || unpriced.Name == "") {
		return d.fill(m, q), true
	}
	if unpriced.Name != "" {
		return d.fill(unpriced, q), true
	}
	return Model{}, false
}

// query is a name asked, with its compact dates dashed (dn), and the same
// without its "vendor/" part ("" when it has none).
type query struct{ n, dn, rest, drest string }

// own finds n as its own vendor lists it: the first provider whose
// model_match takes n, then the provider a "vendor/" part names.
func (d *data) own(q query) (Model, bool) {
	for _, name := range [][2]string{{q.n, q.dn}, {q.rest, q.drest}} {
		if name[0] == "" {
			continue
		}
		for i := range d.providers {
			if p := &d.providers[i]; p.match != nil && p.match.Match(name[0]) {
				if m, ok := d.ruled(i, name[0], name[1]); ok {
					return m, true
				}
				break // genai-prices asks only the first
			}
		}
		if name[0] == q.n && q.rest != "" {
			vendor := q.n[:len(q.n)-len(q.rest)-1]
			if i, ok := d.byID[vendor]; ok {
				if m, ok := d.ruled(i, q.rest, q.drest); ok {
					return m, true
				}
			}
		}
	}
	return Model{}, false
}

// fill gives m what its listing leaves out (a window, a maximum output,
// prices) from the model's own vendor's listing of the name.
func (d *data) fill(m Model, q query) Model {
	if m.ContextWindow > 0 && m.MaxOutput > 0 && m.Prices != nil {
		return m
	}
	v, ok := d.own(q)
	if !ok {
		return m
	}
	if m.ContextWindow <= 0 {
		m.ContextWindow = v.ContextWindow
	}
	if m.MaxOutput <= 0 {
		m.MaxOutput = v.MaxOutput
	}
	if m.Prices == nil {
		m.Prices = v.Prices
	}
	return m
}

// ruled is genai-prices' search of provider i for n: the first of its
// models whose rule takes n, then the first in each provider it falls back
// on, then the same for dn, n with its compact dates dashed.
func (d *data) ruled(i int, n, dn string) (Model, bool) {
	if m, ok := d.ruledAs(i, n); ok {
		return m, true
	}
	if dn != n {
		return d.ruledAs(i, dn)
	}
	return Model{}, false
}

func (d *data) ruledAs(i int, n string) (Model, bool) {
	if m, ok := d.providers[i].first(n); ok {
		return m, true
	}
	for _, f := range d.providers[i].fallback {
		if m, ok := d.providers[f].first(n); ok {
			return m, true
		}
	}
	return Model{}, false
}

// first is p's first model whose rule takes n.
func (p *provider) first(n string) (Model, bool) {
	best, ok := p.equals[n]
	for _, j := range p.others {
		if ok && j > best {
			break
		}
		if p.models[j].rule.Match(n) {
			best, ok = j, true
			break
		}
	}
	if !ok {
		return Model{}, false
	}
	return p.models[best].model, true
}

// equalsOf returns the names a rule of only equals (or an or of them)
// takes, lower-cased; false for any other rule.
func equalsOf(r *match.Rule, into []string) ([]string, bool) {
	switch {
	case r.Equals != "":
		return append(into, strings.ToLower(r.Equals)), true
	case r.Or != nil:
		for i := range r.Or {
			var ok bool
			if into, ok = equalsOf(&r.Or[i], into); !ok {
				return nil, false
			}
		}
		return into, true
	}
	return nil, false
}

var compactDate = regexp.MustCompile(`-(20\d{2})(0[1-9]|1[0-2])(0[1-9]|[12]\d|3[01])(-|:|$)`)

// dashedDate writes a real date in a name as the source's rules spell it:
// -20250929 as -2025-09-29 (-20250231 is left alone).
func dashedDate(n string) string {
	if !compactDate.MatchString(n) {
		return n
	}
	return compactDate.ReplaceAllStringFunc(n, func(s string) string {
		sub := compactDate.FindStringSubmatch(s)
		day := sub[1] + "-" + sub[2] + "-" + sub[3]
		if _, err := time.Parse(time.DateOnly, day); err != nil {
			return s
		}
		return "-" + day + sub[4]
	})
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
	API      string      `json:"api"`
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

func parse(raw []byte) (*data, error) {
	var f fileJSON
	if err := json.Unmarshal(raw, &f); err != nil {
		return nil, err
	}
	d := &data{generated: f.Generated, byID: make(map[string]int, len(f.Providers))}
	for i, p := range f.Providers {
		d.byID[p.ID] = i
	}
	for _, p := range f.Providers {
		cp := provider{id: p.ID, match: p.Match, models: make([]entry, 0, len(p.Models))}
		if p.API != "" {
			re, err := regexp.Compile("^(?:" + p.API + ")")
			if err != nil {
				return nil, fmt.Errorf("%s: api: %w", p.ID, err)
			}
			cp.api = re
		}
		for _, id := range p.Fallback {
			if i, ok := d.byID[id]; ok && id != p.ID {
				cp.fallback = append(cp.fallback, i)
			}
		}
		cp.equals = make(map[string]int)
		for j, m := range p.Models {
			if names, ok := equalsOf(&m.Match, nil); ok {
				for _, n := range names {
					if _, dup := cp.equals[n]; !dup {
						cp.equals[n] = j
					}
				}
			} else {
				cp.others = append(cp.others, j)
			}
			prices, err := toPrices(m.Prices)
			if err != nil {
				return nil, fmt.Errorf("%s/%s: %w", p.ID, m.ID, err)
			}
			cp.models = append(cp.models, entry{
				rule:  m.Match,
				model: Model{Name: m.ID, Provider: p.ID, ContextWindow: m.Context, MaxOutput: m.MaxOutput, Prices: prices},
			})
		}
		d.providers = append(d.providers, cp)
	}
	d.scan = make([]int, len(d.providers))
	for i := range d.scan {
		d.scan[i] = i
	}
	slices.SortStableFunc(d.scan, func(a, b int) int { return rank(d.providers[a].id) - rank(d.providers[b].id) })
	d.exacts = make(map[string]Model)
	for _, i := range d.scan {
		for _, e := range d.providers[i].models {
			if k := strings.ToLower(e.model.Name); d.exacts[k].Name == "" {
				d.exacts[k] = e.model
			}
		}
	}
	return d, nil
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
