package temporal_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/testsuite"

	"github.com/lodeworks/lode/artifact"
	"github.com/lodeworks/lode/ledger"
	"github.com/lodeworks/lode/loop"
	"github.com/lodeworks/lode/tool"
	"github.com/lodeworks/lode/x/agent"
	"github.com/lodeworks/lode/x/policy"
	"github.com/lodeworks/lode/x/provider/script"
	lt "github.com/lodeworks/lode/x/temporal"
	xtool "github.com/lodeworks/lode/x/tool"
)

// kin is a parent whose registry holds the agent "helper" and its own
// tool "write", every tool offered, and a child whose registry holds
// "read" and "slow" (which runs until its context ends). The parent's
// thread t1 holds the role "editor".
type kin struct {
	s     ledger.Store
	id    string
	child *script.Provider
	a     *lt.Agent
	mu    sync.Mutex
	runs  map[string]int
}

func (k *kin) ran(name string) int {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.runs[name]
}

func newKin(t *testing.T, parentSteps, childSteps []script.Step, childOpts []agent.Option, hopts func(tool.Registry) []xtool.HandlerOption) *kin {
	t.Helper()
	k := &kin{runs: map[string]int{}}
	k.s, k.id = thread(t, "go")
	st := mustLoad(t, k.s, k.id)
	if err := st.SetMetadata(policy.RolesKey, "editor"); err != nil {
		t.Fatal(err)
	}
	count := func(name string, slow bool) tool.ToolFunc {
		return func(ctx context.Context, _ tool.Sandbox, _ map[string]any) (any, error) {
			k.mu.Lock()
			k.runs[name]++
			k.mu.Unlock()
			if slow {
				<-ctx.Done()
				return nil, ctx.Err()
			}
			return "ran " + name, nil
		}
	}
	own := tool.NewRegistry()
	for _, n := range []string{"read", "slow"} {
		if err := own.Register(tool.Tool{Name: n}, count(n, n == "slow")); err != nil {
			t.Fatal(err)
		}
	}
	k.child = script.Play(childSteps...)
	helper, err := agent.New("helper", "Helps.", append([]agent.Option{agent.WithProvider(k.child), agent.WithRegistry(own)}, childOpts...)...)
	if err != nil {
		t.Fatal(err)
	}
	reg := tool.NewRegistry()
	if err := agent.Register(reg, helper); err != nil {
		t.Fatal(err)
	}
	if err := reg.Register(tool.Tool{Name: "write"}, count("write", false)); err != nil {
		t.Fatal(err)
	}
	var opts []xtool.HandlerOption
	if hopts != nil {
		opts = hopts(reg)
	}
	k.a, err = lt.New(k.s, script.Play(parentSteps...), lt.WithHandler(xtool.NewHandler(reg, opts...)),
		lt.WithInvokeOptions(xtool.WithFilteredTools(reg, nil)), lt.WithChildAgents(reg, helper))
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func (k *kin) run(t *testing.T, e *testsuite.TestWorkflowEnvironment) {
	t.Helper()
	e.ExecuteWorkflow(lt.WorkflowName, lt.RunInput{Thread: k.id})
	if err := e.GetWorkflowError(); err != nil {
		t.Fatal(err)
	}
}

// TestChildCallAskedInTheCallersTurn: the caller's approval rule, asked
// about the child's call, reads the caller's turn (its thread, its answer,
// the call that started the child) through loop.CurrentTurn, as it does
// for a child run inside the call.
func TestChildCallAskedInTheCallersTurn(t *testing.T) {
	rule := func(ctx context.Context, tl tool.Tool, call artifact.ToolCall) (string, bool) {
		if tl.Name != "read" {
			return "", false
		}
		turn, ok := loop.CurrentTurn(ctx)
		if !ok || turn.State == nil {
			return "no turn", true
		}
		i, _ := loop.ArtifactIndex(ctx)
		c, _ := turn.Answer[i].(artifact.ToolCall)
		role, _ := turn.State.Metadata(policy.RolesKey)
		return fmt.Sprintf("%s asked in thread %s (role %s) under %s", call.ID, turn.State.ID(), role, c.ID), true
	}
	k := newKin(t,
		[]script.Step{script.Reply(artifact.Text{Content: "let me ask"}, artifact.ToolCall{ID: "c1", Name: "helper", Arguments: `{"task":"look"}`}), script.Text("done")},
		[]script.Step{script.Call("k1", "read", `{}`), script.Text("found it")}, nil,
		func(tool.Registry) []xtool.HandlerOption {
			return []xtool.HandlerOption{xtool.WithApprover(xtool.PauseForDecision), xtool.WithApprovalRule(rule)}
		})
	e := newEnv(k.a)
	var listed []artifact.Pending
	e.RegisterDelayedCallback(func() {
		if v, err := e.QueryWorkflow(lt.PendingQuery); err == nil {
			_ = v.Get(&listed)
		}
		e.SignalWorkflow(lt.DecideSignal, artifact.Decision{ToolCallID: "k1", Approved: true})
	}, time.Minute)
	k.run(t, e)
	if len(listed) != 1 || listed[0].Reason != "for the caller: k1 asked in thread t1 (role editor) under c1" {
		t.Fatalf("pending %+v", listed)
	}
	if rs := results(t, k.s, k.id)["c1"]; len(rs) != 1 || rs[0].Content != "found it" || k.ran("read") != 1 {
		t.Fatalf("parent result %+v, read ran %d times", rs, k.ran("read"))
	}
}

const callsPerRun3 = `
roles:
  editor:
    allow:
      tools: ["*"]
    limits:
      calls_per_run: 3
`

func enforced(t *testing.T) func(tool.Registry) []xtool.HandlerOption {
	p, err := policy.Parse([]byte(callsPerRun3))
	if err != nil {
		t.Fatal(err)
	}
	return func(reg tool.Registry) []xtool.HandlerOption { return policy.NewEnforcer(reg, p).HandlerOptions() }
}

// TestChildCallsCountTowardCallersRunLimit: x/policy's calls_per_run of
// the caller counts its calls and every call its child makes, as in
// process: the caller's c1 is call 1, the child's k1 and k2 make 3, k3 is
// refused in the words a child run inside the call reads, and the
// caller's later w1 is refused too, the child's calls kept on its thread.
func TestChildCallsCountTowardCallersRunLimit(t *testing.T) {
	k := newKin(t,
		[]script.Step{script.Call("c1", "helper", `{"task":"read thrice"}`), script.Call("w1", "write", `{}`), script.Text("done")},
		[]script.Step{script.Call("k1", "read", `{}`), script.Call("k2", "read", `{}`), script.Call("k3", "read", `{}`), script.Text("read twice")},
		nil, enforced(t))
	k.run(t, newEnv(k.a))
	child := results(t, k.s, lt.ChildThreadID(k.id, "c1"))
	if want := "the call to read was refused: the caller that started you allows 3 tool calls per request, counting those of the agents it calls, and they are used up; answer with what you have"; len(child["k3"]) != 1 || !child["k3"][0].IsError || child["k3"][0].Content != want {
		t.Fatalf("k3: %+v, want %q", child["k3"], want)
	}
	if k.ran("read") != 2 || len(child["k1"]) != 1 || child["k1"][0].IsError || len(child["k2"]) != 1 || child["k2"][0].IsError {
		t.Fatalf("read ran %d times; child results %+v", k.ran("read"), child)
	}
	parent := results(t, k.s, k.id)
	if rs := parent["c1"]; len(rs) != 1 || rs[0].Content != "read twice" {
		t.Fatalf("c1: %+v", rs)
	}
	if want := "the call to write was refused: your role allows 3 tool calls per request and they are used up; answer with what you have"; len(parent["w1"]) != 1 || parent["w1"][0].Content != want || k.ran("write") != 0 {
		t.Fatalf("w1: %+v, write ran %d times", parent["w1"], k.ran("write"))
	}
	if got, _ := mustLoad(t, k.s, k.id).Metadata(xtool.MetaCallsBelowPrefix + "c1"); got != "3" {
		t.Fatalf("calls below c1 recorded as %q, want 3", got)
	}
}

// TestChildCallCountLivesInTheLedger: a worker that never saw the run
// counts the calls the child made before it: the count is read from the
// threads, not kept in any worker's memory.
func TestChildCallCountLivesInTheLedger(t *testing.T) {
	k := newKin(t, nil, nil, nil, enforced(t))
	ctx := context.Background()
	root := mustLoad(t, k.s, k.id)
	if err := root.Append(ledger.RoleAssistant, artifact.ToolCall{ID: "c1", Name: "helper", Arguments: `{"task":"read thrice"}`}); err != nil {
		t.Fatal(err)
	}
	childID := lt.ChildThreadID(k.id, "c1")
	if err := root.SetMetadata(agent.MetaChildPrefix+"c1", childID); err != nil {
		t.Fatal(err)
	}
	// What the worker that died left: the child's first two calls ran.
	call := func(id string) artifact.ToolCall { return artifact.ToolCall{ID: id, Name: "read", Arguments: `{}`} }
	done := func(id string) ledger.Turn {
		return ledger.Turn{Role: ledger.RoleTool, Artifacts: []artifact.Artifact{artifact.ToolResult{ToolCallID: id, Name: "read", Content: "ran read"}}}
	}
	cst, err := k.s.Create(ctx, ledger.WithID(childID),
		ledger.WithMetadata(map[string]string{agent.MetaAgent: "helper", agent.MetaDepth: "1", agent.MetaParentThread: k.id, agent.MetaParentCall: "c1"}),
		ledger.WithTurns(
			ledger.Turn{Role: ledger.RoleUser, Artifacts: []artifact.Artifact{artifact.Text{Content: "read thrice"}}},
			ledger.Turn{Role: ledger.RoleAssistant, Artifacts: []artifact.Artifact{call("k1")}}, done("k1"),
			ledger.Turn{Role: ledger.RoleAssistant, Artifacts: []artifact.Artifact{call("k2")}}, done("k2"),
			ledger.Turn{Role: ledger.RoleAssistant, Artifacts: []artifact.Artifact{call("k3")}},
		))
	if err != nil {
		t.Fatal(err)
	}
	cst.Close()
	var suite testsuite.WorkflowTestSuite
	ae := suite.NewTestActivityEnvironment()
	ae.RegisterActivityWithOptions(k.a.Call, activity.RegisterOptions{Name: lt.CallName})
	v, err := ae.ExecuteActivity(lt.CallName, lt.CallInput{Thread: childID, Agent: "helper", At: 5, ID: "k3"})
	if err != nil {
		t.Fatal(err)
	}
	var r lt.CallResult
	if err := v.Get(&r); err != nil {
		t.Fatal(err)
	}
	got := results(t, k.s, childID)["k3"]
	if !r.IsError || len(got) != 1 || !strings.Contains(got[0].Content, "the caller that started you allows 3 tool calls per request") || k.ran("read") != 0 {
		t.Fatalf("k3: %+v (%+v), read ran %d times", got, r, k.ran("read"))
	}
}

// TestChildLimits: a child workflow stops at its agent's WithMaxTurns,
// WithMaxTokens and WithTimeLimit, and the caller's model reads which, in
// x/agent's words.
func TestChildLimits(t *testing.T) {
	usage := func(id, name string, tokens int64) script.Step {
		return script.Reply(artifact.ToolCall{ID: id, Name: name, Arguments: `{}`}, artifact.Usage{InputTokens: tokens - 10, OutputTokens: 10})
	}
	cases := []struct {
		name  string
		child []script.Step
		opts  []agent.Option
		want  string
		runs  map[string]int
	}{
		{"turns", []script.Step{usage("k1", "read", 50), usage("k2", "read", 50), script.Text("late")}, []agent.Option{agent.WithMaxTurns(2)},
			"the agent helper stopped before finishing: it used all 2 of its turns. Give it a smaller task, or do the rest yourself.", map[string]int{"read": 2}},
		{"tokens", []script.Step{usage("k1", "read", 60), usage("k2", "read", 60), script.Text("late")}, []agent.Option{agent.WithMaxTokens(100)},
			"the agent helper stopped before finishing: it used 120 tokens, past its limit of 100. Give it a smaller task, or do the rest yourself.", map[string]int{"read": 2}},
		{"tokens reached exactly", []script.Step{usage("k1", "read", 100), script.Text("late")}, []agent.Option{agent.WithMaxTokens(100)},
			"the agent helper stopped before finishing: it used 100 tokens, past its limit of 100. Give it a smaller task, or do the rest yourself.", map[string]int{"read": 1}},
		{"time", []script.Step{usage("k1", "slow", 10), script.Text("late")}, []agent.Option{agent.WithTimeLimit(200 * time.Millisecond)},
			"the agent helper stopped before finishing: it ran out of its 200ms time limit. Give it a smaller task, or do the rest yourself.", map[string]int{"slow": 1}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			k := newKin(t, []script.Step{script.Call("c1", "helper", `{"task":"look"}`), script.Text("done")}, c.child, c.opts, nil)
			k.run(t, newEnv(k.a))
			rs := results(t, k.s, k.id)["c1"]
			if len(rs) != 1 || !rs[0].IsError || rs[0].Content != c.want {
				t.Fatalf("c1: %+v, want %q", rs, c.want)
			}
			for name, n := range c.runs {
				if k.ran(name) != n {
					t.Fatalf("%s ran %d times, want %d", name, k.ran(name), n)
				}
			}
			if len(k.child.Requests()) != len(c.child)-1 {
				t.Fatalf("the child's model was asked %d times, want %d", len(k.child.Requests()), len(c.child)-1)
			}
		})
	}
}

// TestCallToAChildPastTheCallersLimit: the caller's handler checks its
// call to a child agent as it checks any call: past calls_per_run it is
// refused in the same words, and no child starts.
func TestCallToAChildPastTheCallersLimit(t *testing.T) {
	k := newKin(t,
		[]script.Step{script.Call("c1", "helper", `{"task":"read thrice"}`), script.Call("c2", "helper", `{"task":"read again"}`), script.Text("done")},
		[]script.Step{script.Call("k1", "read", `{}`), script.Call("k2", "read", `{}`), script.Text("read twice")},
		nil, enforced(t))
	k.run(t, newEnv(k.a))
	rs := results(t, k.s, k.id)
	if want := "the call to helper was refused: your role allows 3 tool calls per request and they are used up; answer with what you have"; len(rs["c2"]) != 1 || !rs["c2"][0].IsError || rs["c2"][0].Content != want {
		t.Fatalf("c2: %+v, want %q", rs["c2"], want)
	}
	if _, err := k.s.Load(context.Background(), lt.ChildThreadID(k.id, "c2")); err == nil {
		t.Fatal("a child thread was created for the refused call")
	}
	if len(k.child.Requests()) != 3 || k.ran("read") != 2 {
		t.Fatalf("the child's model was asked %d times and read ran %d times, want 3 and 2", len(k.child.Requests()), k.ran("read"))
	}
}
