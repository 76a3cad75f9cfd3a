package cli

import (
	"fmt"

	"github.com/lodeworks/lode/provider"
	"github.com/lodeworks/lode/x/catalog"
	"github.com/lodeworks/lode/x/history"
)

// HistoryConfig is the history: section, which keeps long threads inside
// the model's context window (see x/history). An absent or empty section
// sends the whole thread.
type HistoryConfig struct {
	// Budget is the tokens a request's history may use; 0 means the
	// model's context window less Reserve.
	Budget int `yaml:"budget"`
	// Reserve is the tokens left for the answer; 0 means 4096.
	Reserve int `yaml:"reserve"`
	// Keep is how many of the newest turns keep their tool results whole;
	// 0 means 4.
	Keep int `yaml:"keep"`
	// Blocks drops history in blocks of this many turns, so the request's
	// prefix, which the provider's prompt cache keeps, changes once per
	// block; 0 slides the window turn by turn.
	Blocks int `yaml:"blocks"`
	// Summarise compacts old turns into a summary stored in the thread,
	// rather than only leaving them out of the request.
	Summarise bool `yaml:"summarise"`
}

// historyPolicy returns the policy lode.yaml asks for, and prov wrapped to
// retry once a request the server finds too long; nil and prov when the
// section is empty.
func historyPolicy(cfg *Config, prov provider.Provider, cat *catalog.Catalog) (*history.Policy, provider.Provider, error) {
	h := cfg.History
	if h == (HistoryConfig{}) {
		return nil, prov, nil
	}
	opts := []history.Option{
		history.WithBudget(h.Budget), history.WithReserve(h.Reserve), history.WithKeep(h.Keep),
		history.WithBlocks(h.Blocks),
		history.WithModel(cfg.Model.Name), history.WithWindower(windowerOf(cfg, prov, cat)),
	}
	if h.Summarise {
		opts = append(opts, history.WithSummarizer(prov))
	}
	pol, err := history.New(opts...)
	if err != nil {
		return nil, nil, fmt.Errorf("lode.yaml: %w", err) // the history package names the section
	}
	return pol, pol.Provider(prov), nil
}

// ownWindow adapts a provider that knows the window of its one model
// (anthropic's ContextWindow()) to history.Windower, which names the model.
type ownWindow struct {
	p interface{ ContextWindow() (int, bool) }
}

func (w ownWindow) ContextWindow(string) (int, bool) { return w.p.ContextWindow() }

// windowerOf returns what history.WithWindower should ask for prov's
// context window: the catalog when catalog: in lode.yaml gives the model's
// window, else prov itself, or prov adapted (history falls back on the
// catalog).
func windowerOf(cfg *Config, prov provider.Provider, cat *catalog.Catalog) any {
	if e, ok := cfg.Catalog[cfg.Model.Name]; ok && e.Context > 0 && cat != nil {
		return cat
	}
	if w, ok := prov.(interface{ ContextWindow() (int, bool) }); ok {
		return ownWindow{w}
	}
	return prov
}
