package toolsearch_test

import (
	"context"
	"slices"
	"testing"

	"github.com/lodeworks/lode/artifact"
	"github.com/lodeworks/lode/internal/allstores"
	"github.com/lodeworks/lode/ledger"
	"github.com/lodeworks/lode/loop"
	"github.com/lodeworks/lode/x/provider/script"
	xtool "github.com/lodeworks/lode/x/tool"
	"github.com/lodeworks/lode/x/tool/toolsearch"
)

// TestActivationSurvivesReload: a search in one process loads a tool; a
// second process (another store instance, a new registry and Search, as
// after a restart or on another replica) offers it on the thread's next
// turn, and runs the call.
func TestActivationSurvivesReload(t *testing.T) {
	for name, open := range allstores.Openers(t) {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			first := open(t)
			defer first.Close()
			st, err := first.Create(ctx, ledger.WithID("search-"+name))
			if err != nil {
				t.Fatal(err)
			}
			reg := mounted(t, 1000)
			s := newSearch(t, reg)
			prov := script.Play(script.Call("s1", toolsearch.DefaultName, `{"query":"email an invoice","limit":1}`), script.Text("found it"))
			step := loop.New(loop.WithHandlers(xtool.NewHandler(reg)), loop.WithInvokeOptions(xtool.WithFilteredTools(reg, s.Filter())))
			_ = st.Append(ledger.RoleUser, artifact.Text{Content: "find the invoice tool"})
			if _, err := step.Run(ctx, st, prov); err != nil {
				t.Fatal(err)
			}
			if got := names(prov.Requests()[1].Tools); !slices.Equal(got, []string{"clock", invoiceTool, toolsearch.DefaultName}) {
				t.Fatalf("the turn after the search offers %v", got)
			}

			second := open(t)
			defer second.Close()
			again, err := second.Load(ctx, "search-"+name)
			if err != nil {
				t.Fatal(err)
			}
			reg2 := mounted(t, 1000)
			s2 := newSearch(t, reg2)
			if got := s2.Active(again); len(got) != 1 || got[0].Tool != invoiceTool {
				t.Fatalf("reloaded activations %+v", got)
			}
			prov2 := script.Play(script.Call("c1", invoiceTool, `{"id":"7"}`), script.Text("sent"))
			step2 := loop.New(loop.WithHandlers(xtool.NewHandler(reg2)), loop.WithInvokeOptions(xtool.WithFilteredTools(reg2, s2.Filter())))
			_ = again.Append(ledger.RoleUser, artifact.Text{Content: "now send it"})
			if _, err := step2.Run(ctx, again, prov2); err != nil {
				t.Fatal(err)
			}
			if got := names(prov2.Requests()[0].Tools); !slices.Equal(got, []string{"clock", invoiceTool, toolsearch.DefaultName}) {
				t.Fatalf("the reloaded thread offers %v", got)
			}
			turns := again.Turns()
			last := turns[len(turns)-2].Artifacts[0].(artifact.ToolResult)
			if last.IsError || last.Content != "invoice sent" {
				t.Fatalf("the call on the reloaded thread: %+v", last)
			}
		})
	}
}
