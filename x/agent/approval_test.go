package agent_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/lodeworks/lode/artifact"
	"github.com/lodeworks/lode/ledger"
	"github.com/lodeworks/lode/ledger/file"
	"github.com/lodeworks/lode/loop"
	"github.com/lodeworks/lode/provider"
	"github.com/lodeworks/lode/tool"
	"github.com/lodeworks/lode/x/agent"
	"github.com/lodeworks/lode/x/policy"
	"github.com/lodeworks/lode/x/provider/script"
	xtool "github.com/lodeworks/lode/x/tool"
)

// editorPolicy is the rule book: an editor may use every tool,
// and a person must approve its write_file calls.
const editorPolicy = `
roles:
  editor:
    allow:
      tools: ["*"]
    approve:
      tools: [write_file]
`

// writer is a registry whose write_file (and destructive delete_file)
// really write into dir, counting each run.
type writer struct {
	dir     string
	reg     tool.Registry
	writes  atomic.Int32
	deletes atomic.Int32
}

const fileSchema = `{"type":"object","properties":{"path":{"type":"string"},"text":{"type":"string"}},"required":["path"],"additionalProperties":false}`

func newWriter(t *testing.T) *writer {
	t.Helper()
	w := &writer{dir: t.TempDir(), reg: tool.NewRegistry()}
	if err := w.reg.Register(tool.Tool{Name: "write_file", Description: "Write a file", Schema: []byte(fileSchema)},
		func(_ context.Context, _ tool.Sandbox, args map[string]any) (any, error) {
			w.writes.Add(1)
			p, _ := args["path"].(string)
			text, _ := args["text"].(string)
			if err := os.WriteFile(filepath.Join(w.dir, filepath.Base(p)), []byte(text), 0o600); err != nil {
				return nil, err
			}
			return "wrote " + p, nil
		}); err != nil {
		t.Fatal(err)
	}
	if err := w.reg.Register(tool.Tool{Name: "delete_file", Description: "Delete a file", Schema: []byte(fileSchema), Hints: tool.Hints{Destructive: true}},
		func(context.Context, tool.Sandbox, map[string]any) (any, error) {
			w.deletes.Add(1)
			return "deleted", nil
		}); err != nil {
		t.Fatal(err)
	}
	return w
}

// written returns the files in the writer's folder.
func (w *writer) written(t *testing.T) []string {
	t.Helper()
	ents, err := os.ReadDir(w.dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range ents {
		out = append(out, e.Name())
	}
	return out
}

func policyDoor(t *testing.T, reg tool.Registry) ([]xtool.HandlerOption, xtool.ToolFilter) {
	t.Helper()
	p, err := policy.Parse([]byte(editorPolicy))
	if err != nil {
		t.Fatal(err)
	}
	e := policy.NewEnforcer(reg, p)
	return e.HandlerOptions(), e.Filter()
}

// parentStep is the caller's loop: its handler with opts and approver.
func parentStep(reg tool.Registry, filter xtool.ToolFilter, approver xtool.Approver, opts ...xtool.HandlerOption) *loop.Step {
	h := xtool.NewHandler(reg, append(opts, xtool.WithApprover(approver))...)
	return loop.New(loop.WithHandlers(h), loop.WithInvokeOptions(xtool.WithFilteredTools(reg, filter)))
}

// editorThread is a caller's thread holding the editor role.
func editorThread(t *testing.T, task string) *ledger.Thread {
	t.Helper()
	th := ledger.NewThread(ledger.WithID("top"), ledger.WithMetadata(map[string]string{policy.RolesKey: "editor"}))
	if err := th.Append(ledger.RoleUser, artifact.Text{Content: task}); err != nil {
		t.Fatal(err)
	}
	return th
}

func refuse(context.Context, tool.Tool, artifact.ToolCall) error { return xtool.ErrDenied }

// A call the caller needs approval for needs it in the child too: with an
// approver that refuses, the caller's direct call and the same call made
// by a child agent on the same registry are both refused and nothing is
// written, whichever rule asks: x/policy's approve: list, WithApprovalFor,
// or a destructive hint.
func TestChildKeepsCallersApprovalRule(t *testing.T) {
	for _, tc := range []struct {
		name  string
		tool  string
		opts  func(t *testing.T, reg tool.Registry) ([]xtool.HandlerOption, xtool.ToolFilter)
		widen bool
	}{
		{name: "policy approve list", tool: "write_file", opts: policyDoor},
		{name: "policy approve list, widening child", tool: "write_file", opts: policyDoor, widen: true},
		{name: "WithApprovalFor", tool: "write_file", opts: func(*testing.T, tool.Registry) ([]xtool.HandlerOption, xtool.ToolFilter) {
			return []xtool.HandlerOption{xtool.WithApprovalFor("write_file")}, nil
		}},
		{name: "destructive hint", tool: "delete_file", opts: func(*testing.T, tool.Registry) ([]xtool.HandlerOption, xtool.ToolFilter) {
			return nil, nil
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			w := newWriter(t)
			args := `{"path":"out.txt","text":"hello"}`
			opts := []agent.Option{agent.WithRegistry(w.reg), agent.WithProvider(script.Play(
				script.Call("c1", tc.tool, args),
				echoResult("child saw: "),
			))}
			if tc.widen {
				opts = append(opts, agent.WithWidening())
			}
			mustRegister(t, w.reg, mustNew(t, "worker", opts...))
			hopts, filter := tc.opts(t, w.reg)

			direct := editorThread(t, "write it yourself")
			if _, err := parentStep(w.reg, filter, refuse, hopts...).Run(ctx, direct, script.Play(
				script.Call("p1", tc.tool, args),
				script.Text("ok"),
			)); err != nil {
				t.Fatal(err)
			}
			res := results(direct)
			if len(res) != 1 || !res[0].IsError || !strings.Contains(res[0].Content, "was not approved") {
				t.Fatalf("direct call: %+v", res)
			}

			viaChild := editorThread(t, "have the worker write it")
			if _, err := parentStep(w.reg, filter, refuse, hopts...).Run(ctx, viaChild, script.Play(
				script.Call("p1", "worker", `{"task":"write out.txt"}`),
				script.Text("ok"),
			)); err != nil {
				t.Fatal(err)
			}
			res = results(viaChild)
			want := "child saw: the call to " + tc.tool + " was not approved: xtool: call denied"
			if len(res) != 1 || res[0].IsError || res[0].Content != want {
				t.Fatalf("call via the child: %+v, want content %q", res, want)
			}
			if n := w.writes.Load() + w.deletes.Load(); n != 0 {
				t.Errorf("the tool ran %d times", n)
			}
			if got := w.written(t); len(got) != 0 {
				t.Errorf("files written: %v", got)
			}
		})
	}
}

// An approver that approves lets the child's call run, as it would the
// caller's, and it is asked in the caller's context: the policy rule read
// the caller's roles, not the child thread's (which holds none).
func TestChildCallApprovedSynchronously(t *testing.T) {
	ctx := context.Background()
	w := newWriter(t)
	worker := mustNew(t, "worker", agent.WithRegistry(w.reg), agent.WithProvider(script.Play(
		script.Call("c1", "write_file", `{"path":"out.txt","text":"hello"}`),
		echoResult("child saw: "),
	)))
	mustRegister(t, w.reg, worker)
	hopts, filter := policyDoor(t, w.reg)
	var asked []string
	approve := func(ctx context.Context, tl tool.Tool, call artifact.ToolCall) error {
		st, _ := xtool.Caller(ctx)
		asked = append(asked, tl.Name+" for "+st.ID()+" "+strings.Join(policy.Roles(st), ","))
		return nil
	}
	th := editorThread(t, "have the worker write it")
	if _, err := parentStep(w.reg, filter, approve, hopts...).Run(ctx, th, script.Play(
		script.Call("p1", "worker", `{"task":"write out.txt"}`),
		script.Text("ok"),
	)); err != nil {
		t.Fatal(err)
	}
	if res := results(th); len(res) != 1 || res[0].Content != "child saw: wrote out.txt" {
		t.Fatalf("results: %+v", res)
	}
	if len(asked) != 1 || asked[0] != "write_file for top editor" {
		t.Errorf("approver asked %q, want once for write_file in the caller's thread", asked)
	}
	if w.writes.Load() != 1 {
		t.Errorf("wrote %d times", w.writes.Load())
	}
}

// pausedTree is a caller whose child (and, at depth 2, grandchild) paused
// on write_file under PauseForDecision, every thread in one file store.
type pausedTree struct {
	w      *writer
	store  *file.Store
	step   *loop.Step
	parent provider.Provider
	id     string
}

// newPausedTree runs the caller until it pauses. depth 2 puts a "lead"
// agent between the caller and the worker that writes.
func newPausedTree(t *testing.T, depth int) *pausedTree {
	t.Helper()
	ctx := context.Background()
	store := fileStore(t)
	w := newWriter(t)
	// The child reuses the parent's call ID: the parent's approval must
	// not leak to it.
	worker := mustNew(t, "worker", agent.WithRegistry(w.reg), agent.WithStore(store), agent.WithProvider(script.Play(
		script.Call("p1", "write_file", `{"path":"out.txt","text":"hello"}`),
		echoResult("worker: "),
	)))
	mustRegister(t, w.reg, worker)
	top := "worker"
	if depth == 2 {
		lead := mustNew(t, "lead", agent.WithRegistry(w.reg), agent.WithStore(store), agent.WithProvider(script.Play(
			script.Call("l1", "worker", `{"task":"write out.txt"}`),
			echoResult("lead: "),
		)))
		mustRegister(t, w.reg, lead)
		top = "lead"
	}
	hopts, filter := policyDoor(t, w.reg)
	tr := &pausedTree{w: w, store: store, step: parentStep(w.reg, filter, xtool.PauseForDecision, hopts...)}
	tr.parent = script.Play(
		script.Call("p1", top, `{"task":"get out.txt written"}`),
		echoResult("parent: "),
	)
	st, err := store.Create(ctx, ledger.WithMetadata(map[string]string{policy.RolesKey: "editor"}))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	tr.id = st.ID()
	if err := st.Append(ledger.RoleUser, artifact.Text{Content: "get out.txt written"}); err != nil {
		t.Fatal(err)
	}
	_, err = tr.step.Run(ctx, st, tr.parent)
	var pe *loop.PendingError
	if !errors.As(err, &pe) {
		t.Fatalf("parent run: %v, want a *loop.PendingError", err)
	}
	if len(pe.Calls) != 1 || pe.Calls[0].ToolCallID != "p1" || pe.Calls[0].Name != top {
		t.Fatalf("pending calls %+v, want the parent's call p1 to %s", pe.Calls, top)
	}
	for _, want := range []string{"write_file", `{"path":"out.txt","text":"hello"}`, "policy: "} {
		if !strings.Contains(pe.Calls[0].Reason, want) {
			t.Errorf("reason %q does not name %s", pe.Calls[0].Reason, want)
		}
	}
	if n := w.writes.Load(); n != 0 {
		t.Fatalf("wrote %d times before approval", n)
	}
	return tr
}

// load opens the caller's thread afresh, as a second process would.
func (tr *pausedTree) load(t *testing.T) *ledger.StoredThread {
	t.Helper()
	st, err := tr.store.Load(context.Background(), tr.id)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

// paused lists the store's threads that wait for approvals, by agent.
func (tr *pausedTree) paused(t *testing.T) []string {
	t.Helper()
	var out []string
	for info, err := range tr.store.List(context.Background()) {
		if err != nil {
			t.Fatal(err)
		}
		st, err := tr.store.Load(context.Background(), info.ID)
		if err != nil {
			t.Fatal(err)
		}
		if len(loop.Pending(st)) > 0 {
			out = append(out, info.Metadata[agent.MetaAgent])
		}
		st.Close()
	}
	return out
}

// PauseForDecision in a child pauses the caller on its call to the agent;
// approving that call (from a second StoredThread) runs the child's call
// once and the caller gets the child's answer; at depth 2 the grandchild's
// call waits the same way.
func TestChildPauseSurfacesInParent(t *testing.T) {
	for _, depth := range []int{1, 2} {
		t.Run(map[int]string{1: "child", 2: "grandchild"}[depth], func(t *testing.T) {
			ctx := context.Background()
			tr := newPausedTree(t, depth)
			if got := tr.paused(t); len(got) != depth+1 {
				t.Errorf("paused threads %v, want the caller and %d below", got, depth)
			}
			st := tr.load(t)
			if _, err := tr.step.Resume(ctx, st, tr.parent, []artifact.Decision{loop.Approve("p1")}); err != nil {
				t.Fatalf("resume: %v", err)
			}
			if n := tr.w.writes.Load(); n != 1 {
				t.Errorf("wrote %d times, want once", n)
			}
			data, err := os.ReadFile(filepath.Join(tr.w.dir, "out.txt"))
			if err != nil || string(data) != "hello" {
				t.Errorf("out.txt = %q, %v", data, err)
			}
			want := "worker: wrote out.txt"
			if depth == 2 {
				want = "lead: " + want
			}
			if got := lastText(st); got != "parent: "+want {
				t.Errorf("parent answer %q, want %q", got, "parent: "+want)
			}
			if got := tr.paused(t); len(got) != 0 {
				t.Errorf("threads still paused: %v", got)
			}
			// Each call below p1 is charged to the caller once, though the
			// approved ones ran again on the resume.
			if got, want := xtool.RecordedBelow(st, "p1"), depth; got != want {
				t.Errorf("calls below p1: %d, want %d", got, want)
			}
		})
	}
}

// Denying the caller's call runs nothing: the caller's model reads the
// denial.
func TestChildPauseDenied(t *testing.T) {
	ctx := context.Background()
	tr := newPausedTree(t, 1)
	st := tr.load(t)
	if _, err := tr.step.Resume(ctx, st, tr.parent, []artifact.Decision{loop.Deny("p1", "not today")}); err != nil {
		t.Fatalf("resume: %v", err)
	}
	if n := tr.w.writes.Load(); n != 0 {
		t.Errorf("wrote %d times", n)
	}
	want := "parent: the call to worker was denied by the person approving tool calls; it did not run. Their reason: not today"
	if got := lastText(st); got != want {
		t.Errorf("parent answer %q, want %q", got, want)
	}
}

// The child's approved call runs once however the caller's approved call
// is repeated: a second resumer of the caller loses the store's
// compare-and-swap, and a caller whose approved call was interrupted after
// the child ran gets the child's answer again without another write.
func TestChildApprovedCallRunsOnce(t *testing.T) {
	ctx := context.Background()

	t.Run("second resumer", func(t *testing.T) {
		tr := newPausedTree(t, 1)
		first, second := tr.load(t), tr.load(t)
		if _, err := tr.step.Resume(ctx, first, tr.parent, []artifact.Decision{loop.Approve("p1")}); err != nil {
			t.Fatalf("first resume: %v", err)
		}
		_, err := tr.step.Resume(ctx, second, script.Play(), []artifact.Decision{loop.Approve("p1")})
		if !errors.Is(err, ledger.ErrConflict) {
			t.Errorf("second resume: %v, want ledger.ErrConflict", err)
		}
		if n := tr.w.writes.Load(); n != 1 {
			t.Errorf("wrote %d times, want once", n)
		}
	})

	t.Run("racing resumers", func(t *testing.T) {
		tr := newPausedTree(t, 1)
		sts := []*ledger.StoredThread{tr.load(t), tr.load(t)}
		errs := make(chan error, len(sts))
		for _, st := range sts {
			go func() {
				_, err := tr.step.Resume(ctx, st, tr.parent, []artifact.Decision{loop.Approve("p1")})
				errs <- err
			}()
		}
		var won, lost int
		for range sts {
			switch err := <-errs; {
			case err == nil:
				won++
			case errors.Is(err, ledger.ErrConflict):
				lost++
			default:
				t.Errorf("resume: %v", err)
			}
		}
		if won != 1 || lost != 1 || tr.w.writes.Load() != 1 {
			t.Errorf("%d won, %d lost, %d writes: want one of each and one write", won, lost, tr.w.writes.Load())
		}
	})

	t.Run("interrupted and rerun", func(t *testing.T) {
		tr := newPausedTree(t, 1)
		// The caller's handler says its calls are idempotent, so the loop
		// reruns an approved call whose result is missing; the first
		// resume stops after the agent ran, before its result is stored.
		inner := xtool.NewHandler(tr.w.reg)
		crash := errors.New("crash after the call")
		crashing := loop.New(loop.WithHandlers(loop.HandlerFunc(func(ctx context.Context, a artifact.Artifact, _ loop.Emitter) error {
			_ = inner.Handle(ctx, a, loop.EmitterFunc(func(context.Context, loop.Event) {}))
			return crash
		})))
		if _, err := crashing.Resume(ctx, tr.load(t), script.Play(), []artifact.Decision{loop.Approve("p1")}); !errors.Is(err, crash) {
			t.Fatalf("crashing resume: %v", err)
		}
		if n := tr.w.writes.Load(); n != 1 {
			t.Fatalf("wrote %d times on the first resume, want once", n)
		}
		rerun := loop.New(loop.WithHandlers(idempotent{xtool.NewHandler(tr.w.reg)}))
		st := tr.load(t)
		if _, err := rerun.Resume(ctx, st, tr.parent, nil); err != nil {
			t.Fatalf("rerun: %v", err)
		}
		if n := tr.w.writes.Load(); n != 1 {
			t.Errorf("wrote %d times, want once", n)
		}
		if got := lastText(st); got != "parent: worker: wrote out.txt" {
			t.Errorf("parent answer %q", got)
		}
	})
}

// idempotent is a Handler that says every call may run again.
type idempotent struct{ *xtool.Handler }

func (idempotent) Idempotent(artifact.ToolCall) bool { return true }

// A child call made after the resume needs its own approval: the caller
// pauses again on the same call, and that call's first approval does not
// carry over, even to a child call that reuses its ID.
func TestChildCallAfterResumeWaitsAgain(t *testing.T) {
	ctx := context.Background()
	store := fileStore(t)
	w := newWriter(t)
	worker := mustNew(t, "worker", agent.WithRegistry(w.reg), agent.WithStore(store), agent.WithProvider(script.Play(
		script.Call("c1", "write_file", `{"path":"a.txt","text":"one"}`),
		script.Call("p1", "write_file", `{"path":"b.txt","text":"two"}`),
		echoResult("worker: "),
	)))
	mustRegister(t, w.reg, worker)
	hopts, filter := policyDoor(t, w.reg)
	step := parentStep(w.reg, filter, xtool.PauseForDecision, hopts...)
	parent := script.Play(script.Call("p1", "worker", `{"task":"write two files"}`), echoResult("parent: "))
	st, err := store.Create(ctx, ledger.WithMetadata(map[string]string{policy.RolesKey: "editor"}))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if err := st.Append(ledger.RoleUser, artifact.Text{Content: "write two files"}); err != nil {
		t.Fatal(err)
	}
	wantPending := func(err error, file string) {
		t.Helper()
		var pe *loop.PendingError
		if !errors.As(err, &pe) || len(pe.Calls) != 1 || pe.Calls[0].ToolCallID != "p1" || !strings.Contains(pe.Calls[0].Reason, file) {
			t.Fatalf("got %v, want the parent's call p1 pending on %s", err, file)
		}
	}
	_, err = step.Run(ctx, st, parent)
	wantPending(err, "a.txt")
	_, err = step.Resume(ctx, st, parent, []artifact.Decision{loop.Approve("p1")})
	wantPending(err, "b.txt")
	if got := w.written(t); len(got) != 1 || got[0] != "a.txt" {
		t.Fatalf("after the first approval: files %v, want a.txt only", got)
	}
	if _, err := step.Resume(ctx, st, parent, []artifact.Decision{loop.Approve("p1")}); err != nil {
		t.Fatalf("second resume: %v", err)
	}
	if got := w.written(t); len(got) != 2 || w.writes.Load() != 2 {
		t.Errorf("files %v after %d writes, want a.txt and b.txt once each", got, w.writes.Load())
	}
	if got := lastText(st); got != "parent: worker: wrote b.txt" {
		t.Errorf("parent answer %q", got)
	}
}

// Without a store, a paused child lives in its Agent's memory: the caller
// resumes it in the same process, once; an Agent that did not pause it
// (another process) cannot, and says so.
func TestChildPauseInMemory(t *testing.T) {
	ctx := context.Background()
	w := newWriter(t)
	mk := func() *agent.Agent {
		return mustNew(t, "worker", agent.WithRegistry(w.reg), agent.WithProvider(script.Play(
			script.Call("c1", "write_file", `{"path":"out.txt","text":"hello"}`),
			echoResult("worker: "),
			script.Call("c2", "write_file", `{"path":"out.txt","text":"hello"}`),
		)))
	}
	mustRegister(t, w.reg, mk())
	hopts, filter := policyDoor(t, w.reg)
	step := parentStep(w.reg, filter, xtool.PauseForDecision, hopts...)
	run := func() *ledger.Thread {
		th := editorThread(t, "get out.txt written")
		_, err := step.Run(ctx, th, script.Play(script.Call("p1", "worker", `{"task":"write out.txt"}`), echoResult("parent: ")))
		if !errors.Is(err, loop.ErrPaused) {
			t.Fatalf("run: %v, want pending", err)
		}
		return th
	}

	th := run()
	if _, err := step.Resume(ctx, th, script.Play(echoResult("parent: ")), []artifact.Decision{loop.Approve("p1")}); err != nil {
		t.Fatal(err)
	}
	if got := lastText(th); got != "parent: worker: wrote out.txt" || w.writes.Load() != 1 {
		t.Errorf("answer %q after %d writes", got, w.writes.Load())
	}

	// Another process: the same configuration, a new Agent.
	th = run()
	other := tool.NewRegistry()
	fresh := mk()
	mustRegister(t, other, fresh)
	var outcome *agent.Outcome
	elsewhere := loop.New(
		loop.WithHandlers(xtool.NewHandler(other)),
		loop.WithObserver(loop.EmitterFunc(func(_ context.Context, ev loop.Event) {
			if tc, ok := ev.(loop.TurnCompleteEvent); ok {
				for _, a := range tc.Artifacts {
					if r, ok := a.(artifact.ToolResult); ok {
						outcome, _ = agent.OutcomeOf(r)
					}
				}
			}
		})))
	if _, err := elsewhere.Resume(ctx, th, script.Play(echoResult("parent: ")), []artifact.Decision{loop.Approve("p1")}); err != nil {
		t.Fatal(err)
	}
	if err := elsewhere.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if outcome == nil || !errors.Is(outcome.Err, agent.ErrNotKept) {
		t.Errorf("outcome %+v, want ErrNotKept", outcome)
	}
	if got := lastText(th); !strings.HasPrefix(got, "parent: the agent worker could not continue: its paused run is not available") {
		t.Errorf("answer %q", got)
	}
	if w.writes.Load() != 1 {
		t.Errorf("wrote %d times, want once", w.writes.Load())
	}
}

// Approving the caller's call with edited arguments starts a fresh child
// with the edited task, whose calls need approval in their turn; the
// paused child's calls are denied, so it does not stay paused.
func TestChildPauseEditedTask(t *testing.T) {
	ctx := context.Background()
	store := fileStore(t)
	w := newWriter(t)
	worker := mustNew(t, "worker", agent.WithRegistry(w.reg), agent.WithStore(store), agent.WithProvider(script.Play(
		script.Call("c1", "write_file", `{"path":"out.txt","text":"hello"}`),
		script.Call("c1", "write_file", `{"path":"other.txt","text":"edited"}`),
		echoResult("worker: "),
	)))
	mustRegister(t, w.reg, worker)
	hopts, filter := policyDoor(t, w.reg)
	step := parentStep(w.reg, filter, xtool.PauseForDecision, hopts...)
	parent := script.Play(script.Call("p1", "worker", `{"task":"write out.txt"}`), echoResult("parent: "))
	th := editorThread(t, "get a file written")
	if _, err := step.Run(ctx, th, parent); !errors.Is(err, loop.ErrPaused) {
		t.Fatalf("run: %v", err)
	}
	first, _ := th.Metadata(agent.MetaChildPrefix + "p1")

	_, err := step.Resume(ctx, th, parent, []artifact.Decision{loop.ApproveWith("p1", `{"task":"write other.txt"}`)})
	var pe *loop.PendingError
	if !errors.As(err, &pe) || len(pe.Calls) != 1 || !strings.Contains(pe.Calls[0].Reason, "other.txt") {
		t.Fatalf("resume with an edited task: %v, want p1 pending on other.txt", err)
	}
	second, _ := th.Metadata(agent.MetaChildPrefix + "p1")
	if second == first || w.writes.Load() != 0 {
		t.Fatalf("child %s (was %s), %d writes: want a fresh child and no write", second, first, w.writes.Load())
	}
	old, err := store.Load(ctx, first)
	if err != nil {
		t.Fatal(err)
	}
	defer old.Close()
	if p := loop.Pending(old); len(p) != 0 {
		t.Errorf("the abandoned child still waits on %v", p)
	}
	if res := results(old); len(res) != 1 || !strings.Contains(res[0].Content, "edited the task") {
		t.Errorf("abandoned child's results %+v", res)
	}

	if _, err := step.Resume(ctx, th, parent, []artifact.Decision{loop.Approve("p1")}); err != nil {
		t.Fatal(err)
	}
	if got := w.written(t); len(got) != 1 || got[0] != "other.txt" || w.writes.Load() != 1 {
		t.Errorf("files %v after %d writes, want other.txt once", got, w.writes.Load())
	}
	if got := lastText(th); got != "parent: worker: wrote other.txt" {
		t.Errorf("answer %q", got)
	}
}

// A child's calls are charged to the caller's run: x/policy's
// calls_per_run counts the caller's calls and every call made below
// them, in the child's run and in the caller's later answers.
func TestChildCallsCountTowardCallersRunLimit(t *testing.T) {
	ctx := context.Background()
	w := newWriter(t)
	write := func(id, name string) script.Step {
		return script.Call(id, "write_file", `{"path":"`+name+`","text":"x"}`)
	}
	worker := mustNew(t, "worker", agent.WithRegistry(w.reg), agent.WithProvider(script.Play(
		write("c1", "a.txt"), write("c2", "b.txt"), write("c3", "c.txt"),
		echoResult("worker: "),
	)))
	mustRegister(t, w.reg, worker)
	p, err := policy.Parse([]byte(`
roles:
  editor:
    allow:
      tools: ["*"]
    limits:
      calls_per_run: 3
`))
	if err != nil {
		t.Fatal(err)
	}
	e := policy.NewEnforcer(w.reg, p)
	step := parentStep(w.reg, e.Filter(), refuse, e.HandlerOptions()...)
	th := editorThread(t, "write files")
	if _, err := step.Run(ctx, th, script.Play(
		script.Call("p1", "worker", `{"task":"write three files"}`),
		write("p2", "d.txt"),
		script.Text("done"),
	)); err != nil {
		t.Fatal(err)
	}
	// The caller's p1 is call 1; the child's c1 and c2 make 3; c3 is one
	// too many, and so is the caller's p2 after them.
	if got := w.written(t); len(got) != 2 || got[0] != "a.txt" || got[1] != "b.txt" {
		t.Errorf("files %v, want a.txt and b.txt", got)
	}
	res := results(th)
	if len(res) != 2 {
		t.Fatalf("results %+v", res)
	}
	if want := "worker: the call to write_file was refused: the caller that started you allows 3 tool calls per request, counting those of the agents it calls, and they are used up; answer with what you have"; res[0].Content != want {
		t.Errorf("child's answer %q, want %q", res[0].Content, want)
	}
	if want := "the call to write_file was refused: your role allows 3 tool calls per request and they are used up; answer with what you have"; !res[1].IsError || res[1].Content != want {
		t.Errorf("caller's second call %+v, want refused: %q", res[1], want)
	}
	if got, _ := th.Metadata(xtool.MetaCallsBelowPrefix + "p1"); got != "3" {
		t.Errorf("calls below p1 recorded as %q, want 3", got)
	}
}

// Called outside a loop turn (an MCP request), no one can resume a pause:
// the child's waiting calls are denied, so it does not stay paused, and
// the call fails closed.
func TestChildPauseOutsideALoopFailsClosed(t *testing.T) {
	ctx := context.Background()
	store := fileStore(t)
	w := newWriter(t)
	worker := mustNew(t, "worker", agent.WithRegistry(w.reg), agent.WithStore(store), agent.WithProvider(script.Play(
		script.Call("c1", "write_file", `{"path":"out.txt","text":"hello"}`),
		echoResult("worker: "),
	)))
	mustRegister(t, w.reg, worker)
	h := xtool.NewHandler(w.reg, xtool.WithApprover(xtool.PauseForDecision), xtool.WithApprovalFor("write_file"))
	res := h.Execute(ctx, artifact.ToolCall{ID: "m1", Name: "worker", Arguments: `{"task":"write out.txt"}`})
	want := "the agent worker stopped: 1 of its calls need a person's approval, which cannot be asked for here; they did not run. Do this part another way."
	if !res.IsError || res.Content != want {
		t.Errorf("result %+v, want error %q", res, want)
	}
	if w.writes.Load() != 0 {
		t.Errorf("wrote %d times", w.writes.Load())
	}
	threads := 0
	for info, err := range store.List(ctx) {
		if err != nil {
			t.Fatal(err)
		}
		threads++
		st, err := store.Load(ctx, info.ID)
		if err != nil {
			t.Fatal(err)
		}
		if p := loop.Pending(st); len(p) != 0 {
			t.Errorf("thread %s still waits on %v", info.ID, p)
		}
		st.Close()
	}
	if threads != 1 {
		t.Errorf("%d threads stored, want the child's", threads)
	}
}

// fileStore is a file store in a fresh folder, closed when the test ends.
func fileStore(t *testing.T) *file.Store {
	t.Helper()
	store, err := file.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	return store
}
