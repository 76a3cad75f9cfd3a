package temporal_test

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/testsuite"

	"github.com/lodeworks/lode/artifact"
	"github.com/lodeworks/lode/ledger"
	"github.com/lodeworks/lode/loop"
	"github.com/lodeworks/lode/provider"
	"github.com/lodeworks/lode/tool"
	"github.com/lodeworks/lode/x/provider/script"
	lt "github.com/lodeworks/lode/x/temporal"
	xtool "github.com/lodeworks/lode/x/tool"
)

// guardedTools is a registry of "read" (idempotent), "rm" and "guarded"
// (which needs a person's approval) and the x/tool Handler over it that
// pauses for decisions; runs counts each tool's runs.
type guardedTools struct {
	mu   sync.Mutex
	runs map[string]int
}

func (g *guardedTools) handler(t *testing.T) (*xtool.Handler, provider.InvokeOption) {
	t.Helper()
	reg := tool.NewRegistry()
	for _, n := range []string{"read", "rm", "guarded"} {
		tl := tool.Tool{Name: n, Hints: tool.Hints{Idempotent: n == "read"}}
		if err := reg.Register(tl, func(_ context.Context, _ tool.Sandbox, args map[string]any) (any, error) {
			g.mu.Lock()
			if g.runs == nil {
				g.runs = map[string]int{}
			}
			g.runs[n]++
			g.mu.Unlock()
			return fmt.Sprintf("ran %s %v", n, args["n"]), nil
		}); err != nil {
			t.Fatal(err)
		}
	}
	return xtool.NewHandler(reg, xtool.WithApprovalFor("guarded"), xtool.WithApprover(xtool.PauseForDecision)), xtool.WithFilteredTools(reg, nil)
}

// options are the Agent's options with g's handler and tools.
func (g *guardedTools) options(t *testing.T) []lt.Option {
	h, offer := g.handler(t)
	return []lt.Option{lt.WithHandler(h), lt.WithInvokeOptions(offer)}
}

func (g *guardedTools) ran(name string) int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.runs[name]
}

// inProcess runs steps on a fresh thread with loop.Step.Run, resuming with
// each decision in turn while the run pauses, and returns the thread's
// turns: the twin a Temporal run must equal.
func inProcess(t *testing.T, steps []script.Step, decisions ...artifact.Decision) []ledger.Turn {
	t.Helper()
	s, id := thread(t, "go")
	st, err := s.Load(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	g := &guardedTools{}
	h, offer := g.handler(t)
	step := loop.New(loop.WithHandlers(h), loop.WithInvokeOptions(offer))
	prov := script.Play(steps...)
	ctx := context.Background()
	_, err = step.Run(ctx, st, prov)
	for _, d := range decisions {
		if !errors.Is(err, loop.ErrPaused) {
			t.Fatalf("in process: %v, want a pause for %s", err, d.ToolCallID)
		}
		_, err = step.Resume(ctx, st, prov, []artifact.Decision{d})
	}
	if err != nil {
		t.Fatalf("in process: %v", err)
	}
	// As stored: what a later reader of the thread reads.
	return mustLoad(t, s, id).Turns()
}

// sameTurns fails unless got and want hold the same turns, role and
// artifacts, whenever each was appended.
func sameTurns(t *testing.T, got, want []ledger.Turn) {
	t.Helper()
	show := func(ts []ledger.Turn) string {
		var sb strings.Builder
		for i, tr := range ts {
			fmt.Fprintf(&sb, "\n  %d %s %+v", i, tr.Role, tr.Artifacts)
		}
		return sb.String()
	}
	ok := len(got) == len(want)
	for i := 0; ok && i < len(got); i++ {
		ok = got[i].Role == want[i].Role && reflect.DeepEqual(got[i].Artifacts, want[i].Artifacts)
	}
	if !ok {
		t.Fatalf("the thread on Temporal:%s\nin process:%s", show(got), show(want))
	}
}

// decide sends the decisions to the run, one a minute of workflow time.
func decide(e *testsuite.TestWorkflowEnvironment, ds ...artifact.Decision) *[]artifact.Pending {
	var listed []artifact.Pending
	for i, d := range ds {
		e.RegisterDelayedCallback(func() {
			if i == 0 {
				if v, err := e.QueryWorkflow(lt.PendingQuery); err == nil {
					_ = v.Get(&listed)
				}
			}
			e.SignalWorkflow(lt.DecideSignal, d)
		}, time.Duration(i+1)*time.Minute)
	}
	return &listed
}

// The results of an answer's parallel calls land as one tool turn in the
// calls' order, the Pending record of the call that waits among them,
// and the decision and the approved call's result after it: turn for turn
// what the same run stores in process.
func TestParallelCallsAreOneToolTurnAsInProcess(t *testing.T) {
	steps := func() []script.Step {
		return []script.Step{
			script.Reply(artifact.ToolCall{ID: "c1", Name: "read", Arguments: `{"n":1}`}, artifact.ToolCall{ID: "c2", Name: "guarded", Arguments: `{"n":2}`}, artifact.ToolCall{ID: "c3", Name: "rm", Arguments: `{"n":3}`}),
			script.Reply(artifact.ToolCall{ID: "c4", Name: "read", Arguments: `{"n":4}`}, artifact.ToolCall{ID: "c5", Name: "rm", Arguments: `{"n":5}`}),
			script.Text("done"),
		}
	}
	want := inProcess(t, steps(), loop.Approve("c2"))
	s, id := thread(t, "go")
	g := &guardedTools{}
	a, err := lt.New(s, script.Play(steps()...), g.options(t)...)
	if err != nil {
		t.Fatal(err)
	}
	e := newEnv(a)
	decide(e, loop.Approve("c2"))
	e.ExecuteWorkflow(lt.WorkflowName, lt.RunInput{Thread: id})
	if err := e.GetWorkflowError(); err != nil {
		t.Fatal(err)
	}
	sameTurns(t, mustLoad(t, s, id).Turns(), want)
	if g.ran("read") != 2 || g.ran("rm") != 2 || g.ran("guarded") != 1 {
		t.Fatalf("runs %v", g.runs)
	}
}

// A worker that dies after an answer with a call that needs approval
// landed, and before the call's Pending record was written: the call is
// recorded as waiting, never as interrupted, the person is asked, and the
// thread is what the run stores in process, whether the call was alone
// in its answer or ran beside others.
func TestApprovalNeverSkippedWhenAWorkerDies(t *testing.T) {
	for _, tc := range []struct {
		name  string
		steps func() []script.Step
	}{
		{"alone", func() []script.Step {
			return []script.Step{script.Call("c1", "guarded", `{"n":1}`), script.Text("done")}
		}},
		{"beside other calls", func() []script.Step {
			return []script.Step{
				script.Reply(artifact.ToolCall{ID: "c0", Name: "read", Arguments: `{"n":0}`}, artifact.ToolCall{ID: "c1", Name: "guarded", Arguments: `{"n":1}`}),
				script.Text("done"),
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			want := inProcess(t, tc.steps(), loop.Approve("c1"))
			s, id := thread(t, "go")
			g := &guardedTools{}
			a, err := lt.New(s, script.Play(tc.steps()...), g.options(t)...)
			if err != nil {
				t.Fatal(err)
			}
			e := newEnv(a)
			died := 0
			e.RegisterActivityWithOptions(func(ctx context.Context, in lt.CallInput) (lt.CallResult, error) {
				if in.ID == "c1" && in.Decision == nil {
					// The worker dies before it writes the Pending record.
					died++
					return lt.CallResult{}, errors.New("the worker died")
				}
				return a.Call(ctx, in)
			}, activity.RegisterOptions{Name: lt.CallName})
			listed := decide(e, loop.Approve("c1"))
			e.ExecuteWorkflow(lt.WorkflowName, lt.RunInput{Thread: id})
			if err := e.GetWorkflowError(); err != nil {
				t.Fatal(err)
			}
			if died != 1 || len(*listed) != 1 || (*listed)[0].ToolCallID != "c1" {
				t.Fatalf("died %d times; waiting %+v, want c1", died, *listed)
			}
			if g.ran("guarded") != 1 {
				t.Fatalf("guarded ran %d times", g.ran("guarded"))
			}
			sameTurns(t, mustLoad(t, s, id).Turns(), want)
		})
	}
}

// streaming is a provider whose first answer streams until its context
// ends, as a model would while its worker dies; later answers are the
// script's.
type streaming struct {
	inside chan struct{}
	once   sync.Once
	then   *script.Provider
}

func (p *streaming) Invoke(ctx context.Context, req *provider.Request) iter.Seq2[artifact.Artifact, error] {
	first := false
	p.once.Do(func() { first = true })
	if !first {
		return p.then.Invoke(ctx, req)
	}
	return func(yield func(artifact.Artifact, error) bool) {
		close(p.inside)
		<-ctx.Done()
		yield(nil, ctx.Err())
	}
}

// A worker dies inside a model stream, holding the thread's lease: the
// retry of the turn, on another worker, takes the lease over at once (its
// owner names the run and the turn, not the process), and the run goes
// on; the dead attempt stores nothing.
func TestRetriedTurnTakesOverItsRunsLease(t *testing.T) {
	s, id := thread(t, "go")
	prov := &streaming{inside: make(chan struct{}), then: script.Play(script.Text("done"))}
	a, err := lt.New(s, prov)
	if err != nil {
		t.Fatal(err)
	}
	e := newEnv(a)
	dead := make(chan struct{})
	stopDead := func() {}
	var once sync.Once
	e.RegisterActivityWithOptions(func(ctx context.Context, in lt.TurnInput) (lt.TurnResult, error) {
		first := false
		once.Do(func() { first = true })
		if !first {
			return a.Turn(ctx, in)
		}
		// The attempt goes on, its lease taken, while Temporal takes its
		// worker for dead.
		zctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
		stopDead = cancel
		go func() { _, _ = a.Turn(zctx, in); close(dead) }()
		<-prov.inside
		st := mustLoad(t, s, id).(*ledger.StoredThread)
		if l, err := st.Lease(); err != nil || !l.Live(time.Now()) {
			t.Errorf("the dying turn holds no lease: %+v, %v", l, err)
		}
		return lt.TurnResult{}, errors.New("heartbeat timeout: the worker died")
	}, activity.RegisterOptions{Name: lt.TurnName})
	e.ExecuteWorkflow(lt.WorkflowName, lt.RunInput{Thread: id, HeartbeatTimeout: time.Hour})
	stopDead()
	<-dead
	if err := e.GetWorkflowError(); err != nil {
		t.Fatalf("the run failed: %v", err)
	}
	st := mustLoad(t, s, id).(*ledger.StoredThread)
	if n := st.Len(); n != 2 {
		t.Fatalf("%d turns, want the prompt and one answer", n)
	}
	if l, _ := st.Lease(); l.Owner != "" {
		t.Fatalf("lease left %+v", l)
	}
}

// Another run's live lease, or a loop run's, still keeps a turn off the
// thread.
func TestTurnMeetsAnotherRunsLease(t *testing.T) {
	for _, owner := range []string{"temporal/lode-t1/another-run/model-after-0", "lode run/host/1/abc"} {
		s, id := thread(t, "go")
		st, err := s.Load(context.Background(), id)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := st.AcquireLease(context.Background(), owner, time.Now(), time.Hour); err != nil {
			t.Fatal(err)
		}
		st.Close()
		prov := script.Play(script.Text("done"))
		a, err := lt.New(s, prov)
		if err != nil {
			t.Fatal(err)
		}
		var suite testsuite.WorkflowTestSuite
		env := suite.NewTestActivityEnvironment()
		env.RegisterActivityWithOptions(a.Turn, activity.RegisterOptions{Name: lt.TurnName})
		_, err = env.ExecuteActivity(lt.TurnName, lt.TurnInput{Thread: id})
		if err == nil || !strings.Contains(err.Error(), "leased to "+owner) {
			t.Fatalf("%s: %v, want the lease error", owner, err)
		}
		if len(prov.Requests()) != 0 {
			t.Fatalf("%s: the model was asked", owner)
		}
	}
}

// beating is a store whose Load, inside an activity, waits until that
// activity has sent a heartbeat: an activity that sends none never ends.
type beating struct {
	ledger.Store
	mu   sync.Mutex
	seen map[string]chan struct{}
}

func (b *beating) ch(name string) chan struct{} {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.seen == nil {
		b.seen = map[string]chan struct{}{}
	}
	if b.seen[name] == nil {
		b.seen[name] = make(chan struct{})
	}
	return b.seen[name]
}

func (b *beating) beat(name string) {
	ch := b.ch(name)
	b.mu.Lock()
	defer b.mu.Unlock()
	select {
	case <-ch:
	default:
		close(ch)
	}
}

func (b *beating) Load(ctx context.Context, id string) (*ledger.StoredThread, error) {
	if activity.IsActivity(ctx) {
		select {
		case <-b.ch(activity.GetInfo(ctx).ActivityType.Name):
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	return b.Store.Load(ctx, id)
}

// Every activity (length, turn, call, commit, interrupt) runs with a
// heartbeat timeout and sends heartbeats while it works, so a worker that
// dies in any of them costs the run seconds.
func TestEveryActivityHeartbeats(t *testing.T) {
	s, id := thread(t, "go")
	store := &beating{Store: s}
	h := broken{&tools{}, map[string]bool{"c3": true}}
	prov := script.Play(
		script.Reply(artifact.ToolCall{ID: "c1", Name: "read", Arguments: `{}`}, artifact.ToolCall{ID: "c2", Name: "rm", Arguments: `{}`}),
		script.Call("c3", "rm", `{}`),
		script.Text("done"),
	)
	a, err := lt.New(store, prov, lt.WithHandler(h))
	if err != nil {
		t.Fatal(err)
	}
	e := newEnv(a)
	var mu sync.Mutex
	timeouts := map[string]time.Duration{}
	e.SetOnActivityStartedListener(func(info *activity.Info, _ context.Context, _ converter.EncodedValues) {
		mu.Lock()
		timeouts[info.ActivityType.Name] = info.HeartbeatTimeout
		mu.Unlock()
	})
	e.SetOnActivityHeartbeatListener(func(info *activity.Info, _ converter.EncodedValues) {
		store.beat(info.ActivityType.Name)
	})
	e.ExecuteWorkflow(lt.WorkflowName, lt.RunInput{Thread: id, HeartbeatTimeout: 50 * time.Millisecond})
	if err := e.GetWorkflowError(); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{lt.LengthName, lt.TurnName, lt.CallName, lt.CommitName, lt.InterruptName} {
		if timeouts[name] != 50*time.Millisecond {
			t.Errorf("%s ran with heartbeat timeout %s, want the run's", name, timeouts[name])
		}
	}
	// And the default, when the run says none.
	s2, id2 := thread(t, "go")
	a2, err := lt.New(s2, script.Play(script.Text("done")))
	if err != nil {
		t.Fatal(err)
	}
	e2 := newEnv(a2)
	var got time.Duration
	e2.SetOnActivityStartedListener(func(info *activity.Info, _ context.Context, _ converter.EncodedValues) {
		if info.ActivityType.Name == lt.LengthName {
			got = info.HeartbeatTimeout
		}
	})
	e2.ExecuteWorkflow(lt.WorkflowName, lt.RunInput{Thread: id2})
	if got != lt.DefaultHeartbeatTimeout {
		t.Fatalf("heartbeat timeout %s, want %s", got, lt.DefaultHeartbeatTimeout)
	}
}
