package ledger_test

import (
	"context"
	"slices"
	"testing"

	"github.com/lodeworks/lode/artifact"
	"github.com/lodeworks/lode/ledger"
)

func TestOpenCalls(t *testing.T) {
	a := artifact.ToolCall{ID: "a", Name: "t"}
	b := artifact.ToolCall{ID: "b", Name: "t"}
	res := func(id string) artifact.Artifact { return artifact.ToolResult{ToolCallID: id} }
	type turn struct {
		role ledger.Role
		arts []artifact.Artifact
	}
	cases := []struct {
		name  string
		turns []turn
		want  []ledger.OpenCall
	}{
		{"none", nil, nil},
		{"answered", []turn{{ledger.RoleAssistant, []artifact.Artifact{a, b}}, {ledger.RoleTool, []artifact.Artifact{res("b"), res("a")}}}, nil},
		{"one left, in call order", []turn{{ledger.RoleAssistant, []artifact.Artifact{b, a}}, {ledger.RoleTool, []artifact.Artifact{res("a")}}},
			[]ledger.OpenCall{{Turn: 0, Call: b}}},
		{"duplicate while open counts once", []turn{{ledger.RoleAssistant, []artifact.Artifact{a}}, {ledger.RoleAssistant, []artifact.Artifact{a}}},
			[]ledger.OpenCall{{Turn: 0, Call: a}}},
		{"reused after its answer", []turn{{ledger.RoleAssistant, []artifact.Artifact{a}}, {ledger.RoleTool, []artifact.Artifact{res("a")}}, {ledger.RoleAssistant, []artifact.Artifact{a}}},
			[]ledger.OpenCall{{Turn: 2, Call: a}}},
		{"calls outside assistant turns", []turn{{ledger.RoleUser, []artifact.Artifact{a}}, {ledger.RoleTool, []artifact.Artifact{b}}}, nil},
		{"a result before its call", []turn{{ledger.RoleTool, []artifact.Artifact{res("a")}}, {ledger.RoleAssistant, []artifact.Artifact{a}}},
			[]ledger.OpenCall{{Turn: 1, Call: a}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var seed []ledger.Turn
			for _, tu := range c.turns {
				seed = append(seed, ledger.Turn{Role: tu.role, Artifacts: tu.arts})
			}
			for name, ct := range trackers(t, seed) {
				if got := ct.OpenCalls(); !slices.Equal(got, c.want) {
					t.Errorf("%s: OpenCalls = %v, want %v", name, got, c.want)
				}
			}
		})
	}
}

func TestOpenCallsAfterReload(t *testing.T) {
	j := &memJournal{}
	st := ledger.NewStoredThread("t1", ledger.Snapshot{}, j, nil)
	other := ledger.NewStoredThread("t1", ledger.Snapshot{}, j, nil)
	if err := st.Append(ledger.RoleAssistant, artifact.ToolCall{ID: "a"}); err != nil {
		t.Fatal(err)
	}
	if err := other.Reload(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := other.OpenCalls(); len(got) != 1 || got[0].Call.ID != "a" {
		t.Fatalf("after Reload, OpenCalls = %v", got)
	}
}

func TestLateResults(t *testing.T) {
	a := artifact.ToolCall{ID: "a", Name: "t"}
	b := artifact.ToolCall{ID: "b", Name: "t"}
	res := func(id string) artifact.Artifact { return artifact.ToolResult{ToolCallID: id} }
	user := artifact.Text{Content: "and also"}
	type turn struct {
		role ledger.Role
		arts []artifact.Artifact
	}
	cases := []struct {
		name  string
		turns []turn
		want  []ledger.LateResult
	}{
		{"in order", []turn{{ledger.RoleAssistant, []artifact.Artifact{a}}, {ledger.RoleTool, []artifact.Artifact{artifact.Pending{ToolCallID: "a"}}}, {ledger.RoleTool, []artifact.Artifact{res("a")}}, {ledger.RoleUser, []artifact.Artifact{user}}}, nil},
		{"a message between", []turn{{ledger.RoleAssistant, []artifact.Artifact{a, b}}, {ledger.RoleTool, []artifact.Artifact{res("b")}}, {ledger.RoleUser, []artifact.Artifact{user}}, {ledger.RoleTool, []artifact.Artifact{res("a")}}},
			[]ledger.LateResult{{Call: 0, Result: 3, ToolCallID: "a"}}},
		{"a system turn between", []turn{{ledger.RoleAssistant, []artifact.Artifact{a}}, {ledger.RoleSystem, []artifact.Artifact{user}}, {ledger.RoleTool, []artifact.Artifact{res("a")}}},
			[]ledger.LateResult{{Call: 0, Result: 2, ToolCallID: "a"}}},
		{"a later answer between", []turn{{ledger.RoleAssistant, []artifact.Artifact{a}}, {ledger.RoleAssistant, []artifact.Artifact{b}}, {ledger.RoleTool, []artifact.Artifact{res("b"), res("a")}}},
			[]ledger.LateResult{{Call: 0, Result: 2, ToolCallID: "a"}}},
		{"a stray result is not late", []turn{{ledger.RoleUser, []artifact.Artifact{user}}, {ledger.RoleTool, []artifact.Artifact{res("a")}}}, nil},
		{"a second result is not tracked", []turn{{ledger.RoleAssistant, []artifact.Artifact{a}}, {ledger.RoleTool, []artifact.Artifact{res("a")}}, {ledger.RoleUser, []artifact.Artifact{user}}, {ledger.RoleTool, []artifact.Artifact{res("a")}}}, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var seed []ledger.Turn
			for _, tu := range c.turns {
				seed = append(seed, ledger.Turn{Role: tu.role, Artifacts: tu.arts})
			}
			for name, lt := range trackers(t, seed) {
				if got := lt.LateResults(); !slices.Equal(got, c.want) {
					t.Errorf("%s: LateResults = %v, want %v", name, got, c.want)
				}
			}
			if _, got := ledger.ScanCalls(seed); !slices.Equal(got, c.want) {
				t.Errorf("ScanCalls: late = %v, want %v", got, c.want)
			}
		})
	}
}

// tracker is what Thread and StoredThread both keep as turns come.
type tracker interface {
	ledger.CallTracker
	ledger.LateTracker
}

// trackers holds turns in every way a State comes to hold them: appended
// one by one to a Thread and to a StoredThread, seeded into a Thread, and
// loaded into a StoredThread.
func trackers(t *testing.T, turns []ledger.Turn) map[string]tracker {
	t.Helper()
	th := ledger.NewThread()
	st := ledger.NewStoredThread("t1", ledger.Snapshot{}, &memJournal{}, nil)
	for _, tu := range turns {
		if err := th.Append(tu.Role, tu.Artifacts...); err != nil {
			t.Fatal(err)
		}
		if err := st.Append(tu.Role, tu.Artifacts...); err != nil {
			t.Fatal(err)
		}
	}
	return map[string]tracker{
		"appended": th,
		"seeded":   ledger.NewThread(ledger.WithTurns(turns...)),
		"stored":   st,
		"loaded":   ledger.NewStoredThread("t2", ledger.Snapshot{Turns: turns}, &memJournal{}, nil),
	}
}
