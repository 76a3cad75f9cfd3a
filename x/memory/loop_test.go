package memory_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/lodeworks/lode/artifact"
	"github.com/lodeworks/lode/ledger"
	"github.com/lodeworks/lode/loop"
	"github.com/lodeworks/lode/provider"
	"github.com/lodeworks/lode/tool"
	"github.com/lodeworks/lode/x/auth"
	"github.com/lodeworks/lode/x/guard"
	"github.com/lodeworks/lode/x/memory"
	"github.com/lodeworks/lode/x/provider/script"
	xtool "github.com/lodeworks/lode/x/tool"
)

// TestToolsInALoopTurn runs the tools in real turns, where the scope comes
// from the turn's thread (loop.CurrentTurn): alice saves, bob's model
// searches naming alice in its query, and finds nothing of hers.
func TestToolsInALoopTurn(t *testing.T) {
	store := openFile(t)
	defer store.Close()
	reg := tool.NewRegistry()
	if err := memory.Register(reg, store); err != nil {
		t.Fatal(err)
	}
	step := loop.New(loop.WithHandlers(xtool.NewHandler(reg)), loop.WithMaxTurns(4),
		loop.WithInvokeOptions(provider.WithTools(reg.Tools())))
	var last ledger.State
	run := func(id auth.Identity, call, args string) string {
		t.Helper()
		th := ledger.NewThread(ledger.WithMetadata(id.Metadata()))
		_ = th.Append(ledger.RoleUser, artifact.Text{Content: "hello"})
		prov := script.Play(script.Call("c1", call, args), script.Text("done"))
		st, err := step.Run(context.Background(), th, prov)
		if err != nil {
			t.Fatal(err)
		}
		last = st
		for _, turn := range st.Turns() {
			for _, a := range turn.Artifacts {
				if r, ok := a.(artifact.ToolResult); ok {
					return r.Content
				}
			}
		}
		t.Fatal("no tool result")
		return ""
	}
	if got := run(alice, memory.SaveTool, `{"fact":"Alice's locker code is 4417."}`); !strings.Contains(got, `"saved":true`) {
		t.Fatalf("alice's save: %s", got)
	}
	if _, ok := ledger.HasLabel(last, ledger.LabelPrivate); ok {
		t.Errorf("a save labelled the thread private")
	}
	if got := run(alice, memory.SearchTool, `{"query":"locker code"}`); !strings.Contains(got, "4417") {
		t.Fatalf("alice's search: %s", got)
	}
	if _, ok := ledger.HasLabel(last, ledger.LabelPrivate); !ok {
		t.Errorf("a search did not label the thread private: %v", ledger.Labels(last))
	}
	if got := run(bob, memory.SearchTool, `{"query":"alice acme locker code 4417"}`); strings.Contains(got, "4417") {
		t.Fatalf("bob found alice's fact: %s", got)
	}
	if got := run(auth.Identity{}, memory.SearchTool, `{"query":"locker code"}`); !strings.Contains(got, "no signed-in user") {
		t.Fatalf("an anonymous turn: %s", got)
	}
}

// The memory tools go through the handler's approvals and the loop's
// guards like any tool: a save that waits for a person saves nothing
// until approved, and nothing when denied; a save a call guard stops
// saves nothing.
func TestToolsThroughApprovalsAndGuards(t *testing.T) {
	save := script.Call("c1", memory.SaveTool, `{"fact":"Alice's password is hunter2."}`)
	newThread := func() *ledger.Thread {
		th := ledger.NewThread(ledger.WithMetadata(alice.Metadata()))
		_ = th.Append(ledger.RoleUser, artifact.Text{Content: "remember my password"})
		return th
	}
	for _, decision := range []string{"deny", "approve"} {
		t.Run("approval "+decision, func(t *testing.T) {
			store := openFile(t)
			defer store.Close()
			reg := tool.NewRegistry()
			_ = memory.Register(reg, store)
			needs := func(_ context.Context, tl tool.Tool, _ artifact.ToolCall) (string, bool) {
				return "saving needs a person", tl.Name == memory.SaveTool
			}
			step := loop.New(loop.WithHandlers(xtool.NewHandler(reg, xtool.WithApprover(xtool.PauseForDecision), xtool.WithApprovalRule(needs))),
				loop.WithInvokeOptions(provider.WithTools(reg.Tools())))
			th := newThread()
			if _, err := step.Run(context.Background(), th, script.Play(save)); !errors.Is(err, loop.ErrPaused) {
				t.Fatalf("err = %v, want pending", err)
			}
			if got := facts(t, store, alice); len(got) != 0 {
				t.Fatalf("saved before a decision: %q", got)
			}
			d := loop.Deny("c1", "no")
			if decision == "approve" {
				d = loop.Approve("c1")
			}
			if _, err := step.Resume(context.Background(), th, script.Play(script.Text("ok")), []artifact.Decision{d}); err != nil {
				t.Fatal(err)
			}
			if got := facts(t, store, alice); (len(got) == 1) != (decision == "approve") {
				t.Fatalf("after %s: %q", decision, got)
			}
		})
	}
	t.Run("guard", func(t *testing.T) {
		store := openFile(t)
		defer store.Close()
		reg := tool.NewRegistry()
		_ = memory.Register(reg, store)
		noSecrets := guard.New("no-secrets", func(_ context.Context, c loop.Check) (string, error) {
			if c.Call.Name == memory.SaveTool && strings.Contains(c.Call.Arguments, "password") {
				return "no passwords in memory", nil
			}
			return "", nil
		}, artifact.AtCall)
		step := loop.New(loop.WithHandlers(xtool.NewHandler(reg)), loop.WithGuards(noSecrets), loop.WithInvokeOptions(provider.WithTools(reg.Tools())))
		if _, err := step.Run(context.Background(), newThread(), script.Play(save, script.Text("ok"))); !errors.Is(err, loop.ErrTripped) {
			t.Fatalf("err = %v, want tripped", err)
		}
		if got := facts(t, store, alice); len(got) != 0 {
			t.Fatalf("a stopped save saved %q", got)
		}
	})
}
