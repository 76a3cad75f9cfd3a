package cli

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/lodeworks/lode/artifact"
	"github.com/lodeworks/lode/ledger"
	"github.com/lodeworks/lode/ledger/file"
	"github.com/lodeworks/lode/loop"
)

// recoverUntil runs lode recover in-process until it recovers a run: the
// killed process's lease must expire first (lease: in the config).
func recoverUntil(t *testing.T, dir string, vars map[string]string, args ...string) result {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		r := lode(t, dir, vars, "", append([]string{"recover", "--model", "m"}, args...)...)
		if strings.Contains(r.stderr, "recovered thread") || r.code != 0 {
			return r
		}
		if time.Now().After(deadline) {
			t.Fatalf("nothing recovered within 30s; last stderr:\n%s", r.stderr)
		}
	}
}

// storedThread loads the one thread of the file store in dir.
func storedThread(t *testing.T, dir, id string) *ledger.StoredThread {
	t.Helper()
	s, err := file.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	st, err := s.Load(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

func resultFor(st ledger.State, id string) []artifact.ToolResult {
	var out []artifact.ToolResult
	for _, tr := range st.Turns() {
		for _, a := range tr.Artifacts {
			if r, ok := a.(artifact.ToolResult); ok && r.ToolCallID == id {
				out = append(out, r)
			}
		}
	}
	return out
}

// TestRecoverAfterKill9 kills a real lode process with SIGKILL while it
// works, then lets lode recover, in another process's place, finish the
// run.
func TestRecoverAfterKill9(t *testing.T) {
	t.Run("inside an approved tool call", func(t *testing.T) {
		sandbox := t.TempDir()
		fifo := filepath.Join(sandbox, "inside")
		if err := syscall.Mkfifo(fifo, 0o600); err != nil {
			t.Fatal(err)
		}
		dir := writeConfig(t, fmt.Sprintf("tools:\n  bash: {dir: %q}\nlease: 300ms\n", sandbox))
		store := filepath.Join(t.TempDir(), "ledger")
		fake := &fakeOpenAI{replies: []func(http.ResponseWriter, *http.Request){
			callReply("call_1", "bash__run", `{"command":"echo ran >> ran.log; echo in > inside; sleep 20"}`),
			textReply("The command was interrupted."),
		}}
		srv := httptest.NewServer(fake)
		defer srv.Close()
		vars := map[string]string{"OPENAI_BASE_URL": srv.URL + "/v1"}
		cfg := filepath.Join(dir, "lode.yaml")

		// bash is destructive: the run pauses, and resume runs it.
		r := lode(t, dir, vars, "", "run", "--model", "m", "--store", store, "clean up")
		m := regexp.MustCompile(`lode resume --config \S+ --store \S+ (\S+) approve:call_1\n|lode resume --store \S+ (\S+) approve:call_1\n`).FindStringSubmatch(r.stderr)
		if r.code != exitPaused || m == nil {
			t.Fatalf("run: exit %d, stderr:\n%s", r.code, r.stderr)
		}
		thread := m[1] + m[2]

		cmd, _, _, stderr := lodeProcess(t, vars, "resume", "--config", cfg, "--model", "m", "--store", store, thread, "approve:call_1")
		inside := make(chan error, 1)
		go func() {
			f, err := os.Open(fifo) // blocks until the command writes
			if err == nil {
				f.Close()
			}
			inside <- err
		}()
		select {
		case err := <-inside:
			if err != nil {
				t.Fatal(err)
			}
		case <-time.After(30 * time.Second):
			t.Fatalf("the tool never started; stderr:\n%s", stderr.String())
		}
		if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		if code := waitProcess(t, cmd, stderr); code != -1 {
			t.Fatalf("lode resume was not killed: exit %d", code)
		}
		st := storedThread(t, store, thread)
		if l, _ := st.Lease(); l.Owner == "" || len(resultFor(st, "call_1")) != 0 {
			t.Fatalf("the killed run left lease %+v and results %v", l, resultFor(st, "call_1"))
		}

		r = recoverUntil(t, dir, vars, "--store", store)
		if r.code != 0 || r.stdout != "The command was interrupted.\n" {
			t.Fatalf("recover: exit %d, stdout %q, stderr:\n%s", r.code, r.stdout, r.stderr)
		}
		if want := "recovered thread " + thread + " at turn 4: calls call_1 had no result; taken over from "; !strings.Contains(r.stderr, want) {
			t.Fatalf("stderr lacks %q:\n%s", want, r.stderr)
		}
		st = storedThread(t, store, thread)
		res := resultFor(st, "call_1")
		if len(res) != 1 || res[0].Content != loop.InterruptedMessage || !res[0].IsError {
			t.Fatalf("results %+v", res)
		}
		if l, _ := st.Lease(); l.Owner != "" {
			t.Fatalf("lease left: %+v", l)
		}
		if log, _ := os.ReadFile(filepath.Join(sandbox, "ran.log")); string(log) != "ran\n" {
			t.Fatalf("the command ran %q", log)
		}
		// The model read the interrupted result.
		msgs := fake.requests[len(fake.requests)-1]["messages"].([]any)
		if last := msgs[len(msgs)-1].(map[string]any); last["role"] != "tool" || !strings.Contains(fmt.Sprint(last["content"]), "interrupted") {
			t.Fatalf("last message %v", last)
		}
		// Nothing is left to recover.
		if r := lode(t, dir, vars, "", "recover", "--model", "m", "--store", store); r.code != 0 || r.stderr != "no stopped runs to recover\n" {
			t.Fatalf("second recover: exit %d, stderr:\n%s", r.code, r.stderr)
		}
	})

	t.Run("in the model stream", func(t *testing.T) {
		dir := writeConfig(t, "lease: 300ms\n")
		store := filepath.Join(t.TempDir(), "ledger")
		started := make(chan struct{})
		fake := &fakeOpenAI{replies: []func(http.ResponseWriter, *http.Request){stallReply(started), textReply("Hello again.")}}
		srv := httptest.NewServer(fake)
		defer srv.Close()
		vars := map[string]string{"OPENAI_BASE_URL": srv.URL + "/v1"}
		cmd, _, _, stderr := lodeProcess(t, vars, "run", "--config", filepath.Join(dir, "lode.yaml"), "--model", "m", "--store", store, "hello")
		select {
		case <-started:
		case <-time.After(30 * time.Second):
			t.Fatalf("the model was never asked; stderr:\n%s", stderr.String())
		}
		if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		waitProcess(t, cmd, stderr)
		r := recoverUntil(t, dir, vars, "--store", store)
		if r.code != 0 || r.stdout != "Hello again.\n" || !regexp.MustCompile(`recovered thread \S+ at turn 1: the model is asked again; taken over from \S+ by \S+`).MatchString(r.stderr) {
			t.Fatalf("recover: exit %d, stdout %q, stderr:\n%s", r.code, r.stdout, r.stderr)
		}
	})
}

// deadRun stores a thread whose owner died after its lease was taken at
// t0, an hour ago.
func deadRun(t *testing.T, store, id string, turns ...ledger.Turn) {
	t.Helper()
	s, err := file.Open(store)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	st, err := s.Create(context.Background(), ledger.WithID(id), ledger.WithTurns(turns...))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if _, err := st.AcquireLease(context.Background(), "dead/1", time.Now().Add(-time.Hour), time.Second); err != nil {
		t.Fatal(err)
	}
}

func userTurn(s string) ledger.Turn {
	return ledger.Turn{Role: ledger.RoleUser, Artifacts: []artifact.Artifact{artifact.Text{Content: s}}}
}

func TestRecoverCommandLine(t *testing.T) {
	dir := writeConfig(t, "")
	cases := []struct {
		args []string
		code int
		want string
	}{
		{[]string{"recover", "--model", "m"}, exitUsage, "lode: lode recover needs the ledger the runs used: --store DIR, or store: in lode.yaml\n"},
		{[]string{"recover", "--model", "m", "--store", "x", "extra"}, exitUsage, "lode: lode recover takes no arguments, got [\"extra\"]\n"},
		{[]string{"recover", "--model", "m", "--store", "x", "--approval-expiry", "-1s"}, exitUsage, "lode: --approval-expiry -1s: must not be negative (0 means approval_expiry in lode.yaml, or wait for ever)\n"},
		{[]string{"worker", "--model", "m", "--store", "x", "--every", "-1s"}, exitUsage, "lode: --every -1s: must not be negative (0 means 10s)\n"},
		{[]string{"worker", "--model", "m"}, exitUsage, "lode: lode worker needs the ledger the runs used: --store DIR, or store: in lode.yaml\n"},
	}
	for _, c := range cases {
		r := lode(t, dir, nil, "", c.args...)
		if r.code != c.code || r.stderr != c.want {
			t.Errorf("%v: exit %d, stderr %q", c.args, r.code, r.stderr)
		}
	}
	for body, want := range map[string]string{
		"lease: -1s\n":           "lode: lode.yaml:1: lease must not be negative (0 means the default, 30s)\n",
		"approval_expiry: -1h\n": "lode: lode.yaml:1: approval_expiry must not be negative (0 means calls wait for approval for ever)\n",
	} {
		r := lode(t, writeConfig(t, body), nil, "", "recover", "--model", "m", "--store", "x")
		if r.code != exitError || r.stderr != want {
			t.Errorf("%q: exit %d, stderr %q", body, r.code, r.stderr)
		}
	}
}

func TestRecoverExitCodes(t *testing.T) {
	t.Run("paused calls stay pending: 3, with the resume commands", func(t *testing.T) {
		dir := writeConfig(t, "")
		store := filepath.Join(t.TempDir(), "ledger")
		deadRun(t, store, "paused", userTurn("clean"),
			ledger.Turn{Role: ledger.RoleAssistant, Artifacts: []artifact.Artifact{artifact.ToolCall{ID: "c1", Name: "bash__run", Arguments: `{}`}}},
			ledger.Turn{Role: ledger.RoleTool, Artifacts: []artifact.Artifact{artifact.Pending{ToolCallID: "c1", Name: "bash__run", Arguments: `{}`}}})
		r := lode(t, dir, map[string]string{"OPENAI_BASE_URL": "http://127.0.0.1:1/v1"}, "", "recover", "--model", "m", "--store", store)
		if r.code != exitPaused || !strings.Contains(r.stderr, "recovered thread paused at turn 3: calls still wait for approval; taken over from dead/1") ||
			!strings.Contains(r.stderr, "lode resume --store "+store+" paused approve:c1") {
			t.Fatalf("exit %d, stderr:\n%s", r.code, r.stderr)
		}
	})
	t.Run("expired approvals are denied and the run finishes: 0", func(t *testing.T) {
		dir := writeConfig(t, "")
		store := filepath.Join(t.TempDir(), "ledger")
		deadRun(t, store, "waited", userTurn("clean"),
			ledger.Turn{Role: ledger.RoleAssistant, Artifacts: []artifact.Artifact{artifact.ToolCall{ID: "c1", Name: "bash__run", Arguments: `{}`}}},
			ledger.Turn{Role: ledger.RoleTool, Time: time.Now().Add(-2 * time.Hour), Artifacts: []artifact.Artifact{artifact.Pending{ToolCallID: "c1", Name: "bash__run", Arguments: `{}`}}})
		fake := &fakeOpenAI{replies: []func(http.ResponseWriter, *http.Request){textReply("Nobody approved it.")}}
		srv := httptest.NewServer(fake)
		defer srv.Close()
		r := lode(t, dir, map[string]string{"OPENAI_BASE_URL": srv.URL + "/v1"}, "", "recover", "--model", "m", "--store", store, "--approval-expiry", "1h")
		if r.code != 0 || r.stdout != "Nobody approved it.\n" || !strings.Contains(r.stderr, "calls c1 waited too long for approval and were denied") {
			t.Fatalf("exit %d, stdout %q, stderr:\n%s", r.code, r.stdout, r.stderr)
		}
		msgs := fake.requests[0]["messages"].([]any)
		if last := msgs[len(msgs)-1].(map[string]any); !strings.Contains(fmt.Sprint(last["content"]), loop.ApprovalExpiredReason) {
			t.Fatalf("the model did not read the denial: %v", last)
		}
	})
	t.Run("a failed run: 1", func(t *testing.T) {
		dir := writeConfig(t, "")
		store := filepath.Join(t.TempDir(), "ledger")
		deadRun(t, store, "failing", userTurn("hi"))
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			http.Error(w, `{"error":{"message":"down"}}`, http.StatusBadRequest)
		}))
		defer srv.Close()
		r := lode(t, dir, map[string]string{"OPENAI_BASE_URL": srv.URL + "/v1"}, "", "recover", "--model", "m", "--store", store)
		if r.code != exitError || !strings.Contains(r.stderr, "recovered thread failing at turn 1") || !strings.HasSuffix(r.stderr, "lode: 1 recovered run failed: failing\n") {
			t.Fatalf("exit %d, stderr:\n%s", r.code, r.stderr)
		}
	})
}

func TestWorkerRecoversUntilInterrupted(t *testing.T) {
	dir := writeConfig(t, "")
	store := filepath.Join(t.TempDir(), "ledger")
	deadRun(t, store, "first", userTurn("one"))
	fake := &fakeOpenAI{replies: []func(http.ResponseWriter, *http.Request){textReply("First."), textReply("Second.")}}
	srv := httptest.NewServer(fake)
	defer srv.Close()
	t.Chdir(dir)
	sig := make(chan os.Signal, 1)
	stdout, stderr := newWatched(), newWatched()
	e := env{stdin: strings.NewReader(""), stdout: stdout, stderr: stderr, interrupts: sig,
		getenv: func(k string) string { return map[string]string{"OPENAI_BASE_URL": srv.URL + "/v1"}[k] }}
	done := make(chan int, 1)
	go func() {
		done <- run(context.Background(), e, []string{"worker", "--model", "m", "--store", store, "--every", "20ms"})
	}()
	stderr.waitFor(t, "recovered thread first", 1)
	// A run that dies while the worker waits is found on a later pass.
	deadRun(t, store, "second", userTurn("two"))
	stderr.waitFor(t, "recovered thread second", 1)
	sig <- os.Interrupt
	if code := waitExit(t, done, stderr); code != 0 || !strings.HasSuffix(stderr.String(), "lode worker: stopped\n") {
		t.Fatalf("exit %d, stderr:\n%s", code, stderr.String())
	}
	if out := stdout.String(); out != "First.\nSecond.\n" {
		t.Fatalf("stdout %q", out)
	}
}
