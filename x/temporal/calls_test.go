package temporal_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"go.temporal.io/sdk/activity"
	sdk "go.temporal.io/sdk/temporal"

	"github.com/lodeworks/lode/artifact"
	"github.com/lodeworks/lode/ledger"
	"github.com/lodeworks/lode/loop"
	"github.com/lodeworks/lode/provider"
	"github.com/lodeworks/lode/tool"
	"github.com/lodeworks/lode/x/provider/script"
	lt "github.com/lodeworks/lode/x/temporal"
	xtool "github.com/lodeworks/lode/x/tool"
)

// timed is tools with a per-tool timeout, as x/tool's Handler says it.
type timed struct {
	*tools
	timeouts map[string]time.Duration
}

func (h timed) CallTimeout(c artifact.ToolCall) time.Duration { return h.timeouts[c.Name] }

// broken fails every attempt at the calls it lists.
type broken struct {
	*tools
	fail map[string]bool
}

func (h broken) Handle(ctx context.Context, a artifact.Artifact, e loop.Emitter) error {
	if c, ok := a.(artifact.ToolCall); ok && h.fail[c.ID] {
		h.mu.Lock()
		if h.runs == nil {
			h.runs = map[string]int{}
		}
		h.runs[c.ID]++
		h.mu.Unlock()
		return errors.New("the tool broke")
	}
	return h.tools.Handle(ctx, a, e)
}

func TestCallTimeouts(t *testing.T) {
	cases := []struct {
		name    string
		handler loop.Handler
		opts    []lt.Option
		in      lt.RunInput
		want    time.Duration
	}{
		{"the handler's timeout for the tool, and some grace", timed{&tools{}, map[string]time.Duration{"read": time.Hour}}, nil,
			lt.RunInput{CallTimeout: time.Minute}, time.Hour + lt.CallGrace},
		{"a policy's timeout wins", timed{&tools{}, map[string]time.Duration{"read": time.Hour}}, []lt.Option{lt.WithCallPolicy("read", lt.CallPolicy{Timeout: 7 * time.Minute})},
			lt.RunInput{}, 7 * time.Minute},
		{"a policy for another tool does not apply", timed{&tools{}, map[string]time.Duration{"read": time.Hour}}, []lt.Option{lt.WithCallPolicy("rm", lt.CallPolicy{Timeout: 7 * time.Minute})},
			lt.RunInput{}, time.Hour + lt.CallGrace},
		{"a handler that says nothing: the run's", &tools{}, nil, lt.RunInput{CallTimeout: 3 * time.Minute}, 3 * time.Minute},
		{"a handler that says nothing: the default", &tools{}, nil, lt.RunInput{}, lt.DefaultCallTimeout},
		{"a handler that says 0: the run's", timed{&tools{}, nil}, nil, lt.RunInput{CallTimeout: 3 * time.Minute}, 3 * time.Minute},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s, id := thread(t, "go")
			prov := script.Play(script.Call("c1", "read", `{}`), script.Text("done"))
			a, err := lt.New(s, prov, append([]lt.Option{lt.WithHandler(c.handler)}, c.opts...)...)
			if err != nil {
				t.Fatal(err)
			}
			e := newEnv(a)
			var got time.Duration
			e.RegisterActivityWithOptions(func(ctx context.Context, in lt.CallInput) (lt.CallResult, error) {
				got = activity.GetInfo(ctx).StartToCloseTimeout
				return a.Call(ctx, in)
			}, activity.RegisterOptions{Name: lt.CallName})
			c.in.Thread = id
			e.ExecuteWorkflow(lt.WorkflowName, c.in)
			if err := e.GetWorkflowError(); err != nil {
				t.Fatal(err)
			}
			if got != c.want {
				t.Fatalf("StartToCloseTimeout %s, want %s", got, c.want)
			}
		})
	}
}

func TestCallRetryPolicies(t *testing.T) {
	four := lt.CallPolicy{Retry: &sdk.RetryPolicy{InitialInterval: time.Second, MaximumAttempts: 4}}
	cases := []struct {
		name string
		tool string
		opts []lt.Option
		in   lt.RunInput
		runs int
	}{
		{"an idempotent tool: the default attempts", "read", nil, lt.RunInput{}, lt.DefaultCallAttempts},
		{"an idempotent tool: the run's attempts", "read", nil, lt.RunInput{CallAttempts: 2}, 2},
		{"an idempotent tool: its policy", "read", []lt.Option{lt.WithCallPolicy("read", four)}, lt.RunInput{CallAttempts: 2}, 4},
		{"a policy without attempts: the run's", "read", []lt.Option{lt.WithCallPolicy("read", lt.CallPolicy{Retry: &sdk.RetryPolicy{InitialInterval: time.Second}})}, lt.RunInput{CallAttempts: 2}, 2},
		{"a tool that is not idempotent: once, whatever its policy", "rm", []lt.Option{lt.WithCallPolicy("rm", four)}, lt.RunInput{}, 1},
		{"the last policy for a name wins", "read", []lt.Option{lt.WithCallPolicy("read", lt.CallPolicy{}), lt.WithCallPolicy("read", four)}, lt.RunInput{}, 4},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s, id := thread(t, "go")
			h := broken{&tools{}, map[string]bool{"c1": true}}
			prov := script.Play(script.Call("c1", c.tool, `{}`), script.Text("done"))
			a, err := lt.New(s, prov, append([]lt.Option{lt.WithHandler(h)}, c.opts...)...)
			if err != nil {
				t.Fatal(err)
			}
			e := newEnv(a)
			c.in.Thread = id
			e.ExecuteWorkflow(lt.WorkflowName, c.in)
			if err := e.GetWorkflowError(); err != nil {
				t.Fatal(err)
			}
			rs := results(t, s, id)
			if h.count("c1") != c.runs || len(rs["c1"]) != 1 || rs["c1"][0].Content != loop.InterruptedMessage {
				t.Fatalf("runs %d, want %d; results %+v", h.count("c1"), c.runs, rs["c1"])
			}
		})
	}
}

// ordered lets c3 run first, then c2, then c1: a run that took the calls
// one by one would never finish them, and the results must still land in
// the calls' order.
type ordered struct {
	tools
	once         sync.Once
	done2, done3 chan struct{}
}

func (h *ordered) Handle(ctx context.Context, a artifact.Artifact, e loop.Emitter) error {
	h.once.Do(func() { h.done2, h.done3 = make(chan struct{}), make(chan struct{}) })
	c, _ := a.(artifact.ToolCall)
	wait := func(ch chan struct{}) error {
		select {
		case <-ch:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(20 * time.Second): // a deadlock, not a race: the calls ran one by one
			return errors.New("the calls did not run in parallel")
		}
	}
	switch c.ID {
	case "c1":
		if err := wait(h.done2); err != nil {
			return err
		}
	case "c2":
		if err := wait(h.done3); err != nil {
			return err
		}
		defer close(h.done2)
	case "c3":
		defer close(h.done3)
	}
	return h.tools.Handle(ctx, a, e)
}

func (h *ordered) Idempotent(c artifact.ToolCall) bool { return c.Name == "read" }

func TestParallelCalls(t *testing.T) {
	s, id := thread(t, "go")
	h := &ordered{}
	prov := script.Play(
		script.Reply(artifact.ToolCall{ID: "c1", Name: "read", Arguments: `{"n":1}`}, artifact.ToolCall{ID: "c2", Name: "rm", Arguments: `{"n":2}`}, artifact.ToolCall{ID: "c3", Name: "read", Arguments: `{"n":3}`}),
		script.Text("done"),
	)
	a, err := lt.New(s, prov, lt.WithHandler(h))
	if err != nil {
		t.Fatal(err)
	}
	e := newEnv(a)
	e.ExecuteWorkflow(lt.WorkflowName, lt.RunInput{Thread: id})
	if err := e.GetWorkflowError(); err != nil {
		t.Fatal(err)
	}
	st := mustLoad(t, s, id).(*ledger.StoredThread)
	// One tool turn, the results in the calls' order, as a loop turn
	// stores them.
	var order []string
	tr := st.Turns()[2]
	if tr.Role != ledger.RoleTool {
		t.Fatalf("turn %+v", tr)
	}
	for _, art := range tr.Artifacts {
		order = append(order, art.(artifact.ToolResult).ToolCallID)
	}
	if strings.Join(order, ",") != "c1,c2,c3" || st.Len() != 4 {
		t.Fatalf("results in order %v, %d turns", order, st.Len())
	}
	for _, c := range []string{"c1", "c2", "c3"} {
		if h.count(c) != 1 {
			t.Fatalf("%s ran %d times", c, h.count(c))
		}
	}
	if req := prov.Requests()[1]; len(req.Turns) != 3 {
		t.Fatalf("second request %+v", req.Turns)
	}
	for k, v := range st.AllMetadata() {
		if strings.HasPrefix(k, "lode.temporal.staged.") && v != "" {
			t.Fatalf("left staged %s=%s", k, v)
		}
	}
	if l, _ := st.Lease(); l.Owner != "" {
		t.Fatalf("lease left %+v", l)
	}
}

// TestParallelCallsFailAndWait has one of three parallel calls fail for
// good and one wait for approval: the failed one is interrupted in its
// place, the waiting one is signalled on, and nothing runs twice.
func TestParallelCallsFailAndWait(t *testing.T) {
	s, id := thread(t, "go")
	h := broken{&tools{}, map[string]bool{"c2": true}}
	prov := script.Play(
		script.Reply(artifact.ToolCall{ID: "c1", Name: "ask", Arguments: `{}`}, artifact.ToolCall{ID: "c2", Name: "rm", Arguments: `{}`}, artifact.ToolCall{ID: "c3", Name: "read", Arguments: `{}`}),
		script.Text("done"),
	)
	a, err := lt.New(s, prov, lt.WithHandler(h))
	if err != nil {
		t.Fatal(err)
	}
	e := newEnv(a)
	var listed []artifact.Pending
	e.RegisterDelayedCallback(func() {
		if v, err := e.QueryWorkflow(lt.PendingQuery); err == nil {
			_ = v.Get(&listed)
		}
		e.SignalWorkflow(lt.DecideSignal, loop.Approve("c1"))
	}, time.Minute)
	e.ExecuteWorkflow(lt.WorkflowName, lt.RunInput{Thread: id})
	if err := e.GetWorkflowError(); err != nil {
		t.Fatal(err)
	}
	if len(listed) != 1 || listed[0].ToolCallID != "c1" {
		t.Fatalf("pending %+v", listed)
	}
	st := mustLoad(t, s, id)
	var kinds []string
	for _, tr := range st.Turns()[2:] {
		for _, art := range tr.Artifacts {
			switch x := art.(type) {
			case artifact.Pending:
				kinds = append(kinds, "pending "+x.ToolCallID)
			case artifact.Decision:
				kinds = append(kinds, "decision "+x.ToolCallID)
			case artifact.ToolResult:
				kinds = append(kinds, "result "+x.ToolCallID)
			case artifact.Text:
				kinds = append(kinds, "text")
			}
		}
	}
	want := "pending c1,result c2,result c3,decision c1,result c1,text"
	if strings.Join(kinds, ",") != want {
		t.Fatalf("thread %v, want %s", kinds, want)
	}
	rs := results(t, s, id)
	if rs["c2"][0].Content != loop.InterruptedMessage || h.count("c1") != 1 || h.count("c2") != 1 || h.count("c3") != 1 {
		t.Fatalf("results %+v, runs %v", rs, h.runs)
	}
}

// TestParallelWorkerDies has the worker die after a parallel call kept its
// result, and after the commit appended the results: the retries find the
// work done and do not do it again.
func TestParallelWorkerDies(t *testing.T) {
	s, id := thread(t, "go")
	h := &tools{}
	prov := script.Play(
		script.Reply(artifact.ToolCall{ID: "c1", Name: "rm", Arguments: `{}`}, artifact.ToolCall{ID: "c2", Name: "read", Arguments: `{}`}),
		script.Text("done"),
	)
	a, err := lt.New(s, prov, lt.WithHandler(h))
	if err != nil {
		t.Fatal(err)
	}
	e := newEnv(a)
	var mu sync.Mutex
	died := map[string]bool{}
	dies := func(key string) bool {
		mu.Lock()
		defer mu.Unlock()
		if died[key] {
			return false
		}
		died[key] = true
		return true
	}
	e.RegisterActivityWithOptions(func(ctx context.Context, in lt.CallInput) (lt.CallResult, error) {
		r, err := a.Call(ctx, in)
		if err == nil && in.ID == "c2" && dies("c2") {
			return r, errors.New("worker died")
		}
		return r, err
	}, activity.RegisterOptions{Name: lt.CallName})
	e.RegisterActivityWithOptions(func(ctx context.Context, in lt.CommitInput) (lt.CallResult, error) {
		r, err := a.Commit(ctx, in)
		if err == nil && dies("commit") {
			return r, errors.New("worker died")
		}
		return r, err
	}, activity.RegisterOptions{Name: lt.CommitName})
	e.ExecuteWorkflow(lt.WorkflowName, lt.RunInput{Thread: id})
	if err := e.GetWorkflowError(); err != nil {
		t.Fatal(err)
	}
	rs := results(t, s, id)
	if h.count("c1") != 1 || h.count("c2") != 1 || len(rs["c1"]) != 1 || len(rs["c2"]) != 1 || rs["c2"][0].IsError {
		t.Fatalf("runs %v, results %+v", h.runs, rs)
	}
	if !died["c2"] || !died["commit"] {
		t.Fatalf("died %v", died)
	}
}

func registry(t *testing.T) tool.Registry {
	t.Helper()
	reg := tool.NewRegistry()
	for _, n := range []string{"read", "secret"} {
		if err := reg.Register(tool.Tool{Name: n}, func(context.Context, tool.Sandbox, map[string]any) (any, error) { return "ran " + n, nil }); err != nil {
			t.Fatal(err)
		}
	}
	return reg
}

// TestOfferedAtExecution has the model call a tool its turn did not offer:
// the workflow's call gets the very result a loop turn gives it, and an
// offered tool runs.
func TestOfferedAtExecution(t *testing.T) {
	reg := registry(t)
	onlyRead := xtool.WithFilteredTools(reg, func(_ context.Context, _ ledger.State, ts []tool.Tool) []tool.Tool {
		return ts[:1]
	})
	calls := []artifact.Artifact{artifact.ToolCall{ID: "c1", Name: "secret", Arguments: `{}`}, artifact.ToolCall{ID: "c2", Name: "read", Arguments: `{}`}}
	for _, n := range []int{1, 2} { // one call alone, two in parallel
		t.Run(map[int]string{1: "one call", 2: "parallel calls"}[n], func(t *testing.T) {
			// The loop, for reference.
			ref := ledger.NewThread(ledger.WithTurns(ledger.Turn{Role: ledger.RoleUser, Artifacts: []artifact.Artifact{artifact.Text{Content: "go"}}}))
			_, err := loop.New(loop.WithHandlers(xtool.NewHandler(reg)), loop.WithInvokeOptions(onlyRead)).
				Run(context.Background(), ref, script.Play(script.Reply(calls[:n]...), script.Text("done")))
			if err != nil {
				t.Fatal(err)
			}
			want := map[string]artifact.ToolResult{}
			for _, tr := range ref.Turns() {
				for _, art := range tr.Artifacts {
					if r, ok := art.(artifact.ToolResult); ok {
						want[r.ToolCallID] = r
					}
				}
			}

			s, id := thread(t, "go")
			a, err := lt.New(s, script.Play(script.Reply(calls[:n]...), script.Text("done")),
				lt.WithHandler(xtool.NewHandler(reg)), lt.WithInvokeOptions(onlyRead))
			if err != nil {
				t.Fatal(err)
			}
			e := newEnv(a)
			e.ExecuteWorkflow(lt.WorkflowName, lt.RunInput{Thread: id})
			if err := e.GetWorkflowError(); err != nil {
				t.Fatal(err)
			}
			rs := results(t, s, id)
			if len(rs) != n || len(want) != n {
				t.Fatalf("results %+v, loop's %+v", rs, want)
			}
			for cid, w := range want {
				if got := rs[cid]; len(got) != 1 || got[0].Content != w.Content || got[0].IsError != w.IsError {
					t.Fatalf("%s: %+v, loop's %+v", cid, got, w)
				}
			}
			if !rs["c1"][0].IsError || rs["c1"][0].Content != `unknown tool "secret". Tools available in this turn: read.` {
				t.Fatalf("refusal %+v", rs["c1"][0])
			}
			if v, _ := mustLoad(t, s, id).(*ledger.StoredThread).Metadata(lt.MetaOffered); v != `["read"]` {
				t.Fatalf("%s = %q", lt.MetaOffered, v)
			}
		})
	}
}

// TestOfferedRecord checks what the call activity makes of the record of
// the turn's tools: none (a thread from before) restricts nothing, an
// empty list offers nothing, and a damaged one is refused.
func TestOfferedRecord(t *testing.T) {
	reg := registry(t)
	cases := []struct {
		name, meta string
		set        bool
		content    string
		err        string
	}{
		{name: "no record", content: "ran secret"},
		{name: "nothing offered", meta: `[]`, set: true, content: `unknown tool "secret". No tools are available in this turn.`},
		{name: "other tools offered", meta: `["read"]`, set: true, content: `unknown tool "secret". Tools available in this turn: read.`},
		{name: "damaged", meta: `{`, set: true, err: `temporal: thread t1: metadata "lode.temporal.offered" holds "{", not a list of tool names: `},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s, id := thread(t, "go")
			st, _ := s.Load(context.Background(), id)
			if err := st.Append(ledger.RoleAssistant, artifact.ToolCall{ID: "c1", Name: "secret", Arguments: `{}`}); err != nil {
				t.Fatal(err)
			}
			if c.set {
				if err := st.SetMetadata(lt.MetaOffered, c.meta); err != nil {
					t.Fatal(err)
				}
			}
			st.Close()
			a, err := lt.New(s, script.Play(), lt.WithHandler(xtool.NewHandler(reg)))
			if err != nil {
				t.Fatal(err)
			}
			_, err = a.Call(context.Background(), lt.CallInput{Thread: id, At: 1, ID: "c1"})
			if c.err != "" {
				if err == nil || !strings.HasPrefix(err.Error(), c.err) {
					t.Fatalf("err %v, want %q", err, c.err)
				}
				if len(results(t, s, id)) != 0 {
					t.Fatal("the call ran")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if rs := results(t, s, id)["c1"]; len(rs) != 1 || rs[0].Content != c.content {
				t.Fatalf("result %+v, want %q", rs, c.content)
			}
		})
	}
}

// TestOfferedWrittenOnce: turns that offer the same tools write the record
// once.
func TestOfferedWrittenOnce(t *testing.T) {
	s, id := thread(t, "go")
	h := &tools{}
	prov := script.Play(script.Call("c1", "read", `{}`), script.Call("c2", "read", `{}`), script.Text("done"))
	a, err := lt.New(s, prov, lt.WithHandler(h), lt.WithInvokeOptions(provider.WithTools([]tool.Tool{{Name: "read"}})))
	if err != nil {
		t.Fatal(err)
	}
	var writes int
	e := newEnv(a)
	e.RegisterActivityWithOptions(func(ctx context.Context, in lt.TurnInput) (lt.TurnResult, error) {
		before := version(t, s, id)
		r, err := a.Turn(ctx, in)
		// A turn writes the answer, and takes and releases the lease.
		writes += int(version(t, s, id)-before) - 3
		return r, err
	}, activity.RegisterOptions{Name: lt.TurnName})
	e.ExecuteWorkflow(lt.WorkflowName, lt.RunInput{Thread: id})
	if err := e.GetWorkflowError(); err != nil {
		t.Fatal(err)
	}
	if writes != 1 {
		t.Fatalf("%d writes of the offered tools over 3 turns", writes)
	}
}

func version(t *testing.T, s ledger.Store, id string) int64 {
	t.Helper()
	return mustLoad(t, s, id).(*ledger.StoredThread).Version()
}
