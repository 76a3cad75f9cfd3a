package openai

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/lodeworks/lode/artifact"
	"github.com/lodeworks/lode/ledger"
	"github.com/lodeworks/lode/loop"
	"github.com/lodeworks/lode/tool"
	xtool "github.com/lodeworks/lode/x/tool"
)

var (
	weatherSchema = json.RawMessage(`{"type":"object","properties":{"city":{"type":"string"}},"required":["city"],"additionalProperties":false}`)
	timeSchema    = json.RawMessage(`{"type":"object","properties":{"tz":{"type":"string"}},"required":["tz"]}`)
)

// parallelCalls is a first answer calling two tools at once, their
// fragments interleaved as OpenAI streams them.
func parallelCalls(weatherArgs string) []string {
	half := len(weatherArgs) / 2
	return []string{
		roleChunk(),
		toolChunk(0, "call_w", "get_weather", ""),
		toolChunk(1, "call_t", "get_time", ""),
		toolChunk(0, "", "", weatherArgs[:half]),
		toolChunk(1, "", "", `{"tz":"Europe/Paris"}`),
		toolChunk(0, "", "", weatherArgs[half:]),
		finishChunk("tool_calls"),
		usageChunk(50, 20),
	}
}

func finalAnswer() []string {
	return []string{roleChunk(), textChunk("Sunny, "), textChunk("and it is noon."), finishChunk("stop"), usageChunk(90, 8)}
}

// parallelLedger is the thread TestLoopParallelToolCalls ends with.
func parallelLedger() []ledger.Turn {
	return []ledger.Turn{
		{Role: ledger.RoleUser, Artifacts: []artifact.Artifact{artifact.Text{Content: "Weather and time in Paris?"}}},
		{Role: ledger.RoleAssistant, Artifacts: []artifact.Artifact{
			artifact.ToolCall{ID: "call_w", Name: "get_weather", Arguments: `{"city":"Paris"}`},
			artifact.ToolCall{ID: "call_t", Name: "get_time", Arguments: `{"tz":"Europe/Paris"}`},
			artifact.Usage{InputTokens: 50, OutputTokens: 20, CachedInputTokens: 3, ReasoningTokens: 2},
			artifact.Finish{Reason: "tool_calls"},
		}},
		{Role: ledger.RoleTool, Artifacts: []artifact.Artifact{
			artifact.ToolResult{ToolCallID: "call_w", Name: "get_weather", Content: `get_weather says {"city":"Paris"}`},
			artifact.ToolResult{ToolCallID: "call_t", Name: "get_time", Content: `get_time says {"tz":"Europe/Paris"}`},
		}},
		{Role: ledger.RoleAssistant, Artifacts: []artifact.Artifact{
			artifact.Text{Content: "Sunny, and it is noon."},
			artifact.Usage{InputTokens: 90, OutputTokens: 8, CachedInputTokens: 3, ReasoningTokens: 2},
			artifact.Finish{Reason: "stop"},
		}},
	}
}

func TestLoopParallelToolCalls(t *testing.T) {
	f := newFake(t, sse(parallelCalls(`{"city":"Paris"}`)...), sse(finalAnswer()...))
	tools := []tool.Tool{
		{Name: "get_weather", Description: "Weather in a city.", Schema: weatherSchema},
		{Name: "get_time", Description: "Time in a zone.", Schema: timeSchema},
	}
	h := loop.HandlerFunc(func(ctx context.Context, a artifact.Artifact, e loop.Emitter) error {
		c, ok := a.(artifact.ToolCall)
		if !ok {
			return nil
		}
		e.Emit(ctx, loop.TurnCompleteEvent{Role: ledger.RoleTool, Artifacts: []artifact.Artifact{
			artifact.ToolResult{ToolCallID: c.ID, Name: c.Name, Content: c.Name + " says " + c.Arguments},
		}})
		return nil
	})
	th := ledger.NewThread(ledger.WithClock(nil))
	_ = th.Append(ledger.RoleUser, artifact.Text{Content: "Weather and time in Paris?"})
	if _, err := loop.New(loop.WithHandlers(h)).Run(t.Context(), th, f.provider(t), WithTools(tools)); err != nil {
		t.Fatal(err)
	}

	turns := th.Turns()
	want := parallelLedger()
	if !reflect.DeepEqual(turns, want) {
		t.Errorf("ledger =\n%#v\nwant\n%#v", turns, want)
	}

	reqs := f.requests()
	if len(reqs) != 2 {
		t.Fatalf("%d requests", len(reqs))
	}
	wantTools := toJSON(t, `[
		{"type":"function","function":{"name":"get_weather","description":"Weather in a city.","strict":true,
			"parameters":{"type":"object","properties":{"city":{"type":"string"}},"required":["city"],"additionalProperties":false}}},
		{"type":"function","function":{"name":"get_time","description":"Time in a zone.",
			"parameters":{"type":"object","properties":{"tz":{"type":"string"}},"required":["tz"]}}}
	]`)
	for i, r := range reqs {
		if !reflect.DeepEqual(r.Body["tools"], wantTools) {
			t.Errorf("request %d tools = %s", i, mustJSON(r.Body["tools"]))
		}
	}
	wantMsgs := toJSON(t, `[
		{"role":"user","content":"Weather and time in Paris?"},
		{"role":"assistant","tool_calls":[
			{"id":"call_w","type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"Paris\"}"}},
			{"id":"call_t","type":"function","function":{"name":"get_time","arguments":"{\"tz\":\"Europe/Paris\"}"}}]},
		{"role":"tool","tool_call_id":"call_w","content":"get_weather says {\"city\":\"Paris\"}"},
		{"role":"tool","tool_call_id":"call_t","content":"get_time says {\"tz\":\"Europe/Paris\"}"}
	]`)
	if !reflect.DeepEqual(reqs[1].Body["messages"], wantMsgs) {
		t.Errorf("second request messages =\n%s", mustJSON(reqs[1].Body["messages"]))
	}
}

// TestLoopWithToolHandler runs the seed's wiring: a tool.Registry, the
// x/tool Handler, and openai.WithTools(registry.Tools()). The model's
// weather call has broken JSON; the adapter keeps it as it came and the
// handler tells the model.
func TestLoopWithToolHandler(t *testing.T) {
	f := newFake(t, sse(parallelCalls(`{"city":"Paris"`)...), sse(finalAnswer()...))
	registry := tool.NewRegistry()
	if err := registry.Register(tool.Tool{Name: "get_weather", Description: "Weather in a city.", Schema: weatherSchema},
		func(_ context.Context, _ tool.Sandbox, args map[string]any) (any, error) {
			return fmt.Sprintf("sunny in %v", args["city"]), nil
		}); err != nil {
		t.Fatal(err)
	}
	if err := registry.Register(tool.Tool{Name: "get_time", Description: "Time in a zone.", Schema: timeSchema},
		func(_ context.Context, _ tool.Sandbox, args map[string]any) (any, error) {
			return map[string]any{"tz": args["tz"], "time": "12:00"}, nil
		}); err != nil {
		t.Fatal(err)
	}
	step := loop.New(
		loop.WithHandlers(xtool.NewHandler(registry)),
		loop.WithInvokeOptions(WithTools(registry.Tools())),
	)
	th := ledger.NewThread(ledger.WithClock(nil))
	_ = th.Append(ledger.RoleUser, artifact.Text{Content: "Weather and time in Paris?"})
	if _, err := step.Run(t.Context(), th, f.provider(t)); err != nil {
		t.Fatal(err)
	}

	turns := th.Turns()
	if len(turns) != 4 {
		t.Fatalf("%d turns: %#v", len(turns), turns)
	}
	calls := turns[1].Artifacts
	if c := calls[0].(artifact.ToolCall); c.Arguments != `{"city":"Paris"` || c.Name != "get_weather" {
		t.Errorf("weather call = %#v", c)
	}
	results := turns[2].Artifacts
	if len(results) != 2 {
		t.Fatalf("results = %#v", results)
	}
	weather, clock := results[0].(artifact.ToolResult), results[1].(artifact.ToolResult)
	if weather.ToolCallID != "call_w" || !weather.IsError || !strings.Contains(weather.Content, "JSON") {
		t.Errorf("weather result = %#v", weather)
	}
	if clock.ToolCallID != "call_t" || clock.IsError || clock.Content != `{"time":"12:00","tz":"Europe/Paris"}` {
		t.Errorf("time result = %#v", clock)
	}

	// Tools are listed sorted by the registry; each request offers them as
	// functions, and the second carries one tool message per call with the
	// handler's rendering.
	reqs := f.requests()
	if got := mustJSON(reqs[0].Body["tools"]); !strings.HasPrefix(got, `[{"function":{"description":"Time in a zone.","name":"get_time"`) {
		t.Errorf("tools = %s", got)
	}
	msgs := reqs[1].Body["messages"].([]any)
	if len(msgs) != 4 {
		t.Fatalf("messages = %s", mustJSON(msgs))
	}
	for i, r := range []artifact.ToolResult{weather, clock} {
		m := msgs[2+i].(map[string]any)
		if m["role"] != "tool" || m["tool_call_id"] != r.ToolCallID || m["content"] != r.Content {
			t.Errorf("tool message %d = %s, want content %q", i, mustJSON(m), r.Content)
		}
	}
	if got := mustJSON(msgs[1].(map[string]any)["tool_calls"]); !strings.Contains(got, `"arguments":"{\"city\":\"Paris\""`) {
		t.Errorf("assistant tool_calls = %s", got)
	}
}
