package policy_test

import (
	"errors"
	"testing"

	"github.com/lodeworks/lode/x/policy"
)

var inventory = policy.Inventory{
	Tools: []policy.Tool{
		{Name: "calculator__eval", Source: "calculator"},
		{Name: "docs__search", Source: "docs"},
		{Name: "fs_delete", Source: "local"},
		{Name: "fs_list", Source: "local"},
		{Name: "fs_read_file", Source: "local"},
		{Name: "fs_write_file", Source: "local"},
	},
	Packs:   []string{"calculator"},
	Servers: []string{"docs"},
}

func TestCheck(t *testing.T) {
	if err := mustParse(t, testPolicy).Check(inventory); err != nil {
		t.Fatalf("the test policy names only mounted things: %v", err)
	}
	p := mustParse(t, `roles:
  viewer:
    allow:
      tools: [fs_list, "fs_raed*"]
      packs: [calculater]
    deny:
      mcp: [calculator]
  editor:
    approve:
      mcp: [docs]
      packs: [docs]
`)
	err := p.Check(inventory)
	var ce *policy.CheckError
	if !errors.As(err, &ce) || !errors.Is(err, policy.ErrUnknownName) {
		t.Fatalf("Check = %v, want a *CheckError wrapping ErrUnknownName", err)
	}
	want := []string{
		`line 4: role viewer, allow tools "fs_raed*": no mounted tool matches`,
		`line 5: role viewer, allow packs "calculater": no mounted pack matches`,
		`line 7: role viewer, deny mcp "calculator": no mounted MCP server matches`,
		`line 11: role editor, approve packs "docs": no mounted pack matches`,
	}
	if len(ce.Problems) != len(want) {
		t.Fatalf("problems = %v, want %d", ce.Problems, len(want))
	}
	for i, p := range ce.Problems {
		if p.String() != want[i] {
			t.Errorf("problem %d = %q, want %q", i, p, want[i])
		}
	}
}

func TestExplain(t *testing.T) {
	got := mustParse(t, testPolicy).Explain([]string{"editor"}, inventory)
	want := []struct {
		allowed bool
		rule    string
	}{
		{false, policy.NoRule},
		{true, `editor allow mcp "docs" (line 9)`},
		{false, `editor deny tools "fs_delete" (line 11)`},
		{true, `editor allow tools "fs_*" (line 8)`},
		{true, `editor allow tools "fs_*" (line 8)`},
		{true, `editor allow tools "fs_*" (line 8)`},
	}
	for i, e := range got {
		if e.Tool != inventory.Tools[i] || e.Decision.Allowed != want[i].allowed || e.Decision.Rule != want[i].rule {
			t.Errorf("entry %d = %+v, want %+v", i, e, want[i])
		}
	}
}
