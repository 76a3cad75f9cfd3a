package temporal_test

import (
	"context"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lodeworks/lode/artifact"
	"github.com/lodeworks/lode/ledger"
	"github.com/lodeworks/lode/tool"
	"github.com/lodeworks/lode/x/agent"
	"github.com/lodeworks/lode/x/auth"
	"github.com/lodeworks/lode/x/provider/script"
	lt "github.com/lodeworks/lode/x/temporal"
	xtool "github.com/lodeworks/lode/x/tool"
)

// family is a parent whose registry holds the agent "helper" and the
// tool "secret", and a child whose own registry holds "read" and
// "secret"; the parent's turns offer only the helper.
type family struct {
	s          ledger.Store
	id         string
	parent     *script.Provider
	child      *script.Provider
	a          *lt.Agent
	mu         sync.Mutex
	childRuns  map[string]int
	parentRuns int
}

func newFamily(t *testing.T, parentSteps []script.Step, childSteps []script.Step, childOpts []agent.Option, hopts ...xtool.HandlerOption) *family {
	t.Helper()
	f := &family{childRuns: map[string]int{}}
	f.s, f.id = thread(t, "go")
	own := tool.NewRegistry()
	for _, n := range []string{"read", "secret"} {
		if err := own.Register(tool.Tool{Name: n}, func(context.Context, tool.Sandbox, map[string]any) (any, error) {
			f.mu.Lock()
			f.childRuns[n]++
			f.mu.Unlock()
			return "the child ran " + n, nil
		}); err != nil {
			t.Fatal(err)
		}
	}
	f.child = script.Play(childSteps...)
	helper, err := agent.New("helper", "Helps.", append([]agent.Option{agent.WithProvider(f.child), agent.WithRegistry(own), agent.WithSystemPrompt("Be brief.")}, childOpts...)...)
	if err != nil {
		t.Fatal(err)
	}
	reg := tool.NewRegistry()
	if err := agent.Register(reg, helper); err != nil {
		t.Fatal(err)
	}
	if err := reg.Register(tool.Tool{Name: "secret"}, func(context.Context, tool.Sandbox, map[string]any) (any, error) {
		f.mu.Lock()
		f.parentRuns++
		f.mu.Unlock()
		return "the parent ran secret", nil
	}); err != nil {
		t.Fatal(err)
	}
	onlyHelper := xtool.WithFilteredTools(reg, func(_ context.Context, _ ledger.State, ts []tool.Tool) []tool.Tool {
		// A new slice: the registry's own is shared.
		var out []tool.Tool
		for _, t := range ts {
			if t.Name == "helper" {
				out = append(out, t)
			}
		}
		return out
	})
	f.parent = script.Play(parentSteps...)
	f.a, err = lt.New(f.s, f.parent, lt.WithHandler(xtool.NewHandler(reg, hopts...)), lt.WithInvokeOptions(onlyHelper), lt.WithChildAgents(reg, helper))
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func TestChildAgentIsAChildWorkflow(t *testing.T) {
	f := newFamily(t,
		[]script.Step{script.Call("c1", "helper", `{"task":"look"}`), script.Text("done")},
		[]script.Step{script.Call("k1", "read", `{}`), script.Text("found it")}, nil)
	e := newEnv(f.a)
	e.ExecuteWorkflow(lt.WorkflowName, lt.RunInput{Thread: f.id})
	if err := e.GetWorkflowError(); err != nil {
		t.Fatal(err)
	}
	var out lt.RunOutput
	_ = e.GetWorkflowResult(&out)
	rs := results(t, f.s, f.id)
	if out.Answer != "done" || len(rs["c1"]) != 1 || rs["c1"][0].Content != "found it" || rs["c1"][0].IsError {
		t.Fatalf("answer %q, results %+v", out.Answer, rs)
	}
	childID := lt.ChildThreadID(f.id, "c1")
	parent := mustLoad(t, f.s, f.id)
	if v, _ := parent.Metadata(agent.MetaChildPrefix + "c1"); v != childID {
		t.Fatalf("parent links %q, want %q", v, childID)
	}
	child := mustLoad(t, f.s, childID)
	for k, want := range map[string]string{agent.MetaAgent: "helper", agent.MetaDepth: "1", agent.MetaParentThread: f.id, agent.MetaParentCall: "c1", agent.MetaDenied: `["secret"]`} {
		if v, _ := child.Metadata(k); v != want {
			t.Fatalf("child %s = %q, want %q", k, v, want)
		}
	}
	var roles []string
	for _, tr := range child.Turns() {
		roles = append(roles, string(tr.Role))
	}
	if strings.Join(roles, ",") != "system,user,assistant,tool,assistant" {
		t.Fatalf("child turns %v", roles)
	}
	if f.childRuns["read"] != 1 || len(results(t, f.s, childID)["k1"]) != 1 {
		t.Fatalf("child runs %v", f.childRuns)
	}
	// Tools never widen: the child's turns offered "read", not the
	// "secret" its caller's turn did not offer.
	for _, req := range f.child.Requests() {
		var names []string
		for _, tl := range req.Tools {
			names = append(names, tl.Name)
		}
		if strings.Join(names, ",") != "read" {
			t.Fatalf("the child was offered %v", names)
		}
	}
}

// TestChildRefusesWhatItWasDenied: the child's model calls "secret",
// which its caller's turn did not offer: refused as in x/agent, not run.
func TestChildRefusesWhatItWasDenied(t *testing.T) {
	f := newFamily(t,
		[]script.Step{script.Call("c1", "helper", `{"task":"look"}`), script.Text("done")},
		[]script.Step{script.Call("k1", "secret", `{}`), script.Text("could not")}, nil)
	e := newEnv(f.a)
	e.ExecuteWorkflow(lt.WorkflowName, lt.RunInput{Thread: f.id})
	if err := e.GetWorkflowError(); err != nil {
		t.Fatal(err)
	}
	rs := results(t, f.s, lt.ChildThreadID(f.id, "c1"))["k1"]
	if len(rs) != 1 || !rs[0].IsError || rs[0].Content != `unknown tool "secret". Tools available in this turn: read.` || f.childRuns["secret"] != 0 || f.parentRuns != 0 {
		t.Fatalf("result %+v, child runs %v, parent runs %d", rs, f.childRuns, f.parentRuns)
	}
}

func TestChildAgentFailures(t *testing.T) {
	cases := []struct {
		name     string
		args     string
		child    []script.Step
		opts     []agent.Option
		want     string
		noThread bool
	}{
		{"arguments that break the schema", `{}`, nil, nil, "the agent helper was not started: ", true},
		{"a depth past the limit is refused before anything starts", `{"task":"look"}`, nil, []agent.Option{agent.WithMaxDepth(1)},
			"the agent helper was not started: agents are already nested 1 deep here, the most allowed. Do this part yourself, with the tools you have.", true},
		{"the child runs out of turns", `{"task":"look"}`, []script.Step{script.Call("k1", "read", `{}`), script.Call("k2", "read", `{}`)}, []agent.Option{agent.WithMaxTurns(1)},
			"the agent helper stopped before finishing: it used all 1 of its turns. Give it a smaller task, or do the rest yourself.", false},
		{"the child answers nothing", `{"task":"look"}`, []script.Step{script.Reply()}, nil,
			"the agent helper finished without a text answer. Ask it again more precisely, or do this part yourself.", false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := newFamily(t, []script.Step{script.Call("c1", "helper", c.args), script.Text("done")}, c.child, c.opts)
			// The parent is itself a child, at depth 1.
			st := mustLoad(t, f.s, f.id)
			if err := st.SetMetadata(agent.MetaDepth, "1"); err != nil {
				t.Fatal(err)
			}
			e := newEnv(f.a)
			e.ExecuteWorkflow(lt.WorkflowName, lt.RunInput{Thread: f.id})
			if err := e.GetWorkflowError(); err != nil {
				t.Fatal(err)
			}
			rs := results(t, f.s, f.id)["c1"]
			if len(rs) != 1 || !rs[0].IsError || !strings.HasPrefix(rs[0].Content, c.want) {
				t.Fatalf("result %+v, want %q", rs, c.want)
			}
			_, err := f.s.Load(context.Background(), lt.ChildThreadID(f.id, "c1"))
			if c.noThread != (err != nil) {
				t.Fatalf("child thread: %v", err)
			}
		})
	}
}

// TestChildInheritsApprovals: the caller's handler requires approval for
// "read"; the child's call to it waits, the parent's PendingQuery lists
// it, and a decision signalled to the parent runs it in the child, once.
func TestChildInheritsApprovals(t *testing.T) {
	for _, approve := range []bool{true, false} {
		t.Run(map[bool]string{true: "approved", false: "denied"}[approve], func(t *testing.T) {
			f := newFamily(t,
				[]script.Step{script.Call("c1", "helper", `{"task":"look"}`), script.Text("done")},
				[]script.Step{script.Call("k1", "read", `{}`), script.Text("found it")}, nil,
				xtool.WithApprover(xtool.PauseForDecision), xtool.WithApprovalFor("read"))
			e := newEnv(f.a)
			var listed []artifact.Pending
			e.RegisterDelayedCallback(func() {
				if v, err := e.QueryWorkflow(lt.PendingQuery); err == nil {
					_ = v.Get(&listed)
				}
				d := artifact.Decision{ToolCallID: "k1", Approved: approve, Reason: "not now"}
				e.SignalWorkflow(lt.DecideSignal, d)
			}, time.Minute)
			e.ExecuteWorkflow(lt.WorkflowName, lt.RunInput{Thread: f.id})
			if err := e.GetWorkflowError(); err != nil {
				t.Fatal(err)
			}
			if len(listed) != 1 || listed[0].ToolCallID != "k1" || listed[0].Reason != "for the caller: the configuration requires approval for read" {
				t.Fatalf("pending %+v", listed)
			}
			k1 := results(t, f.s, lt.ChildThreadID(f.id, "c1"))["k1"]
			if approve && (f.childRuns["read"] != 1 || len(k1) != 1 || k1[0].IsError) {
				t.Fatalf("approved: runs %v, result %+v", f.childRuns, k1)
			}
			if !approve && (f.childRuns["read"] != 0 || len(k1) != 1 || !strings.Contains(k1[0].Content, "not now")) {
				t.Fatalf("denied: runs %v, result %+v", f.childRuns, k1)
			}
			if rs := results(t, f.s, f.id)["c1"]; len(rs) != 1 || rs[0].Content != "found it" {
				t.Fatalf("parent result %+v", rs)
			}
		})
	}
}

// The caller's identity (user, tenant, roles, as a door wrote them) goes
// down to the child's thread, so that x/policy's roles and tenant limits
// bind in the child as in its caller; and the results of an answer that
// called a child agent and a tool land as one tool turn, in call order.
func TestChildCarriesTheCallersIdentity(t *testing.T) {
	f := newFamily(t,
		[]script.Step{script.Reply(artifact.ToolCall{ID: "c1", Name: "helper", Arguments: `{"task":"look"}`}, artifact.ToolCall{ID: "c2", Name: "secret", Arguments: `{}`}), script.Text("done")},
		[]script.Step{script.Text("found it")}, nil)
	id := auth.Identity{User: "ann", Tenant: "acme", Roles: []string{"editor", "viewer"}}
	st, err := f.s.Load(context.Background(), f.id)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range id.Metadata() {
		if err := st.SetMetadata(k, v); err != nil {
			t.Fatal(err)
		}
	}
	st.Close()
	e := newEnv(f.a)
	e.ExecuteWorkflow(lt.WorkflowName, lt.RunInput{Thread: f.id})
	if err := e.GetWorkflowError(); err != nil {
		t.Fatal(err)
	}
	child := mustLoad(t, f.s, lt.ChildThreadID(f.id, "c1"))
	if got := auth.Of(child); !reflect.DeepEqual(got, id) {
		t.Fatalf("the child's thread is %+v's, want %+v's", got, id)
	}
	parent := mustLoad(t, f.s, f.id).Turns()
	if len(parent) != 4 || parent[2].Role != ledger.RoleTool || len(parent[2].Artifacts) != 2 ||
		parent[2].Artifacts[0].(artifact.ToolResult).ToolCallID != "c1" || parent[2].Artifacts[1].(artifact.ToolResult).ToolCallID != "c2" {
		t.Fatalf("parent turns %+v", parent)
	}
}
