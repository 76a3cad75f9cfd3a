package responses

import (
	"context"
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/lodeworks/lode/artifact"
	"github.com/lodeworks/lode/ledger"
	"github.com/lodeworks/lode/loop"
	"github.com/lodeworks/lode/tool"
)

// Through loop.Run: reasoning, two parallel calls, their results and the
// final answer. The second request carries the reasoning item as the
// server sent it, right before its calls, then both outputs; the thread's
// ID is the prompt cache key of both.
func TestLoopReasoningRoundTrip(t *testing.T) {
	f := newFake(t, sse(reasonedCalls()...), sse(textAnswer("Sunny ", "at noon.")...))
	h := loop.HandlerFunc(func(ctx context.Context, a artifact.Artifact, e loop.Emitter) error {
		c, ok := a.(artifact.ToolCall)
		if !ok {
			return nil
		}
		e.Emit(ctx, loop.TurnCompleteEvent{Role: ledger.RoleTool, Artifacts: []artifact.Artifact{
			artifact.ToolResult{ToolCallID: c.ID, Name: c.Name, Content: c.Name + " ok"},
		}})
		return nil
	})
	th := ledger.NewThread(ledger.WithID("thread-42"), ledger.WithClock(nil))
	_ = th.Append(ledger.RoleUser, artifact.Text{Content: "Weather and time?"})
	tools := []tool.Tool{{Name: "get_weather"}, {Name: "get_time"}}
	step := loop.New(loop.WithHandlers(h), loop.WithInvokeOptions(WithThreadCacheKey()))
	if _, err := step.Run(t.Context(), th, f.provider(t), WithTools(tools)); err != nil {
		t.Fatal(err)
	}
	turns := th.Turns()
	last := turns[len(turns)-1]
	if last.Role != ledger.RoleAssistant || last.Artifacts[0] != (artifact.Text{Content: "Sunny at noon."}) {
		t.Fatalf("last turn = %#v", last)
	}
	first := turns[1].Artifacts[0].(artifact.Reasoning)
	if first.Field != FieldItem || first.Signature != "gAAAA-enc==" {
		t.Fatalf("reasoning in the ledger = %#v", first)
	}
	reqs := f.requests()
	if len(reqs) != 2 {
		t.Fatalf("%d requests", len(reqs))
	}
	for i, r := range reqs {
		if r.Body["prompt_cache_key"] != "thread-42" || r.Body["store"] != false {
			t.Errorf("request %d: %s", i, r.Raw)
		}
	}
	var second struct {
		Input []json.RawMessage `json:"input"`
	}
	if err := json.Unmarshal(reqs[1].Raw, &second); err != nil {
		t.Fatal(err)
	}
	got := make([]string, len(second.Input))
	for i, in := range second.Input {
		got[i] = string(in)
	}
	want := []string{
		`{"type":"message","role":"user","content":"Weather and time?"}`,
		reasoningItem(0, "gAAAA-enc==", "Weather first.", "Then time."),
		`{"type":"function_call","call_id":"call_w","name":"get_weather","arguments":"{\"city\":\"Paris\"}"}`,
		`{"type":"function_call","call_id":"call_t","name":"get_time","arguments":"{\"tz\":\"Europe/Paris\"}"}`,
		`{"type":"function_call_output","call_id":"call_w","output":"get_weather ok"}`,
		`{"type":"function_call_output","call_id":"call_t","output":"get_time ok"}`,
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("second input =\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
