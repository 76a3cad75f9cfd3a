//go:build linux

package temporal_test

import (
	"context"
	"fmt"
	"log/slog"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/log"

	"github.com/lodeworks/lode/ledger"
	"github.com/lodeworks/lode/ledger/file"
	"github.com/lodeworks/lode/loop"
	lt "github.com/lodeworks/lode/x/temporal"
)

// watch calls seen with every thread of the file store in dir each time
// one of its journals is written (inotify: no polling), and closes the
// channel it returns once seen reports true for one.
func watch(t *testing.T, dir string, seen func(id string, turns []ledger.Turn, meta map[string]string) bool) <-chan struct{} {
	t.Helper()
	fd, err := syscall.InotifyInit1(syscall.IN_CLOEXEC | syscall.IN_NONBLOCK)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := syscall.InotifyAddWatch(fd, dir, syscall.IN_MODIFY|syscall.IN_CLOSE_WRITE|syscall.IN_CREATE|syscall.IN_MOVED_TO); err != nil {
		syscall.Close(fd)
		t.Fatal(err)
	}
	events := os.NewFile(uintptr(fd), "inotify")
	store, err := file.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	finished := make(chan struct{})
	t.Cleanup(func() { events.Close(); <-finished; store.Close() })
	check := func() bool {
		for info, err := range store.List(context.Background()) {
			if err != nil {
				continue
			}
			st, err := store.Load(context.Background(), info.ID)
			if err != nil {
				continue
			}
			ok := seen(info.ID, st.Turns(), st.AllMetadata())
			st.Close()
			if ok {
				return true
			}
		}
		return false
	}
	go func() {
		defer close(finished)
		buf := make([]byte, 64<<10)
		for !check() {
			if _, err := events.Read(buf); err != nil {
				return
			}
		}
		close(done)
	}()
	return done
}

// TestRealServerGuards runs lode.yaml's guards on lode worker processes
// over a real Temporal server and checks that lode run --temporal and lode
// resume --temporal report a trip as lode run does in process (exit 4,
// the same one line), that the thread ends with the tripwire, reading as
// its twin run in process, and that no worker runs again the call whose
// result a guard stopped, or asks the model again, after the worker that
// stored the tripwire is killed (SIGKILL) the moment it is stored.
func TestRealServerGuards(t *testing.T) {
	addr := realServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	defer cancel()
	dir, twin := t.TempDir(), t.TempDir()
	bin := build(t, dir, "./cmd/lode")
	fx := build(t, dir, "./internal/fx")
	s := newStage()
	srv := httptest.NewServer(s)
	defer srv.Close()
	queue := "lode-guards-" + ledger.NewID()[:8]
	config := func(d, fxURL string) {
		cfg := fmt.Sprintf(`model:
  base_url: %s/v1
  name: scripted
  stream: false
store: threads
approve: [fx__guarded]
guards:
  rules:
    - {name: no-password, at: [input], contains: [password]}
    - {name: no-secret, at: [result], contains: [secret, guarded ran], reason: the result is withheld}
mcp:
  - name: fx
    command: [%q]
    env: {FX_LOG: %q, FX_URL: %q}
temporal:
  task_queue: %s
`, srv.URL, fx, filepath.Join(d, "fx.log"), fxURL, queue)
		if err := os.WriteFile(filepath.Join(d, "lode.yaml"), []byte(cfg), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(filepath.Join(d, "threads"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	config(dir, srv.URL)
	config(twin, "")
	// tripLine is lode's line for a trip: exit 4 and that line, on
	// Temporal as in process.
	tripLine := func(p *proc, what string) string {
		t.Helper()
		if code := p.wait(t); code != 4 {
			t.Fatalf("%s: exit %d, want 4 (stopped by a guard)\nstdout %s\nstderr %s", what, code, p.stdout, p.stderr)
		}
		for _, line := range strings.Split(p.stderr.String(), "\n") {
			if strings.HasPrefix(line, "lode: stopped by guard ") {
				return line
			}
		}
		t.Fatalf("%s: no trip line in\n%s", what, p.stderr)
		return ""
	}
	w := startWorker(t, ctx, dir, bin, addr)
	kill := func(fresh *proc) {
		if err := syscall.Kill(-w.cmd.Process.Pid, syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		<-w.done
		w = fresh
	}

	// At the input: the model is never asked.
	lines := map[string]string{}
	run := start(t, ctx, dir, bin, "run", "--temporal", addr, "my password is hunter2")
	lines["my password is hunter2"] = tripLine(run, "input")

	// At a call's result, the worker killed the moment the tripwire is
	// stored: the worker that takes over runs nothing again.
	var tripped string
	stored := watch(t, filepath.Join(dir, "threads"), func(id string, turns []ledger.Turn, _ map[string]string) bool {
		_, ok := loop.StoppedBy(turns)
		if ok && turns[len(turns)-1].Role == ledger.RoleTool {
			tripped = id
			return true
		}
		return false
	})
	run = start(t, ctx, dir, bin, "run", "--temporal", addr, "trip one")
	select {
	case <-stored:
	case <-run.done:
		t.Fatalf("lode run ended before the tripwire was seen: %v\n%s", run.err, run.stderr)
	}
	kill(startWorker(t, ctx, dir, bin, addr))
	lines["trip one"] = tripLine(run, "trip one")
	t.Logf("trip one: %s", killedWhen(t, ctx, addr, tripped))

	// A call approved with lode resume --temporal, whose result is
	// stopped.
	paused := start(t, ctx, dir, bin, "run", "--temporal", addr, "trip approved")
	if code := paused.wait(t); code != 3 {
		t.Fatalf("lode run --temporal: exit %d, want 3 (paused)\n%s", code, paused.stderr)
	}
	lines["trip approved"] = tripLine(start(t, ctx, dir, bin, resumeArgs(t, paused.stderr.String())...), "lode resume --temporal")

	// What each model turn was asked, each tool's work: once, or never.
	for key, want := range map[string]int{"my password is hunter2/0": 0, "trip one/0": 1, "trip one/1": 0,
		"trip approved/0": 1, "trip approved/1": 0} {
		s.mu.Lock()
		n := s.asked[key]
		s.mu.Unlock()
		if n != want {
			t.Errorf("model turn %s was asked %d times, want %d", key, n, want)
		}
	}
	if got, want := sideEffects(t, filepath.Join(dir, "fx.log")), []string{"note_secret1", "guarded"}; !slices.Equal(got, want) {
		t.Errorf("side effects %q, want %q", got, want)
	}

	// The threads: each ends with its tripwire.
	threads := threadsByPrompt(t, ctx, dir)
	for p := range lines {
		if te, ok := loop.StoppedBy(threads[p]); !ok || te.Guard == "" {
			t.Errorf("thread %q does not end with a tripwire:%s", p, showTurns(threads[p]))
		}
	}
	// The twins, in process: the same line, and (one call at a time) the
	// same thread.
	for _, p := range []string{"my password is hunter2", "trip one"} {
		if got := tripLine(start(t, ctx, twin, bin, "run", p), "twin "+p); got != lines[p] {
			t.Errorf("%q: on Temporal %q, in process %q", p, lines[p], got)
		}
	}
	paused = start(t, ctx, twin, bin, "run", "trip approved")
	if code := paused.wait(t); code != 3 {
		t.Fatalf("twin: exit %d, want 3\n%s", code, paused.stderr)
	}
	if got := tripLine(start(t, ctx, twin, bin, resumeArgs(t, paused.stderr.String())...), "twin lode resume"); got != lines["trip approved"] {
		t.Errorf("trip approved: on Temporal %q, in process %q", lines["trip approved"], got)
	}
	twins := threadsByPrompt(t, ctx, twin)
	for _, p := range []string{"my password is hunter2", "trip one", "trip approved"} {
		sameTurns(t, threads[p], twins[p])
	}

	if err := w.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	w.wait(t)
}

// killedWhen says, from the run's history, whether the worker died before
// the call's activity reported that it stored the tripwire (another
// worker then recorded the call's end with lode.Interrupt, which found
// the tripwire) or after.
func killedWhen(t *testing.T, ctx context.Context, addr, thread string) string {
	t.Helper()
	c, err := client.Dial(client.Options{HostPort: addr, Logger: log.NewStructuredLogger(slog.New(slog.DiscardHandler))})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	it := c.GetWorkflowHistory(ctx, lt.WorkflowID(thread), "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	for it.HasNext() {
		ev, err := it.Next()
		if err != nil {
			t.Fatal(err)
		}
		if a := ev.GetActivityTaskScheduledEventAttributes(); a != nil && a.GetActivityType().GetName() == lt.InterruptName {
			return "the worker died before its call activity reported; the next worker's lode.Interrupt found the tripwire"
		}
	}
	return "the call activity reported before its worker died; the next worker ended the run"
}
