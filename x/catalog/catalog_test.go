package catalog_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"path/filepath"
	"testing"

	"github.com/lodeworks/lode/artifact"
	"github.com/lodeworks/lode/ledger"
	"github.com/lodeworks/lode/loop"
	"github.com/lodeworks/lode/tool"
	"github.com/lodeworks/lode/x/cassette"
	"github.com/lodeworks/lode/x/catalog"
	"github.com/lodeworks/lode/x/provider/openai"
	xtool "github.com/lodeworks/lode/x/tool"
)

func TestLookupKnownModels(t *testing.T) {
	cases := []struct {
		name          string // as a user writes it
		provider, id  string // the entry it finds
		window, limit int
		input, output float64
	}{
		{"gpt-5", "openai", "gpt-5", 400000, 128000, 1.25, 10},
		{"GPT-5-mini ", "openai", "gpt-5-mini", 400000, 128000, 0.25, 2},
		// The old prefix table gave both 200k.
		{"o1-mini", "openai", "o1-mini", 128000, 65536, 1.1, 4.4},
		{"o1-preview", "openai", "o1-preview", 128000, 32768, 15, 60},
		// The old table gave it gpt-3.5-turbo's 16k.
		{"gpt-3.5-turbo-instruct", "openai", "gpt-3.5-turbo-instruct", 4096, 4096, 1.5, 2},
		{"gpt-4o-2024-08-06", "openai", "gpt-4o", 128000, 16384, 2.5, 10},
		{"claude-sonnet-4-5-20250929", "anthropic", "claude-sonnet-4-5", 200000, 0, 3, 15},
		{"claude-3-5-haiku-20241022", "anthropic", "claude-3-5-haiku-latest", 200000, 8192, 0.8, 4},
		{"gemini-2.5-flash", "google", "gemini-2.5-flash", 1048576, 65536, 0.3, 2.5},
		// A gateway's name for the model, without a host: the vendor's own.
		{"openai/gpt-5", "openai", "gpt-5", 400000, 128000, 1.25, 10},
		// A vendor part no provider lists: the model without it.
		{"acme-gateway/gpt-4", "openai", "gpt-4", 8192, 8192, 30, 60},
	}
	cat := catalog.Default()
	for _, c := range cases {
		m, ok := cat.Lookup(c.name)
		if !ok {
			t.Errorf("%q: not found", c.name)
			continue
		}
		if m.Provider != c.provider || m.Name != c.id || m.ContextWindow != c.window || m.MaxOutput != c.limit ||
			m.Prices == nil || m.Prices.Input != c.input || m.Prices.Output != c.output {
			t.Errorf("%q: %s/%s window %d output %d prices %+v", c.name, m.Provider, m.Name, m.ContextWindow, m.MaxOutput, m.Prices)
		}
	}
	if g := cat.Generated(); len(g) != len("2006-01-02") {
		t.Errorf("Generated = %q", g)
	}
}

func TestUnknownModel(t *testing.T) {
	cat := catalog.Default()
	for _, name := range []string{"", "  ", "no-such-model-xyz", "acme/no-such-model", "/", "gpt"} {
		if m, ok := cat.Lookup(name); ok {
			t.Errorf("%q found %s/%s", name, m.Provider, m.Name)
		}
		if n, ok := cat.ContextWindow(name); ok || n != 0 {
			t.Errorf("%q: window %d", name, n)
		}
		if usd, ok := cat.Cost(name, artifact.Usage{InputTokens: 1000}); ok || usd != 0 {
			t.Errorf("%q: cost %v %v", name, usd, ok)
		}
		if cat.Priced(name) {
			t.Errorf("%q priced", name)
		}
	}
}

func TestOverrides(t *testing.T) {
	base := catalog.Default()
	cat := base.With(
		catalog.Model{Name: "our-llama", ContextWindow: 32768, Prices: &catalog.Prices{Input: 0.2, Output: 0.6}},
		catalog.Model{Name: "gpt-5", ContextWindow: 272000},                         // a window only: prices kept
		catalog.Model{Name: "Claude-Sonnet-4-5", Prices: &catalog.Prices{Input: 1}}, // a negotiated price
		catalog.Model{Name: "local-free", Prices: &catalog.Prices{}},                // free, and priced
	)
	if m, ok := cat.Lookup("our-llama"); !ok || m.ContextWindow != 32768 || m.Prices.Output != 0.6 {
		t.Errorf("our-llama = %+v %v", m, ok)
	}
	if m, ok := cat.Lookup("acme/our-llama"); !ok || m.Name != "our-llama" {
		t.Errorf("acme/our-llama = %+v %v", m, ok)
	}
	if m, _ := cat.Lookup("gpt-5"); m.ContextWindow != 272000 || m.Prices == nil || m.Prices.Input != 1.25 || m.MaxOutput != 128000 {
		t.Errorf("gpt-5 = %+v", m)
	}
	if m, _ := cat.Lookup("claude-sonnet-4-5"); m.Prices.Input != 1 || m.Prices.Output != 0 || m.ContextWindow != 200000 {
		t.Errorf("claude-sonnet-4-5 = %+v", m)
	}
	if usd, ok := cat.Cost("local-free", artifact.Usage{InputTokens: 1e6, OutputTokens: 1e6}); !ok || usd != 0 {
		t.Errorf("free model: %v %v", usd, ok)
	}
	// The catalog overridden is unchanged.
	if m, _ := base.Lookup("gpt-5"); m.ContextWindow != 400000 {
		t.Errorf("With changed its receiver: %+v", m)
	}
	if _, ok := base.Lookup("our-llama"); ok {
		t.Error("With changed its receiver")
	}
	only := catalog.New(catalog.Model{Name: "m", ContextWindow: 10})
	if _, ok := only.Lookup("gpt-5"); ok {
		t.Error("New knows the default models")
	}
	if n, ok := only.ContextWindow("M"); !ok || n != 10 {
		t.Errorf("New: window %d %v", n, ok)
	}
}

func TestCostArithmetic(t *testing.T) {
	long := &catalog.Prices{Input: 3, Output: 15, CachedInput: 0.3, CacheWrite: 3.75,
		Tiers: []catalog.Tier{{Above: 200000, Input: 6, Output: 22.5, CachedInput: 0.6, CacheWrite: 7.5}}}
	reasoning := &catalog.Prices{Input: 1, Output: 4, Reasoning: 10}
	plain := &catalog.Prices{Input: 2, Output: 8}
	cases := []struct {
		name string
		p    *catalog.Prices
		u    artifact.Usage
		want float64 // in millionths of a dollar per token, summed by hand
	}{
		{"input and output", plain, artifact.Usage{InputTokens: 1000, OutputTokens: 500}, 1000*2 + 500*8},
		{"cached and written input", long, artifact.Usage{InputTokens: 1000, CachedInputTokens: 600, CacheWriteTokens: 300, OutputTokens: 10},
			100*3 + 600*0.3 + 300*3.75 + 10*15},
		{"at the tier's start: base prices", long, artifact.Usage{InputTokens: 200000, OutputTokens: 10}, 200000*3 + 10*15},
		{"above it: the whole request at the tier", long, artifact.Usage{InputTokens: 200001, CachedInputTokens: 1, OutputTokens: 10},
			200000*6 + 1*0.6 + 10*22.5},
		{"no cached price: billed as input", plain, artifact.Usage{InputTokens: 100, CachedInputTokens: 40}, 100 * 2},
		{"reasoning priced apart", reasoning, artifact.Usage{InputTokens: 10, OutputTokens: 100, ReasoningTokens: 30}, 10*1 + 70*4 + 30*10},
		{"reasoning above output is cut to it", reasoning, artifact.Usage{OutputTokens: 10, ReasoningTokens: 30}, 10 * 10},
		{"reasoning without its own price", plain, artifact.Usage{OutputTokens: 100, ReasoningTokens: 30}, 100 * 8},
		{"negative counts are none", plain, artifact.Usage{InputTokens: -5, OutputTokens: -5, CachedInputTokens: -1}, 0},
		{"cached above input", plain, artifact.Usage{InputTokens: 10, CachedInputTokens: 50}, 50 * 2},
	}
	for _, c := range cases {
		if got, want := c.p.Cost(c.u), c.want/1e6; math.Abs(got-want) > 1e-12 {
			t.Errorf("%s: cost = %.10f, want %.10f", c.name, got, want)
		}
	}
}

// A recorded session, replayed through the OpenAI adapter and the loop,
// costs what the price sheet says for the usage the server reported.
func TestRecordedSessionCost(t *testing.T) {
	prices := catalog.Prices{Input: 0.15, Output: 0.6, CachedInput: 0.075}
	// A known maximum output bounds the answer, so the cost limit sends
	// the request as recorded, without max_tokens.
	cat := catalog.Default().With(catalog.Model{Name: "gpt-test", MaxOutput: 16384, Prices: &prices})
	client := cassette.ForTest(t, filepath.Join("..", "provider", "openai", "testdata", "cassettes", "loop_tool_handler.yaml"))
	prov, err := openai.New(openai.WithAPIKey("sk-test"), openai.WithModel("gpt-test"),
		openai.WithBaseURL("http://openai.test/v1"), openai.WithHTTPClient(client))
	if err != nil {
		t.Fatal(err)
	}
	registry := tool.NewRegistry()
	for _, tl := range []tool.Tool{
		{Name: "get_weather", Description: "Weather in a city.", Schema: json.RawMessage(`{"type":"object","properties":{"city":{"type":"string"}},"required":["city"],"additionalProperties":false}`)},
		{Name: "get_time", Description: "Time in a zone.", Schema: json.RawMessage(`{"type":"object","properties":{"tz":{"type":"string"}},"required":["tz"]}`)},
	} {
		if err := registry.Register(tl, func(_ context.Context, _ tool.Sandbox, args map[string]any) (any, error) {
			return map[string]any{"tz": args["tz"], "time": "12:00"}, nil
		}); err != nil {
			t.Fatal(err)
		}
	}
	step := loop.New(loop.WithHandlers(xtool.NewHandler(registry)), loop.WithInvokeOptions(openai.WithTools(registry.Tools())),
		loop.WithPricer(cat), loop.WithMaxCost(1))
	th := ledger.NewThread(ledger.WithClock(nil))
	_ = th.Append(ledger.RoleUser, artifact.Text{Content: "Weather and time in Paris?"})
	if _, err := step.Run(t.Context(), th, prov); err != nil {
		t.Fatal(err)
	}
	var got []artifact.Usage
	for _, turn := range th.Turns() {
		for _, a := range turn.Artifacts {
			if u, ok := a.(artifact.Usage); ok {
				got = append(got, u)
			}
		}
	}
	// The recording: 50 prompt tokens (3 cached) and 20 completion, then
	// 90 (3 cached) and 8.
	want := []float64{(47*0.15 + 3*0.075 + 20*0.6) / 1e6, (87*0.15 + 3*0.075 + 8*0.6) / 1e6}
	if len(got) != len(want) {
		t.Fatalf("usages = %+v", got)
	}
	for i, u := range got {
		if !u.Priced || u.Model == "" || math.Abs(u.CostUSD-want[i]) > 1e-15 {
			t.Errorf("turn %d: %+v, want cost %v", i, u, want[i])
		}
	}
}

func TestDefaultParsesWhole(t *testing.T) {
	// Every entry of the generated file is reachable by its own name.
	cat := catalog.Default()
	for _, name := range []string{"gpt-4o-mini", "claude-opus-4-1", "gemini-2.5-pro", "deepseek-chat", "mistral-large-latest", "grok-4"} {
		if _, ok := cat.Lookup(name); !ok {
			t.Errorf("%s not found", name)
		}
	}
}

func ExampleCatalog_Cost() {
	cat := catalog.Default().With(catalog.Model{Name: "our-model", Prices: &catalog.Prices{Input: 0.5, Output: 1.5}})
	usd, priced := cat.Cost("our-model", artifact.Usage{InputTokens: 12000, OutputTokens: 800})
	fmt.Printf("$%.4f %v\n", usd, priced)
	// Output: $0.0072 true
}

// BenchmarkCost is what the loop pays per turn to price a usage: an exact
// name, and a dated name found by the rules (remembered after the first).
func BenchmarkCost(b *testing.B) {
	cat := catalog.Default()
	u := artifact.Usage{InputTokens: 1200, OutputTokens: 300, CachedInputTokens: 200}
	for _, name := range []string{"gpt-4o-mini", "claude-sonnet-4-5-20250929", "unknown-model"} {
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				cat.Cost(name, u)
			}
		})
	}
}

// BenchmarkLookupCold is a name's first lookup in a catalog, before it is
// remembered: the rules scan.
func BenchmarkLookupCold(b *testing.B) {
	base := catalog.Default()
	for _, name := range []string{"gpt-4o-mini", "claude-sonnet-4-5-20250929", "z-ai/glm-5-turbo-20260315", "unknown-model"} {
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				base.With().Lookup(name)
			}
		})
	}
}

// BenchmarkParse is what Default costs on first use.
func BenchmarkParse(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		catalog.ParseForBench()
	}
}
