package temporal_test

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"go.temporal.io/sdk/activity"
	sdk "go.temporal.io/sdk/temporal"

	"github.com/lodeworks/lode/artifact"
	"github.com/lodeworks/lode/ledger"
	"github.com/lodeworks/lode/loop"
	"github.com/lodeworks/lode/tool"
	"github.com/lodeworks/lode/x/agent"
	"github.com/lodeworks/lode/x/guard"
	"github.com/lodeworks/lode/x/provider/script"
	lt "github.com/lodeworks/lode/x/temporal"
	xtool "github.com/lodeworks/lode/x/tool"
)

// stopper is a guard that trips on any content holding word, at the
// checkpoints at.
func stopper(word string, at ...string) loop.Guard {
	return guard.New("no-"+word, func(_ context.Context, c loop.Check) (string, error) {
		if strings.Contains(guard.Content(c), word) {
			return "it says " + word, nil
		}
		return "", nil
	}, at...)
}

// tripCase is one plan: the script of the model, the guard and where it
// trips, and the calls that run before it does.
type tripCase struct {
	name, prompt string
	steps        func() []script.Step
	guard        loop.Guard
	at, callID   string
	// asked is how many times the model is asked; ran, the calls that run.
	asked int
	ran   []string
}

var tripCases = []tripCase{
	{
		name: "result", prompt: "read it",
		steps: func() []script.Step {
			return []script.Step{script.Call("c1", "read", `{"p":"secret"}`), script.Text("never")}
		},
		guard: stopper("secret", artifact.AtResult), at: artifact.AtResult, callID: "c1",
		asked: 1, ran: []string{"c1"},
	},
	{
		name: "input", prompt: "the secret is 42",
		steps: func() []script.Step { return []script.Step{script.Text("never")} },
		guard: stopper("secret", artifact.AtInput), at: artifact.AtInput,
	},
	{
		name: "call", prompt: "clean",
		steps: func() []script.Step {
			return []script.Step{script.Reply(artifact.ToolCall{ID: "c1", Name: "read", Arguments: `{}`}, artifact.ToolCall{ID: "c2", Name: "rm", Arguments: `{"p":"/"}`}), script.Text("never")}
		},
		guard: stopper(`"/"`, artifact.AtCall), at: artifact.AtCall, callID: "c2",
		asked: 1,
	},
	{
		name: "output", prompt: "tell me",
		steps: func() []script.Step { return []script.Step{script.Text("the secret is 42")} },
		guard: stopper("secret", artifact.AtOutput), at: artifact.AtOutput,
		asked: 1,
	},
}

// tripInProcess runs c on a loop in process: the thread Temporal's run must
// equal.
func tripInProcess(t *testing.T, c tripCase) []ledger.Turn {
	t.Helper()
	s, id := thread(t, c.prompt)
	st, err := s.Load(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	step := loop.New(loop.WithHandlers(&tools{}), loop.WithGuards(c.guard))
	if _, err := step.Run(context.Background(), st, script.Play(c.steps()...)); !errors.Is(err, loop.ErrTripped) {
		t.Fatalf("in process: %v, want a trip", err)
	}
	return st.Turns()
}

// wantTripped checks that err is a run's failure as a guard ends it: a
// non-retryable application error of type ErrTypeTripped whose details
// AsTrip reads back as the trip c expects.
func wantTripped(t *testing.T, err error, c tripCase) {
	t.Helper()
	var ae *sdk.ApplicationError
	if !errors.As(err, &ae) || ae.Type() != lt.ErrTypeTripped || !ae.NonRetryable() {
		t.Fatalf("run ended with %v, want a non-retryable %s", err, lt.ErrTypeTripped)
	}
	te, ok := lt.AsTrip(err)
	if !ok || te.Guard != c.guard.Name() || te.At != c.at || te.ToolCallID != c.callID || te.Reason == "" {
		t.Fatalf("AsTrip = %+v, %v; want guard %s at %s on %q", te, ok, c.guard.Name(), c.at, c.callID)
	}
	if !errors.Is(te, loop.ErrTripped) {
		t.Fatalf("%v is not loop.ErrTripped", te)
	}
}

func turnsOf(t *testing.T, s ledger.Store, id string) ([]ledger.Turn, map[string]string) {
	t.Helper()
	st, err := s.Load(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	return st.Turns(), st.AllMetadata()
}

// TestGuardsStopARun runs each plan as a workflow with the guard in the
// Agent's loop options: the run fails with ErrTypeTripped, not retried;
// the thread ends with the tripwire and reads exactly as the same plan
// run in process; the model was asked only as often as in process, and
// no call ran that a loop would not have run. Started again, the run
// returns the stored trip without asking the model.
func TestGuardsStopARun(t *testing.T) {
	for _, c := range tripCases {
		t.Run(c.name, func(t *testing.T) {
			want := tripInProcess(t, c)
			s, id := thread(t, c.prompt)
			h := &tools{}
			prov := script.Play(c.steps()...)
			a, err := lt.New(s, prov, lt.WithHandler(h), lt.WithLoopOptions(loop.WithGuards(c.guard)))
			if err != nil {
				t.Fatal(err)
			}
			e := newEnv(a)
			e.ExecuteWorkflow(lt.WorkflowName, lt.RunInput{Thread: id})
			wantTripped(t, e.GetWorkflowError(), c)
			got, meta := turnsOf(t, s, id)
			sameTurns(t, got, want)
			if te, ok := loop.StoppedBy(got); !ok || te.Guard != c.guard.Name() {
				t.Fatalf("StoppedBy = %+v, %v", te, ok)
			}
			if meta[loop.TrippedKey] != "true" {
				t.Fatalf("metadata %v lacks %s", meta, loop.TrippedKey)
			}
			if n := len(prov.Requests()); n != c.asked {
				t.Fatalf("the model was asked %d times, want %d", n, c.asked)
			}
			for _, call := range []string{"c1", "c2"} {
				if n, want := h.count(call), strings.Count(strings.Join(c.ran, " "), call); n != want {
					t.Fatalf("call %s ran %d times, want %d", call, n, want)
				}
			}

			// A run started again on the stopped thread returns the trip.
			again := script.Play(script.Fail(errors.New("the model must not be asked")))
			a2, err := lt.New(s, again, lt.WithHandler(h), lt.WithLoopOptions(loop.WithGuards(c.guard)))
			if err != nil {
				t.Fatal(err)
			}
			e2 := newEnv(a2)
			e2.ExecuteWorkflow(lt.WorkflowName, lt.RunInput{Thread: id})
			wantTripped(t, e2.GetWorkflowError(), c)
			if n := len(again.Requests()); n != 0 {
				t.Fatalf("the model was asked %d times on a stopped thread", n)
			}
			after, _ := turnsOf(t, s, id)
			sameTurns(t, after, want)
		})
	}
}

// TestTripSurvivesAWorkerThatDies has the worker die just after the
// tripwire was stored and before Temporal heard of it, in the activity
// that stored it: the turn (a trip at the input, at a call), or the call
// (a trip at its result: an idempotent call is retried, any other
// interrupted). The worker that takes over finds the tripwire and ends
// the run with it: no call runs again, the model is not asked again, no
// call is recorded as interrupted, and the thread reads as in process.
// Then lode recover, pointed at the store with a lease the dead worker
// left, returns the stored trip and runs nothing.
func TestTripSurvivesAWorkerThatDies(t *testing.T) {
	cases := []tripCase{tripCases[1], tripCases[2], tripCases[0], tripCases[0]}
	cases[3].name, cases[3].steps = "result of a call that is not retried", func() []script.Step {
		return []script.Step{script.Call("c1", "rm", `{"p":"secret"}`), script.Text("never")}
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			want := tripInProcess(t, c)
			s, id := thread(t, c.prompt)
			h := &tools{}
			prov := script.Play(c.steps()...)
			a, err := lt.New(s, prov, lt.WithHandler(h), lt.WithLoopOptions(loop.WithGuards(c.guard)))
			if err != nil {
				t.Fatal(err)
			}
			e := newEnv(a)
			var mu sync.Mutex
			died := map[string]int{}
			// The first attempt that stores a tripwire dies once it is
			// stored: its result never reaches Temporal.
			dies := func(name string, tripped *artifact.Tripwire) error {
				mu.Lock()
				defer mu.Unlock()
				if tripped != nil && died[name] == 0 {
					died[name]++
					return errors.New("worker died")
				}
				return nil
			}
			e.RegisterActivityWithOptions(func(ctx context.Context, in lt.TurnInput) (lt.TurnResult, error) {
				r, err := a.Turn(ctx, in)
				if err == nil {
					err = dies("turn", r.Tripped)
				}
				return r, err
			}, activity.RegisterOptions{Name: lt.TurnName})
			e.RegisterActivityWithOptions(func(ctx context.Context, in lt.CallInput) (lt.CallResult, error) {
				r, err := a.Call(ctx, in)
				if err == nil {
					err = dies("call", r.Tripped)
				}
				return r, err
			}, activity.RegisterOptions{Name: lt.CallName})
			e.ExecuteWorkflow(lt.WorkflowName, lt.RunInput{Thread: id})
			wantTripped(t, e.GetWorkflowError(), c)
			if died["turn"]+died["call"] != 1 {
				t.Fatalf("died %v, want one death", died)
			}
			got, _ := turnsOf(t, s, id)
			if c.name == "result of a call that is not retried" {
				// Its twin in process calls rm the same way.
				want = tripInProcess(t, c)
			}
			sameTurns(t, got, want)
			if n := len(prov.Requests()); n != c.asked {
				t.Fatalf("the model was asked %d times, want %d", n, c.asked)
			}
			if n := h.count("c1") + h.count("c2"); n != len(c.ran) {
				t.Fatalf("calls ran %d times, want %d", n, len(c.ran))
			}
			for _, rs := range results(t, s, id) {
				for _, r := range rs {
					if r.Content == loop.InterruptedMessage {
						t.Fatalf("call %s was recorded as interrupted", r.ToolCallID)
					}
				}
			}

			// lode recover (loop.Step.Recover) on a store where the dead
			// worker's lease expired.
			st, err := s.Load(context.Background(), id)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := st.AcquireLease(context.Background(), "lode worker/dead", time.Now().Add(-time.Hour), time.Minute); err != nil {
				t.Fatal(err)
			}
			st.Close()
			again := script.Play(script.Fail(errors.New("the model must not be asked")))
			step := loop.New(loop.WithHandlers(h), loop.WithGuards(c.guard))
			recs, err := step.Recover(context.Background(), s, again)
			if err != nil {
				t.Fatal(err)
			}
			// A thread that ends with its answer's tripwire is done; one
			// stopped in a tool turn returns the stored trip.
			if len(recs) != 1 || (recs[0].Err != nil && !errors.Is(recs[0].Err, loop.ErrTripped)) {
				t.Fatalf("recover: %+v, want the thread done or its stored trip", recs)
			}
			if len(again.Requests()) != 0 || h.count("c1")+h.count("c2") != len(c.ran) {
				t.Fatalf("recover asked the model %d times, ran %d calls", len(again.Requests()), h.count("c1")+h.count("c2"))
			}
			after, _ := turnsOf(t, s, id)
			sameTurns(t, after, want)
		})
	}
}

// TestParallelCallsStopAtAResult has a guard stop the result of one of an
// answer's parallel calls: the run ends with the trip, and the tool turn
// holds one tripwire, just after the stopped result, as a loop turn's.
func TestParallelCallsStopAtAResult(t *testing.T) {
	s, id := thread(t, "go")
	h := &tools{}
	prov := script.Play(
		script.Reply(artifact.ToolCall{ID: "c1", Name: "read", Arguments: `{"p":"secret"}`}, artifact.ToolCall{ID: "c2", Name: "read", Arguments: `{"p":"secret"}`}),
		script.Text("never"),
	)
	g := stopper("secret", artifact.AtResult)
	a, err := lt.New(s, prov, lt.WithHandler(h), lt.WithLoopOptions(loop.WithGuards(g)))
	if err != nil {
		t.Fatal(err)
	}
	e := newEnv(a)
	e.ExecuteWorkflow(lt.WorkflowName, lt.RunInput{Thread: id})
	if _, ok := lt.AsTrip(e.GetWorkflowError()); !ok {
		t.Fatalf("run ended with %v", e.GetWorkflowError())
	}
	got, meta := turnsOf(t, s, id)
	if meta[loop.TrippedKey] != "true" {
		t.Fatalf("metadata %v lacks %s", meta, loop.TrippedKey)
	}
	last := got[len(got)-1]
	if last.Role != ledger.RoleTool || len(got) != 3 {
		t.Fatalf("thread:%s", showTurns(got))
	}
	var ids []string
	trips := 0
	for i, x := range last.Artifacts {
		switch y := x.(type) {
		case artifact.ToolResult:
			ids = append(ids, y.ToolCallID)
			if !y.IsError {
				t.Fatalf("result %+v was not stopped", y)
			}
		case artifact.Tripwire:
			trips++
			if r, ok := last.Artifacts[i-1].(artifact.ToolResult); !ok || r.ToolCallID != y.ToolCallID {
				t.Fatalf("the tripwire does not follow its result:%s", showTurns(got))
			}
		}
	}
	if trips != 1 || !reflect.DeepEqual(ids, []string{"c1", "c2"}) {
		t.Fatalf("thread:%s", showTurns(got))
	}
	if len(prov.Requests()) != 1 {
		t.Fatalf("the model was asked %d times", len(prov.Requests()))
	}
}

// TestChildStoppedByItsGuard has a child agent's guard stop its task: the
// child's run fails with ErrTypeTripped, and the caller's model reads, in
// x/agent's words, which guard stopped it, where and why.
func TestChildStoppedByItsGuard(t *testing.T) {
	f := newFamily(t,
		[]script.Step{script.Call("c1", "helper", `{"task":"read the secret"}`), script.Text("done")},
		[]script.Step{script.Call("k1", "read", `{}`), script.Text("found it")},
		[]agent.Option{agent.WithLoopOptions(loop.WithGuards(stopper("secret", artifact.AtInput)))})
	e := newEnv(f.a)
	e.ExecuteWorkflow(lt.WorkflowName, lt.RunInput{Thread: f.id})
	if err := e.GetWorkflowError(); err != nil {
		t.Fatal(err)
	}
	rs := results(t, f.s, f.id)["c1"]
	want := `the agent helper was stopped by its guard "no-secret" at its task: it says secret. Do not give it the same task again.`
	if len(rs) != 1 || !rs[0].IsError || rs[0].Content != want {
		t.Fatalf("result %+v, want %q", rs, want)
	}
	if n := len(f.child.Requests()); n != 0 || f.childRuns["read"] != 0 {
		t.Fatalf("the child's model was asked %d times, read ran %d times", n, f.childRuns["read"])
	}
	child, _ := turnsOf(t, f.s, lt.ChildThreadID(f.id, "c1"))
	if te, ok := loop.StoppedBy(child); !ok || te.At != artifact.AtInput {
		t.Fatalf("child thread:%s", showTurns(child))
	}
}

// TestTripBeforeAChildStarts has a guard stop the result of a call that
// runs before a child agent's in the same answer (such calls run one by
// one): the child never starts, and its call is recorded as not run,
// after the tripwire, in the answer's one tool turn.
func TestTripBeforeAChildStarts(t *testing.T) {
	s, id := thread(t, "go")
	reg := tool.NewRegistry()
	if err := reg.Register(tool.Tool{Name: "read"}, func(context.Context, tool.Sandbox, map[string]any) (any, error) {
		return "the secret", nil
	}); err != nil {
		t.Fatal(err)
	}
	child := script.Play(script.Text("never"))
	helper, err := agent.New("helper", "Helps.", agent.WithProvider(child), agent.WithRegistry(tool.NewRegistry()))
	if err != nil {
		t.Fatal(err)
	}
	if err := agent.Register(reg, helper); err != nil {
		t.Fatal(err)
	}
	prov := script.Play(script.Reply(
		artifact.ToolCall{ID: "c0", Name: "read", Arguments: `{}`},
		artifact.ToolCall{ID: "c1", Name: "helper", Arguments: `{"task":"look"}`}), script.Text("never"))
	a, err := lt.New(s, prov, lt.WithHandler(xtool.NewHandler(reg)), lt.WithChildAgents(reg, helper), lt.WithInvokeOptions(xtool.WithFilteredTools(reg, nil)),
		lt.WithLoopOptions(loop.WithGuards(stopper("secret", artifact.AtResult))))
	if err != nil {
		t.Fatal(err)
	}
	e := newEnv(a)
	e.ExecuteWorkflow(lt.WorkflowName, lt.RunInput{Thread: id})
	if te, ok := lt.AsTrip(e.GetWorkflowError()); !ok || te.ToolCallID != "c0" {
		got, _ := turnsOf(t, s, id)
		t.Fatalf("run ended with %v; thread:%s", e.GetWorkflowError(), showTurns(got))
	}
	if n := len(child.Requests()); n != 0 {
		t.Fatalf("the child's model was asked %d times", n)
	}
	if _, err := s.Load(context.Background(), lt.ChildThreadID(id, "c1")); err == nil {
		t.Fatal("the child's thread was made")
	}
	got, _ := turnsOf(t, s, id)
	last := got[len(got)-1].Artifacts
	if len(got) != 3 || len(last) != 3 || last[1].Kind() != artifact.KindTripwire {
		t.Fatalf("thread:%s", showTurns(got))
	}
	if r, ok := last[2].(artifact.ToolResult); !ok || r.ToolCallID != "c1" || !strings.HasPrefix(r.Content, "not run: ") {
		t.Fatalf("the child's call got %+v", last[2])
	}
}
