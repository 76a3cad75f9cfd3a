package cli

import (
	"errors"
	"fmt"
	"math"
	"sort"
	"strings"

	"github.com/lodeworks/lode/artifact"
	"github.com/lodeworks/lode/loop"
	"github.com/lodeworks/lode/x/catalog"
	"github.com/lodeworks/lode/x/policy"
	"github.com/lodeworks/lode/x/provider/anthropic"
	"github.com/lodeworks/lode/x/provider/gemini"
	"github.com/lodeworks/lode/x/provider/openai"
)

// CatalogEntry is one model under catalog: in lode.yaml: what lode's
// catalog does not know of it, or knows otherwise. Prices are US dollars
// per million tokens; an entry that gives input or output prices the
// model (the others default to 0, or for cached_input, cache_write and
// reasoning to the input and output prices).
type CatalogEntry struct {
	Context     int      `yaml:"context"`
	MaxOutput   int      `yaml:"max_output"`
	Input       *float64 `yaml:"input"`
	Output      *float64 `yaml:"output"`
	CachedInput *float64 `yaml:"cached_input"`
	CacheWrite  *float64 `yaml:"cache_write"`
	Reasoning   *float64 `yaml:"reasoning"`
}

// checkCost refuses a max_cost or catalog: entry lode cannot keep.
func checkCost(cfg *Config) error {
	f := cfg.file
	if cfg.MaxCost < 0 || math.IsNaN(cfg.MaxCost) || math.IsInf(cfg.MaxCost, 0) {
		return fmt.Errorf("%s: max_cost must be a number of US dollars, not negative (0 means no limit)", f.at("max_cost"))
	}
	for _, name := range sortedKeys(cfg.Catalog) {
		e := cfg.Catalog[name]
		where := f.at("catalog." + name)
		if strings.TrimSpace(name) == "" {
			return fmt.Errorf("%s: catalog: a model needs a name", where)
		}
		if e.Context < 0 || e.MaxOutput < 0 {
			return fmt.Errorf("%s: catalog: %s: context and max_output must not be negative", where, name)
		}
		for key, p := range map[string]*float64{"input": e.Input, "output": e.Output, "cached_input": e.CachedInput, "cache_write": e.CacheWrite, "reasoning": e.Reasoning} {
			if p != nil && (*p < 0 || math.IsNaN(*p) || math.IsInf(*p, 0)) {
				return fmt.Errorf("%s: catalog: %s: %s must be a price in US dollars per million tokens, not negative", where, name, key)
			}
		}
	}
	return nil
}

func sortedKeys(m map[string]CatalogEntry) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// catalogOf is lode's catalog with lode.yaml's catalog: over it, at the
// host the model is served from (OpenRouter's rates for a model asked of
// OpenRouter), when every fallback model is asked of the same host; with
// fallbacks at other hosts, models are known by name alone.
func catalogOf(cfg *Config) *catalog.Catalog {
	cat := catalog.Default().ForHost(baseURLOf(cfg.Model))
	for _, f := range cfg.Model.Fallback {
		if catalog.Default().ForHost(baseURLOf(f)).Host() != cat.Host() {
			cat = catalog.Default()
			break
		}
	}
	if len(cfg.Catalog) == 0 {
		return cat
	}
	models := make([]catalog.Model, 0, len(cfg.Catalog))
	for _, name := range sortedKeys(cfg.Catalog) {
		e := cfg.Catalog[name]
		m := catalog.Model{Name: name, ContextWindow: e.Context, MaxOutput: e.MaxOutput}
		if e.Input != nil || e.Output != nil || e.CachedInput != nil || e.CacheWrite != nil || e.Reasoning != nil {
			val := func(p *float64) float64 {
				if p == nil {
					return 0
				}
				return *p
			}
			m.Prices = &catalog.Prices{Input: val(e.Input), Output: val(e.Output), CachedInput: val(e.CachedInput),
				CacheWrite: val(e.CacheWrite), Reasoning: val(e.Reasoning)}
		}
		models = append(models, m)
	}
	return cat.With(models...)
}

// baseURLOf is the URL m's adapter talks to: base_url, else its
// provider's default.
func baseURLOf(m ModelConfig) string {
	if m.BaseURL != "" {
		return m.BaseURL
	}
	switch m.Provider {
	case providerAnthropic:
		return anthropic.DefaultBaseURL
	case providerGemini:
		return gemini.DefaultBaseURL
	}
	return openai.DefaultBaseURL
}

// costOptions are the loop options that price a door's turns and keep
// max_cost.
func costOptions(cfg *Config, cat *catalog.Catalog) []loop.Option {
	opts := []loop.Option{loop.WithPricer(cat)}
	if cfg.MaxCost > 0 {
		opts = append(opts, loop.WithMaxCost(cfg.MaxCost))
	}
	return opts
}

// counterOf is where the day's spending is counted for the policy's
// usd_per_day limits: the store the threads are kept in (a folder, SQLite
// or PostgreSQL), whose counters every process sharing it sees; nil
// without one, which refuses those limits.
func counterOf(spec string) *spendCounter {
	if spec == "" {
		return nil
	}
	return &spendCounter{spec: spec}
}

// explainCost says what to do about a cost limit, or nil for another error.
func explainCost(err error, cfg *Config) error {
	var se *policy.SpendError
	if errors.As(err, &se) {
		return fmt.Errorf("the run was stopped by the policy: %s has spent $%.4f of its $%.4f per %s", se.Scope, se.SpentUSD, se.LimitUSD, se.Period)
	}
	if errors.Is(err, policy.ErrSpendSetup) {
		if strings.Contains(err.Error(), "no shared counters") {
			return fmt.Errorf("%v: a usd_per_day limit counts the day's spending in the ledger folder; give one with --store or store: in lode.yaml", err)
		}
		return fmt.Errorf("%v: give the model's prices under catalog: in lode.yaml (US dollars per million tokens)", err)
	}
	var limit *loop.LimitError
	if errors.As(err, &limit) && limit.Limit == loop.LimitCost && limit.NextUSD > 0 {
		return fmt.Errorf("the run was stopped at its cost limit before a request that may cost $%.4f: $%.4f of $%.4f spent (--max-cost, or max_cost in lode.yaml)", limit.NextUSD, limit.UsedUSD, limit.MaxUSD)
	}
	if errors.As(err, &limit) && limit.Limit == loop.LimitCost {
		return fmt.Errorf("the run was stopped at its cost limit: $%.4f of $%.4f spent, with the model still calling tools (--max-cost, or max_cost in lode.yaml)", limit.UsedUSD, limit.MaxUSD)
	}
	if errors.Is(err, loop.ErrUnpriced) {
		return fmt.Errorf("%v: a cost limit needs the model's prices; give them under catalog: in lode.yaml (e.g. catalog: {%s: {input: 0.5, output: 1.5}}, US dollars per million tokens), or drop --max-cost and max_cost", err, modelOrM(cfg))
	}
	return nil
}

func modelOrM(cfg *Config) string {
	if cfg.Model.Name != "" {
		return cfg.Model.Name
	}
	return "MODEL"
}

// spent adds up the usage of a run or a chat, for the line printed at its
// end.
type spent struct {
	usage    artifact.Usage
	usd      float64
	unpriced string // a model that reported usage without a price
	turns    int
}

// add counts an answer's usage.
func (s *spent) add(u artifact.Usage) {
	s.count(u)
	s.turns++
}

// count adds u, an answer's or a call's made for a turn (a history
// summary, loop.UsageEvent), to what was spent.
func (s *spent) count(u artifact.Usage) {
	s.usage.InputTokens += u.InputTokens
	s.usage.OutputTokens += u.OutputTokens
	s.usage.CachedInputTokens += u.CachedInputTokens
	s.usage.ReasoningTokens += u.ReasoningTokens
	s.usd += u.CostUSD
	if !u.Priced && s.unpriced == "" {
		s.unpriced = u.Model
		if s.unpriced == "" {
			s.unpriced = "the model"
		}
	}
}

// line says what was spent: tokens in (cached), out (reasoning), and the
// cost or why there is none; "" when no usage was reported.
func (s *spent) line(what string) string {
	if s.turns == 0 {
		return ""
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s: %s tokens in", what, thousands(s.usage.InputTokens))
	if s.usage.CachedInputTokens > 0 {
		fmt.Fprintf(&b, " (%s cached)", thousands(s.usage.CachedInputTokens))
	}
	fmt.Fprintf(&b, ", %s out", thousands(s.usage.OutputTokens))
	if s.usage.ReasoningTokens > 0 {
		fmt.Fprintf(&b, " (%s reasoning)", thousands(s.usage.ReasoningTokens))
	}
	if s.unpriced != "" {
		fmt.Fprintf(&b, "; no price for %s (catalog: in lode.yaml gives one)", s.unpriced)
		if s.usd > 0 {
			fmt.Fprintf(&b, ", $%.4f for the rest", s.usd)
		}
	} else {
		fmt.Fprintf(&b, ", $%.4f", s.usd)
	}
	return b.String()
}

func thousands(n int64) string {
	s := fmt.Sprint(n)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	if neg {
		s = "-" + s
	}
	return s
}
