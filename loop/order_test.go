package loop_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/lodeworks/lode/artifact"
	"github.com/lodeworks/lode/ledger"
	"github.com/lodeworks/lode/ledger/file"
	"github.com/lodeworks/lode/loop"
	"github.com/lodeworks/lode/provider"
	"github.com/lodeworks/lode/x/provider/script"
)

// wireOrder describes a request as a server reads it, and fails when a
// call's result does not follow its call with only tool turns between.
func wireOrder(t *testing.T, turns []ledger.Turn) string {
	t.Helper()
	var parts []string
	open := map[string]bool{}
	for _, tu := range turns {
		if tu.Role != ledger.RoleTool && len(open) > 0 {
			t.Errorf("a %s turn stands between calls and their results (%v): %s", tu.Role, open, describe(turns))
		}
		var p []string
		for _, a := range tu.Artifacts {
			switch a := a.(type) {
			case artifact.ToolCall:
				if tu.Role == ledger.RoleAssistant {
					open[a.ID] = true
				}
				p = append(p, "call "+a.ID)
			case artifact.ToolResult:
				delete(open, a.ToolCallID)
				p = append(p, "result "+a.ToolCallID)
			case artifact.Text:
				p = append(p, fmt.Sprintf("%q", a.Content))
			}
		}
		if len(p) > 0 { // records no server sees (Pending, Decision) aside
			parts = append(parts, fmt.Sprintf("%s(%s)", tu.Role, strings.Join(p, " ")))
		}
	}
	return strings.Join(parts, " ")
}

func describe(turns []ledger.Turn) string {
	var parts []string
	for _, tu := range turns {
		parts = append(parts, string(tu.Role))
	}
	return strings.Join(parts, ",")
}

// TestMessageAddedWhileCallsWait: a message stored while calls of the last
// answer have no result makes the run refuse while they wait, and once
// they are answered each result is sent right after its call, the message
// after them, in every later request too; the ledger keeps what happened
// in the order it happened.
func TestMessageAddedWhileCallsWait(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name string
		wrap func(ledger.State) ledger.State
	}{
		{"tracked", func(st ledger.State) ledger.State { return st }},
		{"scanned", func(st ledger.State) ledger.State { return untracked{st} }},
	} {
		t.Run(tc.name+"/pending", func(t *testing.T) {
			th := pausedThread(t)
			st := tc.wrap(th)
			_ = th.Append(ledger.RoleUser, artifact.Text{Content: "also"})
			step := loop.New(loop.WithHandlers(asker))
			// While rm waits, the run refuses, naming it, and asks no model.
			prov := script.Play(script.Text("never"))
			_, err := step.Run(ctx, st, prov)
			var pe *loop.PendingError
			if !errors.As(err, &pe) || len(pe.Calls) != 1 || pe.Calls[0].ToolCallID != "a" || len(prov.Requests()) != 0 {
				t.Fatalf("run while a call waits: %v, %d requests", err, len(prov.Requests()))
			}
			prov = script.Play(script.Call("c", "ls", `{}`), script.Text("done"))
			if _, err := step.Resume(ctx, st, prov, []artifact.Decision{loop.Approve("a")}); err != nil {
				t.Fatal(err)
			}
			reqs := prov.Requests()
			if len(reqs) != 2 {
				t.Fatalf("%d requests, want 2", len(reqs))
			}
			want := `user("go") assistant(call a call b) tool(result a) tool(result b) user("also")`
			if got := wireOrder(t, reqs[0].Turns); got != want {
				t.Errorf("first request:\n got %s\nwant %s", got, want)
			}
			if got := wireOrder(t, reqs[1].Turns); !strings.HasPrefix(got, want+" assistant(call c) tool(result c)") {
				t.Errorf("second request: %s", got)
			}
			if got := describe(th.Turns()); got != "user,assistant,tool,user,tool,tool,assistant,tool,assistant" {
				t.Errorf("ledger %s: the message must stay where it was stored", got)
			}
		})
		t.Run(tc.name+"/interrupted", func(t *testing.T) {
			// A run that stopped inside a call, and a message added before
			// the next run: the repair result is sent after the call.
			th := userThread("go")
			_ = th.Append(ledger.RoleAssistant, artifact.ToolCall{ID: "x", Name: "deploy", Arguments: "{}"})
			_ = th.Append(ledger.RoleUser, artifact.Text{Content: "are you there?"})
			prov := script.Play(script.Call("y", "ls", `{}`), script.Text("done"))
			if _, err := loop.New(loop.WithHandlers(echoTools)).Run(ctx, tc.wrap(th), prov); err != nil {
				t.Fatal(err)
			}
			want := `user("go") assistant(call x) tool(result x) user("are you there?")`
			for i, r := range prov.Requests() {
				if got := wireOrder(t, r.Turns); !strings.HasPrefix(got, want) {
					t.Errorf("request %d:\n got %s\nwant %s...", i, got, want)
				}
			}
		})
	}
}

// TestLateResultAfterReload: a stored thread read back sends the same
// request as the one that wrote it.
func TestLateResultAfterReload(t *testing.T) {
	ctx := context.Background()
	s, err := file.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	st, err := s.Create(ctx, ledger.WithID("t"))
	if err != nil {
		t.Fatal(err)
	}
	for _, tu := range []ledger.Turn{
		{Role: ledger.RoleUser, Artifacts: []artifact.Artifact{artifact.Text{Content: "go"}}},
		{Role: ledger.RoleAssistant, Artifacts: []artifact.Artifact{artifact.ToolCall{ID: "x", Name: "deploy", Arguments: "{}"}}},
		{Role: ledger.RoleUser, Artifacts: []artifact.Artifact{artifact.Text{Content: "more"}}},
		{Role: ledger.RoleTool, Artifacts: []artifact.Artifact{artifact.ToolResult{ToolCallID: "x", Name: "deploy", Content: "ok"}}},
	} {
		if err := st.Append(tu.Role, tu.Artifacts...); err != nil {
			t.Fatal(err)
		}
	}
	var seen []string
	prov := script.Play(script.Func(func(req *provider.Request) ([]artifact.Artifact, error) {
		seen = append(seen, wireOrder(t, req.Turns))
		return []artifact.Artifact{artifact.Text{Content: "fine"}}, nil
	}))
	if _, err := loop.New().Turn(ctx, st, prov); err != nil {
		t.Fatal(err)
	}
	again, err := s.Load(ctx, "t")
	if err != nil {
		t.Fatal(err)
	}
	prov2 := script.Play(script.Func(func(req *provider.Request) ([]artifact.Artifact, error) {
		seen = append(seen, wireOrder(t, req.Turns[:4]))
		return []artifact.Artifact{artifact.Text{Content: "fine"}}, nil
	}))
	if _, err := loop.New().Turn(ctx, again, prov2); err != nil {
		t.Fatal(err)
	}
	want := `user("go") assistant(call x) tool(result x) user("more")`
	if len(seen) != 2 || seen[0] != want || seen[1] != want {
		t.Fatalf("requests %q, want both %q", seen, want)
	}
}
