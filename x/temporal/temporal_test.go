package temporal_test

import (
	"context"
	"errors"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/log"
	"go.temporal.io/sdk/testsuite"

	"github.com/lodeworks/lode/artifact"
	"github.com/lodeworks/lode/ledger"
	"github.com/lodeworks/lode/ledger/file"
	"github.com/lodeworks/lode/loop"
	"github.com/lodeworks/lode/x/provider/script"
	lt "github.com/lodeworks/lode/x/temporal"
)

// tools runs "rm" (not idempotent), "read" (idempotent) and "ask"
// (waits for approval); failFirst makes the first attempt at each listed
// call fail, as a tool that breaks once.
type tools struct {
	mu        sync.Mutex
	runs      map[string]int
	failFirst map[string]bool
}

func (h *tools) count(id string) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.runs[id]
}

func (h *tools) Handle(ctx context.Context, a artifact.Artifact, e loop.Emitter) error {
	c, ok := a.(artifact.ToolCall)
	if !ok {
		return nil
	}
	if c.Name == "ask" {
		if d, ok := loop.Approved(ctx); !ok || d.ToolCallID != c.ID {
			e.Emit(ctx, loop.TurnCompleteEvent{Role: ledger.RoleTool, Artifacts: []artifact.Artifact{
				artifact.Pending{ToolCallID: c.ID, Name: c.Name, Arguments: c.Arguments, Reason: "asks first"}}})
			return nil
		}
	}
	h.mu.Lock()
	if h.runs == nil {
		h.runs = map[string]int{}
	}
	h.runs[c.ID]++
	n := h.runs[c.ID]
	fail := h.failFirst[c.ID] && n == 1
	h.mu.Unlock()
	if fail {
		return errors.New("the tool broke")
	}
	e.Emit(ctx, loop.TurnCompleteEvent{Role: ledger.RoleTool, Artifacts: []artifact.Artifact{
		artifact.ToolResult{ToolCallID: c.ID, Name: c.Name, Content: "ran " + c.Name + " " + c.Arguments}}})
	return nil
}

func (h *tools) CheckCall(context.Context, artifact.ToolCall) error { return nil }
func (h *tools) Idempotent(c artifact.ToolCall) bool                { return c.Name == "read" }

// thread stores a thread with a prompt, as an application does before it
// starts a run.
func thread(t *testing.T, prompt string) (ledger.Store, string) {
	t.Helper()
	s, err := file.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	st, err := s.Create(context.Background(), ledger.WithID("t1"),
		ledger.WithTurns(ledger.Turn{Role: ledger.RoleUser, Artifacts: []artifact.Artifact{artifact.Text{Content: prompt}}}))
	if err != nil {
		t.Fatal(err)
	}
	st.Close()
	return s, "t1"
}

func env(t *testing.T, a *lt.Agent) *testsuite.TestWorkflowEnvironment {
	t.Helper()
	return newEnv(a)
}

// newEnv is a test environment with a's activities, logging nowhere.
func newEnv(a *lt.Agent) *testsuite.TestWorkflowEnvironment {
	var suite testsuite.WorkflowTestSuite
	suite.SetLogger(log.NewStructuredLogger(slog.New(slog.DiscardHandler)))
	e := suite.NewTestWorkflowEnvironment()
	e.SetTestTimeout(30 * time.Second)
	a.Register(e)
	return e
}

func results(t *testing.T, s ledger.Store, id string) map[string][]artifact.ToolResult {
	t.Helper()
	st, err := s.Load(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	out := map[string][]artifact.ToolResult{}
	for _, tr := range st.Turns() {
		for _, a := range tr.Artifacts {
			if r, ok := a.(artifact.ToolResult); ok {
				out[r.ToolCallID] = append(out[r.ToolCallID], r)
			}
		}
	}
	return out
}

func TestWorkflowRunsTheLoop(t *testing.T) {
	s, id := thread(t, "look and clean")
	h := &tools{}
	prov := script.Play(
		script.Reply(artifact.ToolCall{ID: "c1", Name: "read", Arguments: `{"p":1}`}, artifact.ToolCall{ID: "c2", Name: "rm", Arguments: `{"p":2}`}),
		script.Text("all clean"),
	)
	a, err := lt.New(s, prov, lt.WithHandler(h))
	if err != nil {
		t.Fatal(err)
	}
	e := env(t, a)
	e.ExecuteWorkflow(lt.WorkflowName, lt.RunInput{Thread: id})
	if err := e.GetWorkflowError(); err != nil {
		t.Fatal(err)
	}
	var out lt.RunOutput
	if err := e.GetWorkflowResult(&out); err != nil {
		t.Fatal(err)
	}
	if out.Answer != "all clean" || out.Turns != 2 || out.Thread != id {
		t.Fatalf("output %+v", out)
	}
	st, _ := s.Load(context.Background(), id)
	defer st.Close()
	turns := st.Turns()
	roles := []ledger.Role{}
	for _, tr := range turns {
		roles = append(roles, tr.Role)
	}
	want := []ledger.Role{ledger.RoleUser, ledger.RoleAssistant, ledger.RoleTool, ledger.RoleAssistant}
	if len(roles) != len(want) {
		t.Fatalf("roles %v", roles)
	}
	for i := range want {
		if roles[i] != want[i] {
			t.Fatalf("roles %v", roles)
		}
	}
	rs := results(t, s, id)
	if len(rs["c1"]) != 1 || rs["c1"][0].Content != `ran read {"p":1}` || len(rs["c2"]) != 1 || h.count("c1") != 1 || h.count("c2") != 1 {
		t.Fatalf("results %v, runs %v", rs, h.runs)
	}
	// The model's second request carried both results, in call order.
	req := prov.Requests()[1]
	if len(req.Turns) != 3 {
		t.Fatalf("second request %+v", req.Turns)
	}
	if l, _ := st.Lease(); l.Owner != "" {
		t.Fatalf("lease left %+v", l)
	}
}

func TestActivityRetries(t *testing.T) {
	cases := []struct {
		name    string
		tool    string
		runs    int
		content string
	}{
		{"an idempotent call is retried", "read", 2, `ran read {}`},
		{"any other call is attempted once, then interrupted", "rm", 1, loop.InterruptedMessage},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s, id := thread(t, "go")
			h := &tools{failFirst: map[string]bool{"c1": true}}
			prov := script.Play(script.Call("c1", c.tool, `{}`), script.Text("done"))
			a, err := lt.New(s, prov, lt.WithHandler(h))
			if err != nil {
				t.Fatal(err)
			}
			e := env(t, a)
			e.ExecuteWorkflow(lt.WorkflowName, lt.RunInput{Thread: id})
			if err := e.GetWorkflowError(); err != nil {
				t.Fatal(err)
			}
			rs := results(t, s, id)
			if h.count("c1") != c.runs || len(rs["c1"]) != 1 || rs["c1"][0].Content != c.content {
				t.Fatalf("runs %d, results %+v", h.count("c1"), rs["c1"])
			}
		})
	}
}

// TestWorkerDiesAfterTheSideEffect has the worker die after an activity
// appended to the thread and before Temporal heard of it: the retried
// activity, on whichever worker, finds the work in the ledger and does not
// do it again.
func TestWorkerDiesAfterTheSideEffect(t *testing.T) {
	for _, tool := range []string{"read", "rm"} {
		t.Run(tool, func(t *testing.T) {
			s, id := thread(t, "go")
			h := &tools{}
			prov := script.Play(script.Call("c1", tool, `{}`), script.Text("done"))
			a, err := lt.New(s, prov, lt.WithHandler(h))
			if err != nil {
				t.Fatal(err)
			}
			e := newEnv(a)
			var mu sync.Mutex
			died := map[string]bool{}
			// The same activities, under the same names, except that the
			// first attempt at each dies once its work is stored.
			dies := func(name string) func(ctx context.Context) error {
				return func(ctx context.Context) error {
					mu.Lock()
					defer mu.Unlock()
					if activity.GetInfo(ctx).Attempt == 1 && !died[name] {
						died[name] = true
						return errors.New("worker died")
					}
					return nil
				}
			}
			turnDies, callDies := dies("turn"), dies("call")
			e.RegisterActivityWithOptions(func(ctx context.Context, in lt.TurnInput) (lt.TurnResult, error) {
				r, err := a.Turn(ctx, in)
				if err == nil {
					err = turnDies(ctx)
				}
				return r, err
			}, activity.RegisterOptions{Name: lt.TurnName})
			e.RegisterActivityWithOptions(func(ctx context.Context, in lt.CallInput) (lt.CallResult, error) {
				r, err := a.Call(ctx, in)
				if err == nil {
					err = callDies(ctx)
				}
				return r, err
			}, activity.RegisterOptions{Name: lt.CallName})
			e.ExecuteWorkflow(lt.WorkflowName, lt.RunInput{Thread: id})
			if err := e.GetWorkflowError(); err != nil {
				t.Fatal(err)
			}
			var out lt.RunOutput
			_ = e.GetWorkflowResult(&out)
			rs := results(t, s, id)
			if out.Answer != "done" || h.count("c1") != 1 || len(rs["c1"]) != 1 || rs["c1"][0].IsError || len(prov.Requests()) != 2 {
				t.Fatalf("answer %q, runs %d, results %+v, %d model requests", out.Answer, h.count("c1"), rs["c1"], len(prov.Requests()))
			}
		})
	}
}

// TestARunContinuesFromItsHistory stops a run's worker for good after a
// tool call (its provider is gone), then starts the workflow again on a
// new worker, as Temporal's replay of the history does: what is in the
// ledger is not done again.
func TestARunContinuesFromItsHistory(t *testing.T) {
	s, id := thread(t, "go")
	h := &tools{}
	first := script.Play(script.Call("c1", "rm", `{}`), script.Fail(errors.New("the worker's process died")))
	a1, err := lt.New(s, first, lt.WithHandler(h))
	if err != nil {
		t.Fatal(err)
	}
	e1 := env(t, a1)
	e1.ExecuteWorkflow(lt.WorkflowName, lt.RunInput{Thread: id})
	if err := e1.GetWorkflowError(); err == nil || !strings.Contains(err.Error(), "activity error (type: lode.Turn") {
		t.Fatalf("first worker: %v", err)
	}
	second := script.Play(script.Text("done"))
	a2, err := lt.New(s, second, lt.WithHandler(h))
	if err != nil {
		t.Fatal(err)
	}
	e2 := env(t, a2)
	e2.ExecuteWorkflow(lt.WorkflowName, lt.RunInput{Thread: id})
	if err := e2.GetWorkflowError(); err != nil {
		t.Fatal(err)
	}
	rs := results(t, s, id)
	if h.count("c1") != 1 || len(rs["c1"]) != 1 || len(second.Requests()) != 1 {
		t.Fatalf("runs %d, results %+v", h.count("c1"), rs["c1"])
	}
}

func TestApprovalsAreSignals(t *testing.T) {
	for _, approve := range []bool{true, false} {
		t.Run(map[bool]string{true: "approved", false: "denied"}[approve], func(t *testing.T) {
			s, id := thread(t, "go")
			h := &tools{}
			prov := script.Play(script.Call("c1", "ask", `{"x":1}`), script.Text("done"))
			a, err := lt.New(s, prov, lt.WithHandler(h))
			if err != nil {
				t.Fatal(err)
			}
			e := env(t, a)
			var listed []artifact.Pending
			var qerr error
			e.RegisterDelayedCallback(func() {
				v, err := e.QueryWorkflow(lt.PendingQuery)
				if err == nil {
					err = v.Get(&listed)
				}
				qerr = err
				e.SignalWorkflow(lt.DecideSignal, artifact.Decision{ToolCallID: "nope", Approved: true})
				d := artifact.Decision{ToolCallID: "c1", Approved: approve, By: "ann", Reason: "not today"}
				if approve {
					d.Reason = ""
				}
				e.SignalWorkflow(lt.DecideSignal, d)
			}, time.Minute)
			e.ExecuteWorkflow(lt.WorkflowName, lt.RunInput{Thread: id})
			if err := e.GetWorkflowError(); err != nil {
				t.Fatal(err)
			}
			if qerr != nil || len(listed) != 1 || listed[0].ToolCallID != "c1" || listed[0].Reason != "asks first" {
				t.Fatalf("pending %+v, %v", listed, qerr)
			}
			rs := results(t, s, id)
			if len(rs["c1"]) != 1 {
				t.Fatalf("results %+v", rs["c1"])
			}
			if approve && (h.count("c1") != 1 || rs["c1"][0].IsError) {
				t.Fatalf("approved: runs %d, result %+v", h.count("c1"), rs["c1"][0])
			}
			if !approve && (h.count("c1") != 0 || !rs["c1"][0].IsError || !strings.Contains(rs["c1"][0].Content, "not today")) {
				t.Fatalf("denied: runs %d, result %+v", h.count("c1"), rs["c1"][0])
			}
			if got := loop.Pending(mustLoad(t, s, id)); len(got) != 0 {
				t.Fatalf("still pending %+v", got)
			}
		})
	}
}

func mustLoad(t *testing.T, s ledger.Store, id string) ledger.State {
	t.Helper()
	st, err := s.Load(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

func TestNewRefusesMissingParts(t *testing.T) {
	_, err := lt.New(nil, nil)
	if err == nil || err.Error() != "temporal: no ledger.Store given\ntemporal: no provider given" {
		t.Fatalf("err %v", err)
	}
}

func TestMaxTurns(t *testing.T) {
	s, id := thread(t, "go")
	prov := script.Play(script.Call("c1", "read", `{}`), script.Call("c2", "read", `{}`))
	a, err := lt.New(s, prov, lt.WithHandler(&tools{}))
	if err != nil {
		t.Fatal(err)
	}
	e := env(t, a)
	e.ExecuteWorkflow(lt.WorkflowName, lt.RunInput{Thread: id, MaxTurns: 2})
	if err := e.GetWorkflowError(); err == nil || !strings.Contains(err.Error(), "the model still calls tools after 2 turns") {
		t.Fatalf("err %v", err)
	}
}

// TestRetryAfterAWorkerDiedInsideTheCall leaves the lease of a worker
// that died inside an idempotent call: the retry, the same activity,
// takes it over at once and runs the call; the run does not wait for the
// lease to expire.
func TestRetryAfterAWorkerDiedInsideTheCall(t *testing.T) {
	s, id := thread(t, "go")
	h := &tools{}
	prov := script.Play(script.Call("c1", "read", `{}`), script.Text("done"))
	a, err := lt.New(s, prov, lt.WithHandler(h))
	if err != nil {
		t.Fatal(err)
	}
	e := newEnv(a)
	e.RegisterActivityWithOptions(func(ctx context.Context, in lt.CallInput) (lt.CallResult, error) {
		info := activity.GetInfo(ctx)
		if info.Attempt == 1 {
			st, err := s.Load(ctx, in.Thread)
			if err != nil {
				return lt.CallResult{}, err
			}
			defer st.Close()
			owner := "temporal/" + info.WorkflowExecution.ID + "/" + info.WorkflowExecution.RunID + "/turn-" + strconv.Itoa(in.At)
			if _, err := st.AcquireLease(ctx, owner, time.Now(), time.Hour); err != nil {
				return lt.CallResult{}, err
			}
			return lt.CallResult{}, errors.New("worker died inside the call")
		}
		return a.Call(ctx, in)
	}, activity.RegisterOptions{Name: lt.CallName})
	e.ExecuteWorkflow(lt.WorkflowName, lt.RunInput{Thread: id})
	if err := e.GetWorkflowError(); err != nil {
		t.Fatal(err)
	}
	rs := results(t, s, id)
	if h.count("c1") != 1 || len(rs["c1"]) != 1 || rs["c1"][0].IsError {
		t.Fatalf("runs %d, results %+v", h.count("c1"), rs["c1"])
	}
	if l, _ := mustLoad(t, s, id).(*ledger.StoredThread).Lease(); l.Owner != "" {
		t.Fatalf("lease left %+v", l)
	}
}

func TestActivitiesRefuseWhatTheThreadDoesNotHold(t *testing.T) {
	s, id := thread(t, "go")
	a, err := lt.New(s, script.Play(), lt.WithHandler(&tools{}))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	cases := []struct {
		name string
		do   func() error
		want string
	}{
		{"a call on a turn that is not an answer", func() error {
			_, err := a.Call(ctx, lt.CallInput{Thread: id, At: 0, ID: "c1"})
			return err
		}, "temporal: thread t1: turn 0 has no tool call c1"},
		{"a turn past the end", func() error {
			_, err := a.Interrupt(ctx, lt.CallInput{Thread: id, At: 7, ID: "c1"})
			return err
		}, "temporal: thread t1: turn 7 has no tool call c1"},
		{"a negative turn", func() error {
			_, err := a.Call(ctx, lt.CallInput{Thread: id, At: -1, ID: "c1"})
			return err
		}, "temporal: thread t1: turn -1 has no tool call c1"},
		{"a missing thread", func() error {
			_, err := a.Length(ctx, "nope")
			return err
		}, "temporal: thread nope: "},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := c.do()
			if err == nil || !strings.HasPrefix(err.Error(), c.want) {
				t.Fatalf("err %v, want %q", err, c.want)
			}
		})
	}
	if _, err := a.Length(ctx, "nope"); !errors.Is(err, ledger.ErrNotFound) {
		t.Fatalf("missing thread: %v", err)
	}
	if n, _ := a.Length(ctx, id); n != 1 {
		t.Fatalf("the thread changed: %d turns", n)
	}
}

// TestPausedAnswerCarriedOn checks that an answer the server paused
// (artifact.FinishPauseTurn) takes another turn, whose answer carries it on,
// and that the run's answer is the whole of it; a server that pauses every
// answer is stopped by the turn limit.
func TestPausedAnswerCarriedOn(t *testing.T) {
	pause := func(text string) script.Step {
		return script.Reply(artifact.Text{Content: text}, artifact.Finish{Reason: artifact.FinishPauseTurn})
	}
	t.Run("carried on", func(t *testing.T) {
		s, id := thread(t, "search")
		prov := script.Play(pause("Searching. "), pause("Still. "), script.Text("Found."))
		a, err := lt.New(s, prov, lt.WithHandler(&tools{}))
		if err != nil {
			t.Fatal(err)
		}
		e := env(t, a)
		e.ExecuteWorkflow(lt.WorkflowName, lt.RunInput{Thread: id})
		var out lt.RunOutput
		if err := e.GetWorkflowResult(&out); err != nil {
			t.Fatal(err)
		}
		if out.Answer != "Searching. Still. Found." || out.Turns != 3 {
			t.Fatalf("output %+v", out)
		}
		reqs := prov.Requests()
		if len(reqs) != 3 || len(reqs[2].Turns) != 3 || reqs[2].Turns[2].Role != ledger.RoleAssistant {
			t.Fatalf("requests %+v", reqs)
		}
	})
	t.Run("paused forever", func(t *testing.T) {
		s, id := thread(t, "search")
		prov := script.Play(pause("a"), pause("b"), pause("c"))
		a, err := lt.New(s, prov, lt.WithHandler(&tools{}))
		if err != nil {
			t.Fatal(err)
		}
		e := env(t, a)
		e.ExecuteWorkflow(lt.WorkflowName, lt.RunInput{Thread: id, MaxTurns: 2})
		if err := e.GetWorkflowError(); err == nil || !strings.Contains(err.Error(), "the server still pauses its answer after 2 turns") {
			t.Fatalf("err %v", err)
		}
	})
}
