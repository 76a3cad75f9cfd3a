package loop_test

import (
	"reflect"
	"testing"

	"github.com/lodeworks/lode/artifact"
	"github.com/lodeworks/lode/ledger"
	"github.com/lodeworks/lode/loop"
)

func TestKeepStopped(t *testing.T) {
	user := ledger.Turn{Role: ledger.RoleUser, Artifacts: []artifact.Artifact{artifact.Text{Content: "q"}}}
	call := ledger.Turn{Role: ledger.RoleAssistant, Artifacts: []artifact.Artifact{artifact.ToolCall{ID: "1", Name: "t"}}}
	result := ledger.Turn{Role: ledger.RoleTool, Artifacts: []artifact.Artifact{artifact.ToolResult{ToolCallID: "1", Name: "t", Content: "r"}}}
	stopped := func(text string) []ledger.Turn {
		arts := []artifact.Artifact{artifact.Finish{Reason: loop.StoppedReason}}
		if text != "" {
			arts = append([]artifact.Artifact{artifact.Text{Content: text}}, arts...)
		}
		return []ledger.Turn{{Role: ledger.RoleAssistant, Artifacts: arts}}
	}
	cases := []struct {
		name  string
		turns []ledger.Turn
		text  string
		added []ledger.Turn
	}{
		{"after the user's message", []ledger.Turn{user}, "half an ans", stopped("half an ans")},
		{"nothing shown yet", []ledger.Turn{user}, "", stopped("")},
		{"after the tools' results", []ledger.Turn{user, call, result}, "so", stopped("so")},
		{"calls wait for results", []ledger.Turn{user, call}, "x", nil},
		{"the answer landed", []ledger.Turn{user, {Role: ledger.RoleAssistant, Artifacts: []artifact.Artifact{artifact.Text{Content: "a"}}}}, "a", nil},
		{"an empty thread", nil, "x", nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			st := ledger.NewThread()
			for _, turn := range c.turns {
				if err := st.Append(turn.Role, turn.Artifacts...); err != nil {
					t.Fatal(err)
				}
			}
			if err := loop.KeepStopped(st, c.text); err != nil {
				t.Fatal(err)
			}
			var added []ledger.Turn
			for _, turn := range st.Turns()[len(c.turns):] {
				added = append(added, ledger.Turn{Role: turn.Role, Artifacts: turn.Artifacts})
			}
			if !reflect.DeepEqual(added, c.added) {
				t.Fatalf("added %+v, want %+v", added, c.added)
			}
		})
	}
}
