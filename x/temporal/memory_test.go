package temporal_test

import (
	"context"
	"strings"
	"testing"

	"github.com/lodeworks/lode/artifact"
	"github.com/lodeworks/lode/ledger"
	"github.com/lodeworks/lode/ledger/file"
	"github.com/lodeworks/lode/provider"
	"github.com/lodeworks/lode/tool"
	"github.com/lodeworks/lode/x/auth"
	"github.com/lodeworks/lode/x/memory"
	"github.com/lodeworks/lode/x/provider/script"
	lt "github.com/lodeworks/lode/x/temporal"
	xtool "github.com/lodeworks/lode/x/tool"
)

// A run on Temporal keeps its caller's memory: the turn activity stores
// the facts recalled for the message right after it (once, however the
// activity is retried), and the call activities run memory_search in the
// thread's scope, so alice finds her fact and bob, of the same tenant,
// is recalled and finds nothing.
func TestWorkflowMemory(t *testing.T) {
	ctx := context.Background()
	facts, err := memory.OpenFile(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer facts.Close()
	alice := auth.Identity{User: "alice", Tenant: "acme"}
	sc, _ := memory.ScopeOf(alice)
	if _, err := facts.Save(ctx, sc, "The locker code is 4417."); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		id   auth.Identity
		find bool
	}{
		{alice, true},
		{auth.Identity{User: "bob", Tenant: "acme"}, false},
	} {
		t.Run(tc.id.User, func(t *testing.T) {
			s, err := file.Open(t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			st, err := s.Create(ctx, ledger.WithID("t1"), ledger.WithMetadata(tc.id.Metadata()),
				ledger.WithTurns(ledger.Turn{Role: ledger.RoleUser, Artifacts: []artifact.Artifact{artifact.Text{Content: "what is my locker code?"}}}))
			if err != nil {
				t.Fatal(err)
			}
			st.Close()
			reg := tool.NewRegistry()
			if err := memory.Register(reg, facts); err != nil {
				t.Fatal(err)
			}
			prov := script.Play(script.Call("c1", memory.SearchTool, `{"query":"locker code"}`), script.Text("done"))
			a, err := lt.New(s, prov, lt.WithHandler(xtool.NewHandler(reg)),
				lt.WithInvokeOptions(provider.WithTools(reg.Tools()), memory.Recall(facts)))
			if err != nil {
				t.Fatal(err)
			}
			e := env(t, a)
			e.ExecuteWorkflow(lt.WorkflowName, lt.RunInput{Thread: "t1"})
			if err := e.GetWorkflowError(); err != nil {
				t.Fatal(err)
			}
			got := mustLoad(t, s, "t1")
			turns := got.Turns()
			recalls := 0
			for _, tr := range turns {
				if memory.IsRecall(tr) {
					recalls++
				}
			}
			if want := map[bool]int{true: 1, false: 0}[tc.find]; recalls != want || tc.find && !memory.IsRecall(turns[1]) {
				t.Fatalf("%d recall turns, want %d after the message: %+v", recalls, want, turns)
			}
			rs := results(t, s, "t1")["c1"]
			if len(rs) != 1 || strings.Contains(rs[0].Content, "4417") != tc.find {
				t.Fatalf("memory_search gave %+v", rs)
			}
			// The second request begins with the first.
			reqs := prov.Requests()
			if len(reqs) != 2 || len(reqs[1].Turns) <= len(reqs[0].Turns) {
				t.Fatalf("requests %+v", reqs)
			}
			for i, tr := range reqs[0].Turns {
				if tr.Role != reqs[1].Turns[i].Role || len(tr.Artifacts) != len(reqs[1].Turns[i].Artifacts) {
					t.Fatalf("request 2 does not begin with request 1 at turn %d", i)
				}
			}
		})
	}
}

// With memory.Extractor among the answer handlers, a run's last answer
// has its facts saved in the thread's caller's scope by the turn
// activity; a turn that calls tools does not.
func TestWorkflowExtraction(t *testing.T) {
	ctx := context.Background()
	facts, err := memory.OpenFile(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer facts.Close()
	alice := auth.Identity{User: "alice", Tenant: "acme"}
	s, err := file.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	st, err := s.Create(ctx, ledger.WithID("t1"), ledger.WithMetadata(alice.Metadata()),
		ledger.WithTurns(ledger.Turn{Role: ledger.RoleUser, Artifacts: []artifact.Artifact{artifact.Text{Content: "I cycle to work; what time is it?"}}}))
	if err != nil {
		t.Fatal(err)
	}
	st.Close()
	h := &tools{}
	prov := script.Play(script.Call("c1", "read", `{"p":1}`), script.Text("Noon."))
	extractor := script.Play(script.Text(`{"facts": ["Alice cycles to work."]}`))
	a, err := lt.New(s, prov, lt.WithHandler(h), lt.WithAnswerHandlers(memory.Extractor(facts, extractor)))
	if err != nil {
		t.Fatal(err)
	}
	e := env(t, a)
	e.ExecuteWorkflow(lt.WorkflowName, lt.RunInput{Thread: "t1"})
	if err := e.GetWorkflowError(); err != nil {
		t.Fatal(err)
	}
	if n := len(extractor.Requests()); n != 1 {
		t.Fatalf("the extraction model was asked %d times, want once, after the last answer", n)
	}
	for _, c := range []struct {
		id   auth.Identity
		want int
	}{{alice, 1}, {auth.Identity{User: "bob", Tenant: "acme"}, 0}, {auth.Identity{User: "alice", Tenant: "globex"}, 0}} {
		sc, _ := memory.ScopeOf(c.id)
		list, err := facts.List(ctx, sc)
		if err != nil || len(list) != c.want {
			t.Errorf("%s@%s holds %+v (%v), want %d", c.id.User, c.id.Tenant, list, err, c.want)
		}
	}
	if v, _ := mustLoad(t, s, "t1").Metadata(memory.ExtractedKey); v != "4" {
		t.Errorf("turns read up to %q, want 4", v)
	}
}
