package cli

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lodeworks/lode/artifact"
	"github.com/lodeworks/lode/ledger"
	"github.com/lodeworks/lode/ledger/file"
	"github.com/lodeworks/lode/loop"
)

// fakeTemporal plays the workers: Run and Resume append what a worker
// would to the thread and say how the run ended; it keeps the Agent and
// what it was given.
type fakeTemporal struct {
	agent     *Agent
	thread    string
	decisions []artifact.Decision
	worked    bool
}

func (f *fakeTemporal) Worker(ctx context.Context, a *Agent) error {
	f.agent, f.worked = a, true
	return nil
}

// Run answers with a call that waits for approval.
func (f *fakeTemporal) Run(ctx context.Context, a *Agent, thread string) error {
	f.agent, f.thread = a, thread
	st, err := a.Store.Load(ctx, thread)
	if err != nil {
		return err
	}
	defer st.Close()
	call := artifact.ToolCall{ID: "call_1", Name: "rm", Arguments: `{"path":"x"}`}
	p := artifact.Pending{ToolCallID: "call_1", Name: "rm", Arguments: call.Arguments, Reason: "the tool is marked destructive"}
	if err := st.Append(ledger.RoleAssistant, call); err != nil {
		return err
	}
	if err := st.Append(ledger.RoleTool, p); err != nil {
		return err
	}
	return &loop.PendingError{Thread: thread, Calls: []artifact.Pending{p}}
}

// Resume runs the approved call and answers, showing the turns.
func (f *fakeTemporal) Resume(ctx context.Context, a *Agent, thread string, ds []artifact.Decision) error {
	f.agent, f.thread, f.decisions = a, thread, ds
	st, err := a.Store.Load(ctx, thread)
	if err != nil {
		return err
	}
	defer st.Close()
	turns := []ledger.Turn{
		{Role: ledger.RoleTool, Artifacts: []artifact.Artifact{ds[0], artifact.ToolResult{ToolCallID: "call_1", Name: "rm", Content: "removed"}}},
		{Role: ledger.RoleAssistant, Artifacts: []artifact.Artifact{artifact.Text{Content: "Removed x."}}},
	}
	for _, t := range turns {
		if err := st.Append(t.Role, t.Artifacts...); err != nil {
			return err
		}
		a.Show.Emit(ctx, loop.TurnCompleteEvent{Role: t.Role, Artifacts: t.Artifacts})
	}
	return nil
}

func lodeWith(t *testing.T, tp Temporal, dir string, args ...string) result {
	t.Helper()
	t.Chdir(dir)
	var out, errb strings.Builder
	e := env{stdin: strings.NewReader(""), stdout: &out, stderr: &errb, getenv: func(string) string { return "" },
		interrupts: make(chan os.Signal), temporal: tp}
	code := run(context.Background(), e, args)
	return result{code, out.String(), errb.String()}
}

// A build without Temporal says so in one line, and names the one that
// has it, for each command that takes --temporal.
func TestTemporalNotInThisBuild(t *testing.T) {
	want := "lode: " + noTemporal + "\n"
	for _, args := range [][]string{
		{"run", "--temporal", "127.0.0.1:7233", "hi"},
		{"resume", "--temporal", "127.0.0.1:7233", "t1", "approve:c1"},
		{"worker", "--temporal", "127.0.0.1:7233"},
	} {
		t.Run(args[0], func(t *testing.T) {
			r := lodeWith(t, nil, t.TempDir(), args...)
			if r.code != exitError || r.stderr != want || r.stdout != "" {
				t.Fatalf("exit %d, stdout %q, stderr %q; want exit 1 and %q", r.code, r.stdout, r.stderr, want)
			}
		})
	}
	// The binary of the root module, as a user meets it.
	cmd := exec.Command(lodeBin, "run", "--temporal", "127.0.0.1:7233", "hi")
	cmd.Dir = t.TempDir()
	var stderr strings.Builder
	cmd.Stderr = &stderr
	err := cmd.Run()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != exitError || stderr.String() != want {
		t.Fatalf("lode run --temporal: %v, stderr %q; want exit 1 and %q", err, stderr.String(), want)
	}
	if !strings.Contains(want, "go install github.com/lodeworks/lode/x/temporal/cmd/lode") {
		t.Fatalf("the message names no install command: %q", want)
	}
}

func TestTemporalBadFlags(t *testing.T) {
	cfgDir := writeConfig(t, "store: threads\n")
	for _, tc := range []struct {
		name string
		args []string
		code int
		msg  string
	}{
		{"namespace without --temporal", []string{"run", "--temporal-namespace", "prod", "hi"}, exitUsage,
			"lode: --temporal-namespace and --temporal-task-queue need --temporal HOST:PORT\n"},
		{"task queue without --temporal", []string{"worker", "--store", "x", "--temporal-task-queue", "q"}, exitUsage,
			"lode: --temporal-namespace and --temporal-task-queue need --temporal HOST:PORT\n"},
		{"cassette", []string{"run", "--temporal", "h:1", "--replay", "c.yaml", "hi"}, exitUsage,
			"lode: --record and --replay run the model in this process; with --temporal it runs on the workers\n"},
		{"worker --every", []string{"worker", "--temporal", "h:1", "--every", "5s"}, exitUsage,
			"lode: --every and --approval-expiry apply to recovering the runs of a store; with --temporal, Temporal gives the worker its runs\n"},
		{"worker takes no arguments", []string{"worker", "--temporal", "h:1", "extra"}, exitUsage,
			"lode: lode worker takes no arguments, got [\"extra\"]\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := &fakeTemporal{}
			r := lodeWith(t, f, cfgDir, tc.args...)
			if r.code != tc.code || r.stderr != tc.msg {
				t.Fatalf("exit %d, stderr %q; want exit %d and %q", r.code, r.stderr, tc.code, tc.msg)
			}
			if f.agent != nil {
				t.Fatal("the engine was called")
			}
		})
	}
	t.Run("no store", func(t *testing.T) {
		f := &fakeTemporal{}
		r := lodeWith(t, f, t.TempDir(), "run", "--temporal", "h:1", "hi")
		want := "lode: --temporal needs the ledger every worker shares: --store DIR, or store: in lode.yaml\n"
		if r.code != exitUsage || r.stderr != want || f.agent != nil {
			t.Fatalf("exit %d, stderr %q; want exit 2 and %q", r.code, r.stderr, want)
		}
	})
}

// lode run --temporal stores the prompt on a new thread, hands it to the
// engine, and pauses as lode run does, printing resume commands that keep
// --temporal; lode resume --temporal checks the decisions, sends them, and
// prints what the run did next.
func TestTemporalRunPausesAndResumes(t *testing.T) {
	dir := writeConfig(t, "store: threads\ntemporal:\n  task_queue: agents\n")
	f := &fakeTemporal{}
	r := lodeWith(t, f, dir, "run", "--temporal", "127.0.0.1:7233", "remove x")
	if r.code != exitPaused {
		t.Fatalf("exit %d, stderr %q", r.code, r.stderr)
	}
	a := f.agent
	if a.Address != "127.0.0.1:7233" || a.Namespace != DefaultTemporalNamespace || a.TaskQueue != "agents" || a.MaxTurns != DefaultMaxTurns {
		t.Fatalf("agent %+v", a)
	}
	if a.Provider != nil || a.Handler != nil {
		t.Fatal("lode run --temporal built a model or tools")
	}
	st, err := loadStored(t, filepath.Join(dir, "threads"), f.thread)
	if err != nil {
		t.Fatal(err)
	}
	if turns := st.Turns(); len(turns) != 3 || turns[0].Role != ledger.RoleUser || turns[0].Artifacts[0].(artifact.Text).Content != "remove x" {
		t.Fatalf("turns %+v", turns)
	}
	want := "  lode resume --store threads --temporal 127.0.0.1:7233 " + f.thread + " approve:call_1\n"
	if !strings.Contains(r.stderr, want) {
		t.Fatalf("stderr %q lacks %q", r.stderr, want)
	}

	// A decision on a call that does not wait is refused before anything
	// is sent.
	g := &fakeTemporal{}
	r = lodeWith(t, g, dir, "resume", "--temporal", "127.0.0.1:7233", f.thread, "approve:call_9")
	wantErr := "lode: thread " + f.thread + " has no call call_9 waiting for approval (lode resume --store threads " + f.thread + " lists those that wait)\n"
	if r.code != exitError || r.stderr != wantErr || g.agent != nil {
		t.Fatalf("exit %d, stderr %q; want %q", r.code, r.stderr, wantErr)
	}

	// Without decisions it lists, with --temporal in the commands.
	r = lodeWith(t, g, dir, "resume", "--temporal", "127.0.0.1:7233", "--temporal-namespace", "prod", f.thread)
	if r.code != exitPaused || !strings.Contains(r.stderr, "lode resume --store threads --temporal 127.0.0.1:7233 --temporal-namespace prod "+f.thread+" approve:call_1") || g.agent != nil {
		t.Fatalf("exit %d, stderr %q", r.code, r.stderr)
	}

	r = lodeWith(t, g, dir, "resume", "--temporal", "127.0.0.1:7233", "--temporal-namespace", "prod", f.thread, "approve:call_1")
	if r.code != 0 {
		t.Fatalf("exit %d, stderr %q", r.code, r.stderr)
	}
	if g.agent.Namespace != "prod" || len(g.decisions) != 1 || g.decisions[0].ToolCallID != "call_1" || !g.decisions[0].Approved {
		t.Fatalf("agent %+v, decisions %+v", g.agent, g.decisions)
	}
	if r.stdout != "Removed x.\n" || !strings.Contains(r.stderr, "← rm: removed\n") {
		t.Fatalf("stdout %q, stderr %q", r.stdout, r.stderr)
	}

	// --thread goes on with the finished thread on the workers.
	h := &fakeTemporal{}
	r = lodeWith(t, h, dir, "run", "--temporal", "127.0.0.1:7233", "--thread", f.thread, "and y")
	if r.code != exitPaused || h.thread != f.thread {
		t.Fatalf("exit %d, thread %q, stderr %q", r.code, h.thread, r.stderr)
	}
	st, err = loadStored(t, filepath.Join(dir, "threads"), f.thread)
	if err != nil {
		t.Fatal(err)
	}
	if turns := st.Turns(); len(turns) != 8 || turns[5].Artifacts[0].(artifact.Text).Content != "and y" {
		t.Fatalf("turns %+v", turns)
	}

	// It waits again, so a further prompt is refused before anything is
	// sent; an unknown thread is named.
	for _, c := range []struct{ thread, want string }{
		{f.thread, "lode: thread " + f.thread + " has 1 call waiting for approval: decide it with lode resume --temporal first\n"},
		{"0123456789abcdef0123456789abcdef", "lode: thread 0123456789abcdef0123456789abcdef is not in threads: lode threads --store threads lists the stored threads\n"},
	} {
		k := &fakeTemporal{}
		r = lodeWith(t, k, dir, "run", "--temporal", "127.0.0.1:7233", "--thread", c.thread, "and z")
		if r.code != exitError || r.stderr != c.want || k.agent != nil {
			t.Fatalf("exit %d, stderr %q; want %q", r.code, r.stderr, c.want)
		}
	}
}

// lode worker --temporal builds the whole agent from lode.yaml and hands
// it to the engine.
func TestTemporalWorker(t *testing.T) {
	dir := writeConfig(t, "store: threads\ntools:\n  calculator: {}\nmodel:\n  base_url: http://127.0.0.1:1/v1\n  name: m\ntemporal:\n  namespace: agents\n")
	f := &fakeTemporal{}
	r := lodeWith(t, f, dir, "worker", "--temporal", "127.0.0.1:7233")
	if r.code != 0 || !f.worked {
		t.Fatalf("exit %d, stderr %q", r.code, r.stderr)
	}
	a := f.agent
	if a.Provider == nil || a.Handler == nil || len(a.Invoke) == 0 || len(a.Loop) == 0 || a.Store == nil {
		t.Fatalf("agent %+v", a)
	}
	if a.Namespace != "agents" || a.TaskQueue != DefaultTemporalTaskQueue {
		t.Fatalf("agent %+v", a)
	}
	// The handler runs the configured tools: the calculator by default.
	var col []artifact.Artifact
	err := a.Handler.Handle(context.Background(), artifact.ToolCall{ID: "c1", Name: "calculator__eval", Arguments: `{"expression":"1+1"}`},
		loop.EmitterFunc(func(_ context.Context, ev loop.Event) {
			if tc, ok := ev.(loop.TurnCompleteEvent); ok {
				col = append(col, tc.Artifacts...)
			}
		}))
	if err != nil || len(col) != 1 || !strings.Contains(col[0].(artifact.ToolResult).Content, "2") {
		t.Fatalf("handler: %v, %+v", err, col)
	}
}

func loadStored(t *testing.T, dir, id string) (ledger.State, error) {
	t.Helper()
	s, err := file.Open(dir)
	if err != nil {
		return nil, err
	}
	t.Cleanup(func() { s.Close() })
	return s.Load(context.Background(), id)
}
