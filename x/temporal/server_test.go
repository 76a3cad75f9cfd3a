package temporal_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/lodeworks/lode/artifact"
	"github.com/lodeworks/lode/ledger"
	"github.com/lodeworks/lode/ledger/file"
	"github.com/lodeworks/lode/loop"
)

// realServer is the address of the Temporal dev server that
// scripts/temporal-dev.sh starts; the tests that need one skip without it.
func realServer(tb testing.TB) string {
	tb.Helper()
	if os.Getenv("LODE_TEST_TEMPORAL") != "on" {
		tb.Skip("needs a real Temporal server: run scripts/temporal-dev.sh test (it builds the pinned temporal CLI, starts the dev server and sets LODE_TEST_TEMPORAL=on and LODE_TEMPORAL_ADDRESS)")
	}
	addr := os.Getenv("LODE_TEMPORAL_ADDRESS")
	if addr == "" {
		tb.Fatal("LODE_TEST_TEMPORAL=on needs LODE_TEMPORAL_ADDRESS=HOST:PORT of the dev server (scripts/temporal-dev.sh start prints it)")
	}
	return addr
}

// build compiles the package at path (in this module) into dir.
func build(t *testing.T, dir, path string) string {
	t.Helper()
	out := filepath.Join(dir, filepath.Base(path))
	if b, err := exec.Command("go", "build", "-o", out, path).CombinedOutput(); err != nil {
		t.Fatalf("go build %s: %v\n%s", path, err, b)
	}
	return out
}

// model is an OpenAI-compatible server that plays a script chosen by the
// run's prompt and how many tool results the request carries, counting
// each request it answers.
type model struct {
	mu    sync.Mutex
	asked map[string]int
}

// script: prompt -> the tool call to make after n results; past the end,
// the answer quotes the last result.
var plays = map[string][]artifact.ToolCall{
	"kill":    {{ID: "call_note", Name: "fx__note", Arguments: `{"text":"a"}`}, {ID: "call_slow", Name: "fx__slow", Arguments: `{}`}},
	"approve": {{ID: "call_guarded", Name: "fx__guarded", Arguments: `{}`}},
}

func (m *model) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Messages []struct {
			Role    string `json:"role"`
			Content string `json:"content"`
		} `json:"messages"`
	}
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	prompt, results, last := "", 0, ""
	for _, msg := range req.Messages {
		switch msg.Role {
		case "user":
			prompt = msg.Content
		case "tool":
			results++
			last = msg.Content
		}
	}
	m.mu.Lock()
	if m.asked == nil {
		m.asked = map[string]int{}
	}
	m.asked[fmt.Sprintf("%s/%d", prompt, results)]++
	m.mu.Unlock()
	message := map[string]any{"role": "assistant", "content": "done: " + last}
	finish := "stop"
	if calls := plays[prompt]; results < len(calls) {
		c := calls[results]
		message = map[string]any{"role": "assistant", "content": nil, "tool_calls": []map[string]any{{
			"id": c.ID, "type": "function", "function": map[string]any{"name": c.Name, "arguments": c.Arguments}}}}
		finish = "tool_calls"
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{
		"id": "chatcmpl-1", "object": "chat.completion", "created": 1, "model": "scripted",
		"choices": []map[string]any{{"index": 0, "message": message, "finish_reason": finish}},
		"usage":   map[string]any{"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
	})
}

func (m *model) count(key string) int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.asked[key]
}

// proc is a lode process of the test, in a process group of its own so
// that SIGKILL takes it whole.
type proc struct {
	cmd            *exec.Cmd
	stdout, stderr *syncBuf
	done           chan struct{}
	err            error
}

func start(t *testing.T, ctx context.Context, dir, bin string, args ...string) *proc {
	t.Helper()
	p := &proc{cmd: exec.CommandContext(ctx, bin, args...), stdout: &syncBuf{}, stderr: &syncBuf{}, done: make(chan struct{})}
	p.cmd.Dir = dir
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	p.cmd.Stdout = p.stdout
	p.cmd.Stderr = p.stderr
	p.cmd.Env = append(os.Environ(), "OPENAI_API_KEY=")
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { p.err = p.cmd.Wait(); close(p.done) }()
	t.Cleanup(func() {
		_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
		<-p.done
	})
	return p
}

// wait is the process's exit code.
func (p *proc) wait(t *testing.T) int {
	t.Helper()
	<-p.done
	var ee *exec.ExitError
	switch {
	case p.err == nil:
		return 0
	case errors.As(p.err, &ee):
		return ee.ExitCode()
	}
	t.Fatalf("%s: %v", p.cmd.Path, p.err)
	return -1
}

// startWorker starts lode worker --temporal and waits for its line saying it
// serves the task queue.
func startWorker(t *testing.T, ctx context.Context, dir, bin, addr string) *proc {
	t.Helper()
	pr, pw := io.Pipe()
	p := &proc{cmd: exec.CommandContext(ctx, bin, "worker", "--temporal", addr), stdout: &syncBuf{}, stderr: &syncBuf{}, done: make(chan struct{})}
	p.cmd.Dir = dir
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	p.cmd.Stdout = p.stdout
	p.cmd.Stderr = pw
	p.cmd.Env = append(os.Environ(), "OPENAI_API_KEY=")
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	ready := make(chan bool, 1)
	go func() {
		sc := bufio.NewScanner(pr)
		said := false
		for sc.Scan() {
			fmt.Fprintln(p.stderr, sc.Text())
			if !said && strings.HasPrefix(sc.Text(), "lode worker: running") {
				said = true
				ready <- true
			}
		}
		if !said {
			ready <- false
		}
	}()
	go func() { p.err = p.cmd.Wait(); pw.Close(); close(p.done) }()
	t.Cleanup(func() {
		_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
		<-p.done
	})
	if !<-ready {
		<-p.done
		t.Fatalf("lode worker did not start: %v", p.err)
	}
	return p
}

// syncBuf is a buffer that a process's output goroutine writes while the
// test reads it.
type syncBuf struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncBuf) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuf) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func sideEffects(t *testing.T, path string) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	return strings.Fields(strings.ReplaceAll(string(b), " ", "_"))
}

// Two lode worker processes share a store and a task queue; the first is
// killed with SIGKILL inside a slow tool, and the second finishes the run:
// no model turn or tool call that had completed runs again, and the call
// that was cut off (not idempotent) gets the interrupted result. Then a
// run pauses for approval, and a third process, lode resume --temporal,
// decides and the run goes on to its answer.
func TestRealServerWorkers(t *testing.T) {
	addr := realServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	dir := t.TempDir()
	bin := build(t, dir, "./cmd/lode")
	fx := build(t, dir, "./internal/fx")
	fxLog, fifo := filepath.Join(dir, "fx.log"), filepath.Join(dir, "inside")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	// A reader blocked on the FIFO is released when the test ends.
	t.Cleanup(func() {
		if f, err := os.OpenFile(fifo, os.O_RDWR, 0); err == nil {
			f.Close()
		}
	})
	m := &model{}
	srv := httptest.NewServer(m)
	defer srv.Close()
	queue := "lode-test-" + ledger.NewID()[:8]
	cfg := fmt.Sprintf(`model:
  base_url: %s/v1
  name: scripted
  stream: false
store: threads
approve: [fx__guarded]
mcp:
  - name: fx
    command: [%q]
    env: {FX_LOG: %q, FX_FIFO: %q}
temporal:
  task_queue: %s
`, srv.URL, fx, fxLog, fifo, queue)
	if err := os.WriteFile(filepath.Join(dir, "lode.yaml"), []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}

	w1 := startWorker(t, ctx, dir, bin, addr)
	run := start(t, ctx, dir, bin, "run", "--temporal", addr, "kill")
	inside := make(chan error, 1)
	go func() {
		f, err := os.Open(fifo)
		if err == nil {
			_, err = bufio.NewReader(f).ReadString('\n')
			f.Close()
		}
		inside <- err
	}()
	select {
	case err := <-inside:
		if err != nil {
			t.Fatal(err)
		}
	case <-w1.done:
		t.Fatalf("the first worker ended before the slow tool ran: %v\n%s", w1.err, w1.stderr)
	case <-run.done:
		t.Fatalf("lode run ended before the slow tool ran: %v\n%s", run.err, run.stderr)
	}
	w2 := startWorker(t, ctx, dir, bin, addr)
	if err := syscall.Kill(-w1.cmd.Process.Pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-w1.done

	if code := run.wait(t); code != 0 {
		t.Fatalf("lode run --temporal: exit %d\nstdout %s\nstderr %s\nworker 2: %s", code, run.stdout, run.stderr, w2.stderr)
	}
	if want := "done: " + loop.InterruptedMessage; !strings.Contains(run.stdout.String(), want) {
		t.Fatalf("stdout %q lacks %q", run.stdout, want)
	}
	if got, want := sideEffects(t, fxLog), []string{"note_a", "slow"}; !slices.Equal(got, want) {
		t.Fatalf("side effects %q, want %q: a completed call ran again, or the cut-off one was retried", got, want)
	}
	for _, k := range []string{"kill/0", "kill/1", "kill/2"} {
		if n := m.count(k); n != 1 {
			t.Fatalf("model turn %s was asked %d times, want once", k, n)
		}
	}
	store, err := file.Open(filepath.Join(dir, "threads"))
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	var ids []string
	for info, err := range store.List(ctx) {
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, info.ID)
	}
	if len(ids) != 1 {
		t.Fatalf("threads %q, want one", ids)
	}
	if rs := results(t, store, ids[0]); len(rs["call_slow"]) != 1 || !rs["call_slow"][0].IsError || rs["call_slow"][0].Content != loop.InterruptedMessage ||
		len(rs["call_note"]) != 1 || rs["call_note"][0].Content != "noted a" {
		t.Fatalf("results %+v", rs)
	}

	// A run that pauses for approval; a third process decides.
	paused := start(t, ctx, dir, bin, "run", "--temporal", addr, "approve")
	if code := paused.wait(t); code != 3 {
		t.Fatalf("lode run --temporal: exit %d, want 3 (paused)\nstderr %s", code, paused.stderr)
	}
	if got := sideEffects(t, fxLog); slices.Contains(got, "guarded") {
		t.Fatalf("the guarded tool ran before its approval: %q", got)
	}
	var resume []string
	for _, line := range strings.Split(paused.stderr.String(), "\n") {
		if w := strings.Fields(line); len(w) > 2 && w[0] == "lode" && strings.HasPrefix(w[len(w)-1], "approve:") {
			resume = w[1:]
		}
	}
	if len(resume) == 0 || !slices.Contains(resume, "--temporal") || resume[len(resume)-1] != "approve:call_guarded" {
		t.Fatalf("no lode resume --temporal command among\n%s", paused.stderr)
	}
	decide := start(t, ctx, dir, bin, resume...)
	if code := decide.wait(t); code != 0 {
		t.Fatalf("lode %s: exit %d\nstderr %s", strings.Join(resume, " "), code, decide.stderr)
	}
	if !strings.Contains(decide.stdout.String(), "done: guarded ran") {
		t.Fatalf("lode resume printed %q, want the answer", decide.stdout)
	}
	if got, want := sideEffects(t, fxLog), []string{"note_a", "slow", "guarded"}; !slices.Equal(got, want) {
		t.Fatalf("side effects %q, want %q", got, want)
	}
	for _, k := range []string{"approve/0", "approve/1"} {
		if n := m.count(k); n != 1 {
			t.Fatalf("model turn %s was asked %d times, want once", k, n)
		}
	}

	// SIGTERM stops the second worker cleanly.
	if err := w2.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if code := w2.wait(t); code != 0 {
		t.Fatalf("lode worker after SIGTERM: exit %d\n%s", code, w2.stderr)
	}
}
