package gemini

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/lodeworks/lode/artifact"
	"github.com/lodeworks/lode/ledger"
	"github.com/lodeworks/lode/loop"
	"github.com/lodeworks/lode/tool"
	xtool "github.com/lodeworks/lode/x/tool"
)

// The seed's wiring end to end: a registry, the x/tool Handler and
// loop.Run. Gemini thinks, calls two tools at once (the first call signed,
// one with an argument of the wrong type), gets both results, and answers.
// The ledger keeps the signature through a JSON round trip, and the second
// request sends it back on the same part.
func TestLoopWithToolHandler(t *testing.T) {
	const sig = "EqQBCkYIBxgCKkBsaWtlIGEgcmVhbCBzaWduYXR1cmU="
	f := newFake(t,
		reply{sse: true, body: sse(
			`{"candidates":[{"content":{"parts":[{"text":"Need weather and time.","thought":true}],"role":"model"}}],"usageMetadata":{"promptTokenCount":50,"totalTokenCount":50}}`,
			`{"candidates":[{"content":{"parts":[{"functionCall":{"name":"get_weather","args":{"city":"Paris"}},"thoughtSignature":"`+sig+`"},{"functionCall":{"name":"get_time","args":{"tz":7}}}],"role":"model"},"finishReason":"STOP"}],"usageMetadata":{"promptTokenCount":50,"candidatesTokenCount":12,"thoughtsTokenCount":40,"totalTokenCount":102}}`,
		)},
		reply{sse: true, body: sse(`{"candidates":[{"content":{"parts":[{"text":"Sunny in Paris; ask me the time again with a zone name."}],"role":"model"},"finishReason":"STOP"}],"usageMetadata":{"promptTokenCount":120,"candidatesTokenCount":14,"totalTokenCount":134}}`)},
	)
	registry := tool.NewRegistry()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(registry.Register(tool.Tool{Name: "get_weather", Description: "Weather in a city.", Schema: []byte(`{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}`)},
		func(_ context.Context, _ tool.Sandbox, args map[string]any) (any, error) {
			return fmt.Sprintf("sunny in %v", args["city"]), nil
		}))
	must(registry.Register(tool.Tool{Name: "get_time", Description: "Time in a zone.", Schema: []byte(`{"type":"object","properties":{"tz":{"type":"string"}},"required":["tz"]}`)},
		func(_ context.Context, _ tool.Sandbox, args map[string]any) (any, error) { return "12:00", nil }))
	step := loop.New(loop.WithHandlers(xtool.NewHandler(registry)), loop.WithInvokeOptions(WithTools(registry.Tools())))
	th := ledger.NewThread()
	_ = th.Append(ledger.RoleUser, artifact.Text{Content: "Weather and time in Paris?"})
	p := newTestProvider(t, f, WithThoughts(true))
	if _, err := step.Run(t.Context(), th, p); err != nil {
		t.Fatal(err)
	}
	turns := th.Turns()
	if len(turns) != 4 || turns[3].Role != ledger.RoleAssistant {
		t.Fatalf("%d turns: %#v", len(turns), turns)
	}
	// The assistant turn as a store keeps it.
	for _, a := range turns[1].Artifacts {
		b, err := artifact.Marshal(a)
		must(err)
		back, err := artifact.Unmarshal(b)
		must(err)
		if r, ok := back.(artifact.Reasoning); ok && r.Field == FieldSignature && r.Signature != sig {
			t.Errorf("signature after a JSON round trip: %q", r.Signature)
		}
	}
	results := turns[2].Artifacts
	w, tm := results[0].(artifact.ToolResult), results[1].(artifact.ToolResult)
	if w.IsError || w.Content != "sunny in Paris" || !tm.IsError || !strings.Contains(tm.Content, "tz") {
		t.Fatalf("results %#v", results)
	}
	second := f.requests()[1]
	if !strings.Contains(second.raw, `{"functionCall":{"args":{"city":"Paris"},"name":"get_weather"},"thoughtSignature":"`+sig+`"}`) {
		t.Errorf("the signed call did not go back as it came: %s", second.raw)
	}
	got := mustJSON(t, dig(second.body, "contents", 2))
	want := `{"parts":[{"functionResponse":{"name":"get_weather","response":{"output":"sunny in Paris"}}},{"functionResponse":{"name":"get_time","response":{"error":` + mustJSON(t, tm.Content) + `}}}],"role":"user"}`
	if got != want {
		t.Errorf("results sent\n%s\nwant\n%s", got, want)
	}
	if got := mustJSON(t, dig(second.body, "generationConfig")); got != `{"thinkingConfig":{"includeThoughts":true}}` {
		t.Errorf("generationConfig %s", got)
	}
}
