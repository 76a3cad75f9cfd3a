package anthropic

import (
	"context"
	"testing"

	"github.com/lodeworks/lode/artifact"
	"github.com/lodeworks/lode/ledger"
	"github.com/lodeworks/lode/loop"
	"github.com/lodeworks/lode/tool"
)

// Through loop.Run: thinking, two parallel tool calls, their results, and
// the final answer; the second request holds the first answer's blocks in
// order and both results in one user message.
func TestLoopThinkingParallelTools(t *testing.T) {
	f := newFake(t,
		sse(msgStart(`{"input_tokens":40,"output_tokens":1}`),
			blockStart(0, `{"type":"thinking","thinking":"Both at once.","signature":""}`),
			blockDelta(0, `{"type":"signature_delta","signature":"SIG"}`), blockStop(0),
			blockStart(1, `{"type":"tool_use","id":"toolu_w","name":"weather","input":{}}`),
			blockDelta(1, `{"type":"input_json_delta","partial_json":"{\"city\":\"Paris\"}"}`), blockStop(1),
			blockStart(2, `{"type":"tool_use","id":"toolu_t","name":"time","input":{}}`),
			blockDelta(2, `{"type":"input_json_delta","partial_json":"{\"tz\":\"CET\"}"}`), blockStop(2),
			msgDelta("tool_use", `{"output_tokens":30}`), msgStop),
		textAnswer("Sunny at noon."),
	)
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
	th := ledger.NewThread()
	_ = th.Append(ledger.RoleUser, artifact.Text{Content: "Weather and time?"})
	tools := []tool.Tool{{Name: "weather"}, {Name: "time"}}
	if _, err := loop.New(loop.WithHandlers(h)).Run(t.Context(), th, f.provider(t, WithThinkingBudget(1024)), WithTools(tools)); err != nil {
		t.Fatal(err)
	}
	turns := th.Turns()
	last := turns[len(turns)-1]
	if last.Role != ledger.RoleAssistant || last.Artifacts[0] != (artifact.Text{Content: "Sunny at noon."}) {
		t.Fatalf("last turn = %#v", last)
	}
	body := f.body(1)
	got := js(at(body, "messages"))
	want := `[{"content":[{"cache_control":{"type":"ephemeral"},"text":"Weather and time?","type":"text"}],"role":"user"},` +
		`{"content":[{"signature":"SIG","thinking":"Both at once.","type":"thinking"},` +
		`{"id":"toolu_w","input":{"city":"Paris"},"name":"weather","type":"tool_use"},` +
		`{"id":"toolu_t","input":{"tz":"CET"},"name":"time","type":"tool_use"}],"role":"assistant"},` +
		`{"content":[{"content":[{"text":"weather ok","type":"text"}],"tool_use_id":"toolu_w","type":"tool_result"},` +
		`{"cache_control":{"type":"ephemeral"},"content":[{"text":"time ok","type":"text"}],"tool_use_id":"toolu_t","type":"tool_result"}],"role":"user"}]`
	if got != want {
		t.Errorf("messages =\n%s\nwant\n%s", got, want)
	}
}
