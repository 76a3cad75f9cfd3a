package policy_test

import (
	"context"
	"io"
	"log/slog"
	"net/http/httptest"
	"path/filepath"
	"testing"

	"github.com/lodeworks/lode/artifact"
	"github.com/lodeworks/lode/ledger"
	"github.com/lodeworks/lode/loop"
	"github.com/lodeworks/lode/x/policy"
	"github.com/lodeworks/lode/x/provider/script"
	xtool "github.com/lodeworks/lode/x/tool"
	"github.com/lodeworks/lode/x/tool/mcp"
)

// A changed policy file is in force for the next loop turn and the next
// MCP request, with no restart; a broken one changes nothing.
func TestReloadReachesEveryDoor(t *testing.T) {
	path := filepath.Join(t.TempDir(), "policy.yaml")
	write(t, path, "roles:\n  viewer:\n    allow:\n      tools: [fs_list]\n", 1)
	f, err := policy.Open(path, policy.WithCheckInterval(-1), policy.WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil))))
	if err != nil {
		t.Fatal(err)
	}
	reg := doorRegistry(t)
	enf := policy.NewEnforcer(reg, f)
	h := xtool.NewHandler(reg, enf.HandlerOptions()...)
	srv, err := mcp.NewServer(reg, mcp.WithFilter(enf.Filter()), mcp.WithHandler(h), mcp.WithIdentify(policy.NewTokens(map[string][]string{"v": {"viewer"}}).Identify))
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(srv)
	defer hs.Close()
	step := loop.New(loop.WithHandlers(h), loop.WithInvokeOptions(xtool.WithFilteredTools(reg, enf.Filter())))
	st := thread([]string{"viewer"})
	_ = st.Append(ledger.RoleUser, artifact.Text{Content: "go"})

	// A new client each time: a client keeps the list it was sent.
	listed := func() []string {
		cl, err := mcp.NewClient(mcp.WithName("srv"), mcp.WithHTTP(hs.URL), mcp.WithHeader("Authorization", "Bearer v"))
		if err != nil {
			t.Fatal(err)
		}
		defer cl.Close()
		tools, err := cl.Tools(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, tt := range tools {
			names = append(names, tt.Name)
		}
		return names
	}
	offeredNext := func() []string {
		prov := script.Play(script.Text("ok"))
		if _, err := step.Turn(context.Background(), st, prov); err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, tt := range prov.Requests()[0].Tools {
			names = append(names, tt.Name)
		}
		return names
	}
	check := func(label string, want ...string) {
		t.Helper()
		if got := listed(); !equal(got, want) {
			t.Errorf("%s: mcp tools/list %v, want %v", label, got, want)
		}
		if got := offeredNext(); !equal(got, want) {
			t.Errorf("%s: turn offered %v, want %v", label, got, want)
		}
	}
	check("first", "fs_list")
	write(t, path, "roles:\n  viewer:\n    allow:\n      tools: [fs_read_file, calculator__eval]\n", 2)
	check("changed", "calculator__eval", "fs_read_file")
	write(t, path, "roles:\n  viewer:\n    allow: [oops]\n", 3)
	check("broken", "calculator__eval", "fs_read_file")
}

func equal(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
