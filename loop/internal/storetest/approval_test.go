package storetest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/lodeworks/lode/artifact"
	"github.com/lodeworks/lode/ledger"
	"github.com/lodeworks/lode/ledger/ledgertest"
	"github.com/lodeworks/lode/loop"
	"github.com/lodeworks/lode/tool"
	"github.com/lodeworks/lode/x/provider/script"
	xtool "github.com/lodeworks/lode/x/tool"
)

// RunApproval runs the approval contract: a run that pauses for approval
// is resumed through another Store instance over the same storage, as
// another process would, and each approved call runs exactly once.
func RunApproval(t *testing.T, newStorage func(t testing.TB) Opener) {
	ledgertest.RunChecks(t, newStorage, approvalContract...)
}

var approvalContract = []ledgertest.Check{
	{Name: "PauseReloadApprove", Fn: testApprove},
	{Name: "Deny", Fn: testDeny},
	{Name: "EditArguments", Fn: testEditArguments},
	{Name: "BadEditRecordsNothing", Fn: testBadEdit},
	{Name: "MixedDecisions", Fn: testMixed},
	{Name: "ConcurrentResumers", Fn: testConcurrentResumers},
}

// tools is an agent with a destructive delete_file, an idempotent
// destructive touch and a harmless read; it counts what each really did.
type tools struct {
	mu   sync.Mutex
	runs map[string]int // "tool path" -> executions
	// started, when set, is called as a call begins, before it counts.
	started func(name, path string)
}

func (f *tools) count(name, path string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.runs[name+" "+path]
}

func (f *tools) step(t testing.TB, opts ...loop.Option) *loop.Step {
	reg := tool.NewRegistry()
	schema := json.RawMessage(`{"type":"object","properties":{"path":{"type":"string","minLength":1}},"required":["path"],"additionalProperties":false}`)
	add := func(name string, hints tool.Hints) {
		err := reg.Register(tool.Tool{Name: name, Description: name + " a path", Schema: schema, Hints: hints},
			func(ctx context.Context, _ tool.Sandbox, args map[string]any) (any, error) {
				path, _ := args["path"].(string)
				if f.started != nil {
					f.started(name, path)
				}
				f.mu.Lock()
				if f.runs == nil {
					f.runs = make(map[string]int)
				}
				f.runs[name+" "+path]++
				f.mu.Unlock()
				return name + " " + path + ": done", nil
			})
		if err != nil {
			t.Fatal(err)
		}
	}
	add("delete_file", tool.Hints{Destructive: true})
	add("touch", tool.Hints{Destructive: true, Idempotent: true})
	add("read", tool.Hints{ReadOnly: true})
	return loop.New(append([]loop.Option{loop.WithHandlers(xtool.NewHandler(reg, xtool.WithApprover(xtool.PauseForDecision))),
		loop.WithInvokeOptions(xtool.WithFilteredTools(reg, nil))}, opts...)...)
}

// threeCalls is an answer that deletes a, reads b and deletes c.
func threeCalls() script.Step {
	return script.Reply(
		artifact.ToolCall{ID: "c1", Name: "delete_file", Arguments: `{"path":"a"}`},
		artifact.ToolCall{ID: "c2", Name: "read", Arguments: `{"path":"b"}`},
		artifact.ToolCall{ID: "c3", Name: "delete_file", Arguments: `{"path":"c"}`},
	)
}

// pause runs the agent on a new thread until it pauses and returns the
// thread's ID; the store it used is closed.
func pause(t *testing.T, open Opener, f *tools, answer script.Step, want ...string) string {
	t.Helper()
	ctx := context.Background()
	s := open(t)
	st, err := s.Create(ctx, ledger.WithTurns(ledger.Turn{Role: ledger.RoleUser, Artifacts: []artifact.Artifact{ledgertest.Text("tidy up")}}))
	if err != nil {
		t.Fatal(err)
	}
	_, err = f.step(t).Run(ctx, st, script.Play(answer))
	var pe *loop.PendingError
	if !errors.As(err, &pe) || !errors.Is(err, loop.ErrPaused) {
		t.Fatalf("run: %v, want a *loop.PendingError", err)
	}
	if got := pendingIDs(pe.Calls); got != strings.Join(want, ",") || pe.Thread != st.ID() {
		t.Fatalf("pending %s on %s, want %s on %s", got, pe.Thread, strings.Join(want, ","), st.ID())
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	return st.ID()
}

func pendingIDs(ps []artifact.Pending) string {
	var ids []string
	for _, p := range ps {
		ids = append(ids, p.ToolCallID)
	}
	return strings.Join(ids, ",")
}

// reload opens the thread through a new Store instance.
func reload(t testing.TB, open Opener, id string) *ledger.StoredThread {
	t.Helper()
	return ledgertest.Load(t, open(t), id)
}

// results returns the thread's tool results by call ID.
func results(st ledger.State) map[string]artifact.ToolResult {
	out := make(map[string]artifact.ToolResult)
	for _, tu := range st.Turns() {
		for _, a := range tu.Artifacts {
			if r, ok := a.(artifact.ToolResult); ok {
				out[r.ToolCallID] = r
			}
		}
	}
	return out
}

// lastRequestResults returns what the model was shown of each tool call in
// the last request prov received.
func lastRequestResults(t testing.TB, prov *script.Provider) map[string]string {
	reqs := prov.Requests()
	if len(reqs) == 0 {
		t.Fatal("the model was not asked again")
	}
	out := make(map[string]string)
	for _, tu := range reqs[len(reqs)-1].Turns {
		for _, a := range tu.Artifacts {
			if r, ok := a.(artifact.ToolResult); ok {
				out[r.ToolCallID] = r.Content
			}
		}
	}
	return out
}

func testApprove(t *testing.T, open Opener) {
	f := &tools{}
	id := pause(t, open, f, threeCalls(), "c1", "c3")
	if f.count("read", "b") != 1 || f.count("delete_file", "a") != 0 || f.count("delete_file", "c") != 0 {
		t.Fatalf("before any decision: %v", f.runs)
	}
	st := reload(t, open, id)
	if got := pendingIDs(loop.Pending(st)); got != "c1,c3" {
		t.Fatalf("reloaded thread has pending %q, want c1,c3", got)
	}
	// The paused thread takes no turn: the model is not asked again.
	blocked := script.Play(script.Text("never"))
	if _, err := f.step(t).Run(context.Background(), st, blocked); !errors.Is(err, loop.ErrPaused) || len(blocked.Requests()) != 0 {
		t.Fatalf("run on a paused thread: %v, %d requests", err, len(blocked.Requests()))
	}
	prov := script.Play(script.Text("tidied"))
	if _, err := f.step(t).Resume(context.Background(), st, prov, []artifact.Decision{loop.Approve("c1"), loop.Approve("c3")}); err != nil {
		t.Fatal(err)
	}
	if f.count("delete_file", "a") != 1 || f.count("delete_file", "c") != 1 || f.count("read", "b") != 1 {
		t.Fatalf("executions after approval: %v", f.runs)
	}
	shown := lastRequestResults(t, prov)
	want := map[string]string{"c1": "delete_file a: done", "c2": "read b: done", "c3": "delete_file c: done"}
	if !reflect.DeepEqual(shown, want) {
		t.Fatalf("the model was shown %v, want %v", shown, want)
	}
	again := reload(t, open, id)
	if !reflect.DeepEqual(ledgertest.Roles(again.Turns()), "user assistant tool tool tool assistant") || loop.Pending(again) != nil {
		t.Fatalf("stored: %s, pending %v", ledgertest.Roles(again.Turns()), loop.Pending(again))
	}
	// Approving again after the run went on finds nothing to approve.
	_, err := f.step(t).Resume(context.Background(), again, script.Play(), []artifact.Decision{loop.Approve("c1")})
	var de *loop.DecisionError
	if !errors.As(err, &de) || !errors.Is(err, loop.ErrNotPending) || err.Error() != `loop: decision on call "c1": no such pending call` {
		t.Fatalf("second approval: %v", err)
	}
	if f.count("delete_file", "a") != 1 {
		t.Fatalf("a second approval ran the call again: %v", f.runs)
	}
}

func testDeny(t *testing.T, open Opener) {
	f := &tools{}
	id := pause(t, open, f, threeCalls(), "c1", "c3")
	st := reload(t, open, id)
	var events []loop.Event
	var mu sync.Mutex
	obs := loop.EmitterFunc(func(_ context.Context, ev loop.Event) { mu.Lock(); events = append(events, ev); mu.Unlock() })
	step := f.step(t, loop.WithObserver(obs))
	prov := script.Play(script.Text("kept them"))
	d1, d3 := loop.Deny("c1", "keep a"), loop.Deny("c3", "")
	d1.By = "ana"
	if _, err := step.Resume(context.Background(), st, prov, []artifact.Decision{d1, d3}); err != nil {
		t.Fatal(err)
	}
	if err := step.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	if f.count("delete_file", "a") != 0 || f.count("delete_file", "c") != 0 {
		t.Fatalf("a denied call ran: %v", f.runs)
	}
	shown := lastRequestResults(t, prov)
	want := map[string]string{
		"c1": "the call to delete_file was denied by the person approving tool calls; it did not run. Their reason: keep a",
		"c2": "read b: done",
		"c3": "the call to delete_file was denied by the person approving tool calls; it did not run",
	}
	if !reflect.DeepEqual(shown, want) {
		t.Fatalf("the model was shown %v, want %v", shown, want)
	}
	if r := results(reload(t, open, id)); !r["c1"].IsError || !r["c3"].IsError {
		t.Fatalf("denials are not error results: %+v", r)
	}
	mu.Lock()
	defer mu.Unlock()
	var decided *loop.DecidedEvent
	for _, ev := range events {
		if d, ok := ev.(loop.DecidedEvent); ok {
			decided = &d
		}
	}
	wantD := []artifact.Decision{
		{ToolCallID: "c1", Name: "delete_file", Reason: "keep a", By: "ana"},
		{ToolCallID: "c3", Name: "delete_file"},
	}
	if decided == nil || !reflect.DeepEqual(decided.Decisions, wantD) {
		t.Fatalf("decided event %+v, want %+v", decided, wantD)
	}
}

func testEditArguments(t *testing.T, open Opener) {
	f := &tools{}
	id := pause(t, open, f, threeCalls(), "c1", "c3")
	st := reload(t, open, id)
	prov := script.Play(script.Text("done"))
	if _, err := f.step(t).Resume(context.Background(), st, prov,
		[]artifact.Decision{loop.ApproveWith("c1", `{"path":"a.bak"}`), loop.Deny("c3", "no")}); err != nil {
		t.Fatal(err)
	}
	if f.count("delete_file", "a.bak") != 1 || f.count("delete_file", "a") != 0 {
		t.Fatalf("the edit was not what ran: %v", f.runs)
	}
	if got := lastRequestResults(t, prov)["c1"]; got != "delete_file a.bak: done" {
		t.Fatalf("the model was shown %q", got)
	}
}

func testBadEdit(t *testing.T, open Opener) {
	cases := []struct {
		name, args, want string
	}{
		{"schema", `{"path":""}`, `loop: decision on call "c1": invalid arguments for delete_file: arguments do not match the schema: validating root: validating /properties/path: minLength: "" contains 0 Unicode code points, fewer than 1`},
		{"not JSON", `{"path":`, `loop: decision on call "c1": invalid arguments for delete_file: arguments are not valid JSON (unexpected end of JSON input); send a JSON object`},
		{"extra field", `{"path":"x","force":true}`, `loop: decision on call "c1": invalid arguments for delete_file: arguments do not match the schema: validating root: unexpected additional properties ["force"]`},
	}
	f := &tools{}
	id := pause(t, open, f, threeCalls(), "c1", "c3")
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			st := reload(t, open, id)
			n := st.Len()
			_, err := f.step(t).Resume(context.Background(), st, script.Play(),
				[]artifact.Decision{loop.Approve("c3"), loop.ApproveWith("c1", c.args)})
			var de *loop.DecisionError
			var ae *tool.ArgumentsError
			if !errors.As(err, &de) || de.ToolCallID != "c1" || !errors.As(err, &ae) || err.Error() != c.want {
				t.Fatalf("err = %v, want a *loop.DecisionError wrapping a *tool.ArgumentsError: %s", err, c.want)
			}
			if reload(t, open, id).Len() != n || f.count("delete_file", "c") != 0 {
				t.Fatalf("a refused edit recorded or ran something: %d turns (was %d), %v", st.Len(), n, f.runs)
			}
		})
	}
	// Deciding on a call that was never pending names it.
	_, err := f.step(t).Resume(context.Background(), reload(t, open, id), script.Play(), []artifact.Decision{loop.Approve("c2")})
	if !errors.Is(err, loop.ErrNotPending) || err.Error() != `loop: decision on call "c2": no such pending call` {
		t.Fatalf("decision on a call that ran: %v", err)
	}
}

func testMixed(t *testing.T, open Opener) {
	f := &tools{}
	id := pause(t, open, f, threeCalls(), "c1", "c3")
	// Only c1 is decided: it runs, c3 stays pending, the model waits.
	prov := script.Play(script.Text("done"))
	_, err := f.step(t).Resume(context.Background(), reload(t, open, id), prov, []artifact.Decision{loop.Approve("c1")})
	var pe *loop.PendingError
	if !errors.As(err, &pe) || pendingIDs(pe.Calls) != "c3" || len(prov.Requests()) != 0 {
		t.Fatalf("partial resume: %v, %d requests", err, len(prov.Requests()))
	}
	if f.count("delete_file", "a") != 1 || f.count("delete_file", "c") != 0 {
		t.Fatalf("after the first decision: %v", f.runs)
	}
	if _, err := f.step(t).Resume(context.Background(), reload(t, open, id), prov, []artifact.Decision{loop.Deny("c3", "not c")}); err != nil {
		t.Fatal(err)
	}
	shown := lastRequestResults(t, prov)
	if shown["c1"] != "delete_file a: done" || !strings.Contains(shown["c3"], "Their reason: not c") || f.count("delete_file", "a") != 1 {
		t.Fatalf("shown %v, runs %v", shown, f.runs)
	}
}

func testConcurrentResumers(t *testing.T, open Opener) {
	const resumers = 4
	f := &tools{}
	id := pause(t, open, f, threeCalls(), "c1", "c3")
	threads := make([]*ledger.StoredThread, resumers)
	for i := range threads {
		threads[i] = reload(t, open, id) // each as its own process would
	}
	errs := make([]error, resumers)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range threads {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			_, errs[i] = f.step(t).Resume(context.Background(), threads[i], script.Play(script.Text("done")),
				[]artifact.Decision{loop.Approve("c1"), loop.Approve("c3")})
		}()
	}
	close(start)
	wg.Wait()
	won := 0
	for i, err := range errs {
		switch {
		case err == nil:
			won++
		case !errors.Is(err, ledger.ErrConflict):
			t.Errorf("resumer %d: %v, want success or ledger.ErrConflict", i, err)
		}
	}
	if won != 1 {
		t.Fatalf("%d resumers won: %v", won, errs)
	}
	if f.count("delete_file", "a") != 1 || f.count("delete_file", "c") != 1 {
		t.Fatalf("executions: %v", f.runs)
	}
}

const (
	approvalCrashEnv = "LODE_LOOPSTORETEST_APPROVAL_CRASH"
	approvalCrashID  = "approval-crash"
)

// ApprovalCrash checks the rule for a process killed while an approved
// call runs. The test binary re-runs itself (test named testName) as a
// child that resumes a paused thread, approving a non-idempotent
// delete_file and an idempotent touch; the parent kills it with SIGKILL as
// soon as the delete has started, then resumes in its own process. The
// delete must not run again: it gets loop.InterruptedMessage. The touch,
// claimed but never finished, runs once more.
//
// newStorage returns where fresh storage is (a directory, a DSN); it runs
// in the parent only. open opens the store there, in parent and child. The
// calling test must call ApprovalCrash first thing.
func ApprovalCrash(t *testing.T, testName string, newStorage func(t testing.TB) string, open func(where string) (ledger.Store, error)) {
	var where string
	if ledgertest.ChildConfig(approvalCrashEnv, testName, &where) {
		ledgertest.RunChild("approval crash child", func(say func(string)) error { return approvalCrashChild(open, where, say) })
	}
	where = newStorage(t)
	opener := ledgertest.OpenerOf(where, open)
	f := &tools{}
	ctx := context.Background()
	s := opener(t)
	st, err := s.Create(ctx, ledger.WithID(approvalCrashID), ledger.WithTurns(ledger.Turn{Role: ledger.RoleUser, Artifacts: []artifact.Artifact{ledgertest.Text("tidy up")}}))
	if err != nil {
		t.Fatal(err)
	}
	answer := script.Reply(
		artifact.ToolCall{ID: "d", Name: "delete_file", Arguments: `{"path":"a"}`},
		artifact.ToolCall{ID: "t", Name: "touch", Arguments: `{"path":"b"}`},
	)
	if _, err := f.step(t).Run(ctx, st, script.Play(answer)); !errors.Is(err, loop.ErrPaused) {
		t.Fatalf("run: %v", err)
	}
	s.Close()

	child := ledgertest.StartChild(t, testName, approvalCrashEnv, where)
	child.Await(t, func(line string) bool { return line == "started delete_file a" })
	child.Kill(t)

	st = reload(t, opener, approvalCrashID)
	if loop.Pending(st) != nil {
		t.Fatalf("decided calls are still pending: %v", loop.Pending(st))
	}
	// The dead child's lease is live until it expires: nothing is decided
	// about its calls before then.
	n := st.Len()
	if _, err := f.step(t).Resume(ctx, st, script.Play(), nil); !errors.Is(err, ledger.ErrLeased) || !errors.Is(err, ledger.ErrConflict) || st.Len() != n {
		t.Fatalf("resume under the dead child's live lease: %v, %d turns (was %d)", err, st.Len(), n)
	}
	// A clock past its expiry takes the lease over.
	prov := script.Play(script.Text("done"))
	if _, err := f.step(t, loop.WithClock(ledgertest.AfterLeases)).Resume(ctx, st, prov, nil); err != nil {
		t.Fatal(err)
	}
	if f.count("delete_file", "a") != 0 || f.count("touch", "b") != 1 {
		t.Fatalf("after the crash, this process ran %v; want only the idempotent touch", f.runs)
	}
	shown := lastRequestResults(t, prov)
	want := map[string]string{"d": loop.InterruptedMessage, "t": "touch b: done"}
	if !reflect.DeepEqual(shown, want) {
		t.Fatalf("the model was shown %v, want %v", shown, want)
	}
	if r := results(reload(t, opener, approvalCrashID)); !r["d"].IsError || r["t"].IsError {
		t.Fatalf("stored results: %+v", r)
	}
}

func approvalCrashChild(open func(string) (ledger.Store, error), where string, say func(string)) error {
	s, err := open(where)
	if err != nil {
		return err
	}
	st, err := s.Load(context.Background(), approvalCrashID)
	if err != nil {
		return err
	}
	f := &tools{started: func(name, path string) {
		say("started " + name + " " + path)
		select {} // the parent kills us here
	}}
	_, err = f.step(nil).Resume(context.Background(), st, script.Play(), []artifact.Decision{loop.Approve("d"), loop.Approve("t")})
	return fmt.Errorf("resume returned: %v", err)
}
