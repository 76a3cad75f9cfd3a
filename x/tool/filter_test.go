package tool_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"

	"github.com/lodeworks/lode/artifact"
	"github.com/lodeworks/lode/ledger"
	"github.com/lodeworks/lode/loop"
	"github.com/lodeworks/lode/tool"
	"github.com/lodeworks/lode/x/provider/script"
	xtool "github.com/lodeworks/lode/x/tool"
)

// A ToolFilter that panics fails the turn it runs for with a
// *loop.OptionError from Run, not a crash; the turns before it stay in the
// ledger and the model is not invoked for the failed turn.
func TestPanickingFilterFailsTheTurn(t *testing.T) {
	reg := fixture(t, nil)
	filter := func(_ context.Context, st ledger.State, tools []tool.Tool) []tool.Tool {
		if len(st.Turns()) > 1 {
			var m map[string]bool
			m["second turn"] = true
		}
		return tools
	}
	var logs bytes.Buffer
	step := loop.New(
		loop.WithHandlers(xtool.NewHandler(reg)),
		loop.WithLogger(slog.New(slog.NewTextHandler(&logs, nil))),
	)
	prov := script.Play(script.Call("call_1", "greet", "{}"), script.Text("done"))
	th := ledger.NewThread()
	_ = th.Append(ledger.RoleUser, artifact.Text{Content: "hi"})
	_, err := step.Run(context.Background(), th, prov, xtool.WithFilteredTools(reg, filter))

	var oe *loop.OptionError
	if !errors.As(err, &oe) || err.Error() != "loop: preparing the turn: invoke option 0 panicked: assignment to entry in nil map" {
		t.Fatalf("err = %v (%T), want a *loop.OptionError", err, err)
	}
	if len(oe.Stack) == 0 || !strings.Contains(logs.String(), "stack=") {
		t.Errorf("stack missing: %d bytes in the error; log %q", len(oe.Stack), logs.String())
	}
	turns := th.Turns()
	if len(turns) != 3 || turns[1].Role != ledger.RoleAssistant || turns[2].Role != ledger.RoleTool {
		t.Fatalf("ledger has %d turns: %v", len(turns), turns)
	}
	if r := turns[2].Artifacts[0].(artifact.ToolResult); r.IsError || r.Content != "hello, world" {
		t.Fatalf("first turn's result = %+v", r)
	}
	if n := len(prov.Requests()); n != 1 {
		t.Fatalf("the model was invoked %d times, want 1", n)
	}
}
