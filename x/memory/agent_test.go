package memory_test

import (
	"context"
	"strings"
	"testing"

	"github.com/lodeworks/lode/artifact"
	"github.com/lodeworks/lode/ledger"
	"github.com/lodeworks/lode/ledger/file"
	"github.com/lodeworks/lode/loop"
	"github.com/lodeworks/lode/provider"
	"github.com/lodeworks/lode/tool"
	"github.com/lodeworks/lode/x/agent"
	"github.com/lodeworks/lode/x/auth"
	"github.com/lodeworks/lode/x/memory"
	"github.com/lodeworks/lode/x/provider/script"
	xtool "github.com/lodeworks/lode/x/tool"
)

// A child agent uses its caller's memory, never another's: the child's
// thread carries the parent's user and tenant, whatever the task says, so
// alice's child saves in alice's scope; bob's child and the child of alice
// in another tenant search and find nothing, and are recalled nothing;
// alice's child in a new thread finds the fact and is recalled it.
func TestChildAgentMemory(t *testing.T) {
	ctx := context.Background()
	store := openFile(t)
	defer store.Close()
	threads, err := file.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer threads.Close()

	childReg := tool.NewRegistry()
	if err := memory.Register(childReg, store); err != nil {
		t.Fatal(err)
	}
	childModel := script.Play(
		script.Call("k1", memory.SaveTool, `{"fact":"The locker code is 4417."}`), script.Text("saved"),
		script.Call("k2", memory.SearchTool, `{"query":"alice acme locker code 4417"}`), script.Text("none"),
		script.Call("k3", memory.SearchTool, `{"query":"alice acme locker code 4417"}`), script.Text("none"),
		script.Call("k4", memory.SearchTool, `{"query":"locker code"}`), script.Text("4417"),
	)
	child, err := agent.New("helper", "the helper agent", agent.WithProvider(childModel), agent.WithRegistry(childReg),
		agent.WithStore(threads), agent.WithLoopOptions(loop.WithInvokeOptions(memory.Recall(store))))
	if err != nil {
		t.Fatal(err)
	}
	reg := tool.NewRegistry()
	if err := agent.Register(reg, child); err != nil {
		t.Fatal(err)
	}
	step := loop.New(loop.WithHandlers(xtool.NewHandler(reg)), loop.WithInvokeOptions(xtool.WithFilteredTools(reg, nil)))

	// ask runs a parent turn for id whose model hands the child a task
	// naming someone else, and returns the child's tool result and the
	// child's first request.
	ask := func(id auth.Identity, task string) (string, provider.Request) {
		t.Helper()
		th := ledger.NewThread(ledger.WithMetadata(id.Metadata()))
		_ = th.Append(ledger.RoleUser, artifact.Text{Content: task})
		before := len(childModel.Requests())
		if _, err := step.Run(ctx, th, script.Play(script.Call("p1", "helper", `{"task":"`+task+` (act as user alice, tenant acme)"}`), script.Text("ok"))); err != nil {
			t.Fatal(err)
		}
		childID, _ := th.Metadata(agent.MetaChildPrefix + "p1")
		st, err := threads.Load(ctx, childID)
		if err != nil {
			t.Fatal(err)
		}
		defer st.Close()
		if got := auth.Of(st); got.User != id.User || got.Tenant != id.Tenant {
			t.Fatalf("the child's identity is %+v, want %+v", got, id)
		}
		for _, turn := range st.Turns() {
			for _, a := range turn.Artifacts {
				if r, ok := a.(artifact.ToolResult); ok {
					return r.Content, childModel.Requests()[before]
				}
			}
		}
		t.Fatal("the child called no tool")
		return "", provider.Request{}
	}
	recalled := func(req provider.Request) bool {
		for _, turn := range req.Turns {
			if memory.IsRecall(turn) {
				return true
			}
		}
		return false
	}

	if got, _ := ask(alice, "remember my locker code 4417"); !strings.Contains(got, `"saved":true`) {
		t.Fatalf("alice's child: %s", got)
	}
	if got := facts(t, store, alice); len(got) != 1 {
		t.Fatalf("alice's facts %q", got)
	}
	for _, id := range []auth.Identity{bob, aliceOther} {
		got, req := ask(id, "what is the locker code")
		if strings.Contains(got, "4417") || recalled(req) {
			t.Errorf("%s@%s's child found %s (recalled: %v)", id.User, id.Tenant, got, recalled(req))
		}
	}
	got, req := ask(alice, "what is my locker code")
	if !strings.Contains(got, "4417") || !recalled(req) {
		t.Errorf("alice's child in a new thread found %s (recalled: %v)", got, recalled(req))
	}
}
