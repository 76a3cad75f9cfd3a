package agent_test

import (
	"context"
	"testing"

	"github.com/lodeworks/lode/artifact"
	"github.com/lodeworks/lode/ledger"
	"github.com/lodeworks/lode/ledger/file"
	"github.com/lodeworks/lode/x/agent"
)

// ledger.Fork knows MetaChildPrefix and MetaAwaiting by their values (the
// ledger imports nothing under x/): a fork links the child threads of the
// calls it keeps, and drops the others and a paused child's awaiting list.
func TestForkLinksKeptChildren(t *testing.T) {
	s, err := file.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	st, err := s.Create(ctx, ledger.WithID("p"), ledger.WithMetadata(map[string]string{
		agent.MetaChildPrefix + "k1": "child-1",
		agent.MetaChildPrefix + "k2": "child-2",
		agent.MetaAwaiting:           `["x"]`,
	}))
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"k1", "k2"} {
		if err := st.Append(ledger.RoleAssistant, artifact.ToolCall{ID: k, Name: "researcher", Arguments: "{}"}); err != nil {
			t.Fatal(err)
		}
		if err := st.Append(ledger.RoleTool, artifact.ToolResult{ToolCallID: k, Name: "researcher", Content: "ok"}); err != nil {
			t.Fatal(err)
		}
	}
	st.Close()
	f, err := ledger.Fork(ctx, s, "p", 2)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	m := f.AllMetadata()
	if m[agent.MetaChildPrefix+"k1"] != "child-1" {
		t.Errorf("the kept call's child is not linked: %v", m)
	}
	for _, k := range []string{agent.MetaChildPrefix + "k2", agent.MetaAwaiting} {
		if _, ok := m[k]; ok {
			t.Errorf("the fork kept %s: %v", k, m)
		}
	}
}
