package history_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/lodeworks/lode/artifact"
	"github.com/lodeworks/lode/ledger"
	"github.com/lodeworks/lode/loop"
	"github.com/lodeworks/lode/tool"
	"github.com/lodeworks/lode/x/history"
	"github.com/lodeworks/lode/x/provider/script"
	xtool "github.com/lodeworks/lode/x/tool"
)

// recallThread is a thread whose turns 2 to 21 a summary stands for:
// ten questions about foxes and their answers, one of them a tool call
// with a long result, then the summary and two newer turns.
func recallThread(summarised bool) *ledger.Thread {
	turns := []ledger.Turn{text(ledger.RoleSystem, "You help with foxes."), text(ledger.RoleUser, "I keep foxes.")}
	for i := range 10 {
		turns = append(turns, text(ledger.RoleUser, fmt.Sprintf("What about fox %d?", i)))
		switch i {
		case 3:
			turns = append(turns, text(ledger.RoleAssistant, "Fox 3 is Ember; she lives in the birch wood."))
		case 6:
			turns[len(turns)-1] = ledger.Turn{Role: ledger.RoleAssistant, Artifacts: []artifact.Artifact{
				artifact.ToolCall{ID: "c6", Name: "burrow", Arguments: `{"fox":"Ember"}`}}}
			turns = append(turns, ledger.Turn{Role: ledger.RoleTool, Artifacts: []artifact.Artifact{
				artifact.ToolResult{ToolCallID: "c6", Name: "burrow", Content: "Ember's burrow is 3 metres deep. " + strings.Repeat("soil; ", 800)}}})
		default:
			turns = append(turns, text(ledger.RoleAssistant, fmt.Sprintf("Fox %d sleeps a lot.", i)))
		}
	}
	if summarised {
		turns = append(turns, ledger.Turn{Role: ledger.RoleSystem, Artifacts: []artifact.Artifact{
			artifact.Summary{Content: "The user keeps ten foxes; one is called Ember.", First: 2, Last: 21}}})
	}
	turns = append(turns, text(ledger.RoleUser, "How deep is Ember's burrow?"))
	return ledger.NewThread(ledger.WithTurns(turns...))
}

func recallRegistry(t *testing.T, opts ...tool.FuncOption) tool.Registry {
	t.Helper()
	reg := tool.NewRegistry()
	if err := history.RegisterRecall(reg, opts...); err != nil {
		t.Fatal(err)
	}
	if err := reg.Register(tool.Tool{Name: "burrow"}, func(context.Context, tool.Sandbox, map[string]any) (any, error) { return "deep", nil }); err != nil {
		t.Fatal(err)
	}
	return reg
}

func results(turns []ledger.Turn) []artifact.ToolResult {
	var out []artifact.ToolResult
	for _, t := range turns {
		for _, a := range t.Artifacts {
			if r, ok := a.(artifact.ToolResult); ok && r.ToolCallID != "c6" {
				out = append(out, r)
			}
		}
	}
	return out
}

func toolNames(ts []tool.Tool) []string {
	var out []string
	for _, t := range ts {
		out = append(out, t.Name)
	}
	return out
}

func TestRecallFindsAndLoadsACoveredTurn(t *testing.T) {
	reg := recallRegistry(t)
	prov := script.Play(
		script.Call("s1", history.RecallSearchTool, `{"query":"Ember burrow"}`),
		script.Call("l1", history.RecallTurnTool, `{"turn":15}`),
		script.Text("3 metres."),
	)
	th := recallThread(true)
	step := loop.New(loop.WithHandlers(xtool.NewHandler(reg, xtool.WithBudget(tool.Budget{Bytes: 600}))))
	if _, err := step.Run(context.Background(), th, prov, xtool.WithFilteredTools(reg, history.RecallFilter(nil))); err != nil {
		t.Fatal(err)
	}
	if got := toolNames(prov.Requests()[0].Tools); !slices.Equal(got, []string{"burrow", history.RecallSearchTool, history.RecallTurnTool}) {
		t.Fatalf("tools offered = %v", got)
	}
	rs := results(th.Turns())
	if len(rs) != 2 {
		t.Fatalf("results = %+v", rs)
	}
	wantSearch := "3 of the turns from 2 to 21 match (show one with recall_turn):\n" +
		"turn 15 (tool): result of burrow: Ember's burrow is 3 metres deep. soil; soil; soil; soil; soil; soil; soil; soil; soil; soil; soil; soil; soil; soil; soil; soil; soil; soil; s…\n" +
		"turn 14 (assistant): called burrow({\"fox\":\"Ember\"})\n" +
		"turn 9 (assistant): Fox 3 is Ember; she lives in the birch wood.\n"
	if rs[0].IsError || rs[0].Content != wantSearch {
		t.Fatalf("search = %q (error %v), want %q", rs[0].Content, rs[0].IsError, wantSearch)
	}
	// The loaded turn, 4,867 bytes, is cut to the Handler's result budget
	// of 600, with its marker.
	if rs[1].IsError || !strings.HasPrefix(rs[1].Content, "turn 15 (tool):\nresult of burrow: Ember's burrow is 3 metres deep.") ||
		!strings.Contains(rs[1].Content, "[… lode cut 4267 of 4867 bytes (0 of 2 lines) here to fit the result budget;") || !rs[1].Truncated {
		t.Fatalf("load = %q (%d bytes, truncated %v)", rs[1].Content, len(rs[1].Content), rs[1].Truncated)
	}
}

func TestRecallOnlyWithASummary(t *testing.T) {
	reg := recallRegistry(t)
	prov := script.Play(script.Call("l1", history.RecallTurnTool, `{"turn":9}`), script.Text("ok"))
	th := recallThread(false)
	step := loop.New(loop.WithHandlers(xtool.NewHandler(reg)))
	if _, err := step.Run(context.Background(), th, prov, xtool.WithFilteredTools(reg, history.RecallFilter(nil))); err != nil {
		t.Fatal(err)
	}
	if got := toolNames(prov.Requests()[0].Tools); !slices.Equal(got, []string{"burrow"}) {
		t.Fatalf("tools offered = %v", got)
	}
	rs := results(th.Turns())
	want := `unknown tool "recall_turn". Tools available in this turn: burrow.`
	if len(rs) != 1 || !rs[0].IsError || rs[0].Content != want {
		t.Fatalf("results = %+v, want %q", rs, want)
	}
}

func TestRecallHiddenByPolicy(t *testing.T) {
	reg := recallRegistry(t)
	prov := script.Play(script.Call("l1", history.RecallTurnTool, `{"turn":9}`), script.Text("ok"))
	th := recallThread(true)
	noLoad := func(_ context.Context, _ ledger.State, ts []tool.Tool) []tool.Tool {
		return slices.DeleteFunc(slices.Clone(ts), func(t tool.Tool) bool { return t.Name == history.RecallTurnTool })
	}
	step := loop.New(loop.WithHandlers(xtool.NewHandler(reg)))
	if _, err := step.Run(context.Background(), th, prov, xtool.WithFilteredTools(reg, history.RecallFilter(noLoad))); err != nil {
		t.Fatal(err)
	}
	rs := results(th.Turns())
	want := `unknown tool "recall_turn". Tools available in this turn: burrow, recall_search.`
	if len(rs) != 1 || !rs[0].IsError || rs[0].Content != want {
		t.Fatalf("results = %+v, want %q", rs, want)
	}
}

func TestRecallHostileArguments(t *testing.T) {
	reg := recallRegistry(t)
	h := xtool.NewHandler(reg)
	cases := []struct {
		name, tool, args string
		summarised       bool
		want             string
		isErr            bool
	}{
		{"negative turn", history.RecallTurnTool, `{"turn":-1}`, true,
			"turn -1 is not one the summary stands for: give a turn from 2 to 21", true},
		{"huge turn", history.RecallTurnTool, `{"turn":1e30}`, true,
			"turn 1e+30 is not one the summary stands for: give a turn from 2 to 21", true},
		{"a turn after the summary", history.RecallTurnTool, `{"turn":23}`, true,
			"turn 23 is not one the summary stands for: give a turn from 2 to 21", true},
		{"a pinned turn", history.RecallTurnTool, `{"turn":1}`, true,
			"turn 1 is not one the summary stands for: give a turn from 2 to 21", true},
		{"no summary", history.RecallTurnTool, `{"turn":9}`, false,
			"this conversation has no summary: every turn of it is in front of you", true},
		{"empty query", history.RecallSearchTool, `{"query":""}`, true,
			"the query has no words: give a few words to look for", true},
		{"punctuation only", history.RecallSearchTool, `{"query":" ?!, "}`, true,
			"the query has no words: give a few words to look for", true},
		{"huge query", history.RecallSearchTool, `{"query":"` + strings.Repeat("fox ", 100000) + `"}`, true,
			"the query is 400000 bytes, over the limit of 1000: give a few words to look for", true},
		{"nothing matches", history.RecallSearchTool, `{"query":"Badger"}`, true,
			"No turn from 2 to 21 mentions badger.", false},
		{"a load of a covered turn", history.RecallTurnTool, `{"turn":9}`, true,
			"turn 9 (assistant):\nFox 3 is Ember; she lives in the birch wood.", false},
		{"read on from a byte", history.RecallTurnTool, `{"turn":9,"from":20}`, true,
			"turn 9 (assistant), from byte 20 of 44:\nlives in the birch wood.", false},
		{"from past the end", history.RecallTurnTool, `{"turn":9,"from":44}`, true,
			"from 44 is outside turn 9, which has 44 bytes: give a byte from 0 to 43", true},
		{"negative from", history.RecallTurnTool, `{"turn":9,"from":-1}`, true,
			"from -1 is outside turn 9, which has 44 bytes: give a byte from 0 to 43", true},
		{"huge from", history.RecallTurnTool, `{"turn":9,"from":1e300}`, true,
			"from 1e+300 is outside turn 9, which has 44 bytes: give a byte from 0 to 43", true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ctx := xtool.WithCaller(context.Background(), recallThread(c.summarised))
			r := h.Execute(ctx, artifact.ToolCall{ID: "x", Name: c.tool, Arguments: c.args})
			if r.IsError != c.isErr || r.Content != c.want {
				t.Fatalf("result = %q (error %v), want %q (error %v)", r.Content, r.IsError, c.want, c.isErr)
			}
		})
	}
}
