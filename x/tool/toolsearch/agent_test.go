package toolsearch_test

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/lodeworks/lode/artifact"
	"github.com/lodeworks/lode/ledger"
	"github.com/lodeworks/lode/loop"
	"github.com/lodeworks/lode/x/agent"
	"github.com/lodeworks/lode/x/provider/script"
	xtool "github.com/lodeworks/lode/x/tool"
	"github.com/lodeworks/lode/x/tool/toolsearch"
)

// TestChildAgent: a child agent with a registry of its own defers its
// 1,000 tools behind its own search; its thread keeps its activations,
// the parent's offers nothing of them. With the parent's registry, the
// child may use only what its caller's turn offered, so a deferred tool
// the caller has not loaded is refused below it too: loading in a child
// never widens what its caller may use.
func TestChildAgent(t *testing.T) {
	ctx := context.Background()
	t.Run("own registry", func(t *testing.T) {
		childReg := mounted(t, 1000)
		s := newSearch(t, childReg)
		child := script.Play(
			script.Call("s1", toolsearch.DefaultName, `{"query":"email an invoice","limit":1}`),
			script.Call("c1", invoiceTool, `{"id":"9"}`),
			script.Text("sent invoice 9"),
		)
		a, err := agent.New("billing", "Does billing work.", agent.WithProvider(child), agent.WithRegistry(childReg), agent.WithFilter(s.Filter()))
		if err != nil {
			t.Fatal(err)
		}
		parentReg := mounted(t, 0)
		if err := agent.Register(parentReg, a); err != nil {
			t.Fatal(err)
		}
		parent := script.Play(script.Call("p1", "billing", `{"task":"send invoice 9"}`), script.Text("done"))
		step := loop.New(loop.WithHandlers(xtool.NewHandler(parentReg)), loop.WithInvokeOptions(xtool.WithFilteredTools(parentReg, nil)))
		st := ledger.NewThread()
		_ = st.Append(ledger.RoleUser, artifact.Text{Content: "bill them"})
		if _, err := step.Run(ctx, st, parent); err != nil {
			t.Fatal(err)
		}
		reqs := child.Requests()
		if len(reqs) != 3 || !slices.Equal(names(reqs[0].Tools), []string{"clock", toolsearch.DefaultName}) || !slices.Contains(names(reqs[1].Tools), invoiceTool) {
			t.Fatalf("child requests offer %v", func() (o [][]string) {
				for _, r := range reqs {
					o = append(o, names(r.Tools))
				}
				return
			}())
		}
		if r := st.Turns()[2].Artifacts[0].(artifact.ToolResult); r.IsError || r.Content != "sent invoice 9" {
			t.Fatalf("the agent's result: %+v", r)
		}
		if _, ok := st.Metadata(toolsearch.MetaKey); ok {
			t.Fatal("the child's activation was written on the parent's thread")
		}
	})
	t.Run("shared registry", func(t *testing.T) {
		reg := mounted(t, 1000)
		s := newSearch(t, reg)
		child := script.Play(
			script.Call("s1", toolsearch.DefaultName, `{"query":"email an invoice","limit":1}`),
			script.Call("c1", invoiceTool, `{"id":"9"}`),
			script.Text("could not"),
		)
		a, err := agent.New("billing", "Does billing work.", agent.WithProvider(child), agent.WithRegistry(reg), agent.WithFilter(s.Filter()))
		if err != nil {
			t.Fatal(err)
		}
		if err := agent.Register(reg, a); err != nil {
			t.Fatal(err)
		}
		parent := script.Play(script.Call("p1", "billing", `{"task":"send invoice 9"}`), script.Text("done"))
		step := loop.New(loop.WithHandlers(xtool.NewHandler(reg)), loop.WithInvokeOptions(xtool.WithFilteredTools(reg, s.Filter())))
		st := ledger.NewThread()
		_ = st.Append(ledger.RoleUser, artifact.Text{Content: "bill them"})
		if _, err := step.Run(ctx, st, parent); err != nil {
			t.Fatal(err)
		}
		reqs := child.Requests()
		if len(reqs) != 3 || slices.Contains(names(reqs[1].Tools), invoiceTool) {
			t.Fatalf("the child was offered a tool its caller had not loaded: %d requests", len(reqs))
		}
		var refused bool
		for _, turn := range reqs[2].Turns {
			for _, a := range turn.Artifacts {
				if r, ok := a.(artifact.ToolResult); ok && r.ToolCallID == "c1" {
					refused = r.IsError && strings.HasPrefix(r.Content, `unknown tool "crm__send_invoice".`)
				}
			}
		}
		if !refused {
			t.Fatal("the child's call to a tool its caller had not loaded was not refused as unknown")
		}
	})
}
