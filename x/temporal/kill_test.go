package temporal_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/lodeworks/lode/artifact"
	"github.com/lodeworks/lode/ledger"
	"github.com/lodeworks/lode/ledger/file"
)

// stage is one model server and tool witness for TestRealServerKills: an
// OpenAI-compatible model that plays answers chosen by the prompt and how
// many answers the request carries, and the endpoints fx's work tool
// calls. A point armed with at is reached once: "model:KEY" holds the
// model's reply to request KEY (prompt/answers) and "begin:TOKEN" holds
// work's start, both until release or until the caller goes (its worker
// died), and "done:TOKEN" holds work just after its work was done and
// kept; "sent:KEY" is reached just after the reply to KEY was sent.
type stage struct {
	mu      sync.Mutex
	points  map[string]chan struct{}
	release chan struct{}
	stamps  []stamp
	ends    map[string]int
	asked   map[string]int
}

type stamp struct {
	what string
	at   time.Time
}

// answers: prompt -> the calls of each answer; past the end the answer
// is "done: " and the last tool result.
var answers = map[string][][]artifact.ToolCall{
	"stream":   {{{ID: "call_s1", Name: "fx__work", Arguments: `{"token":"s1"}`}}},
	"answer":   {{{ID: "call_a1", Name: "fx__work", Arguments: `{"token":"a1"}`}, {ID: "call_a2", Name: "fx__guarded", Arguments: `{}`}}},
	"tool":     {{{ID: "call_t1", Name: "fx__work", Arguments: `{"token":"t1"}`}}},
	"between":  {{{ID: "call_b1", Name: "fx__work", Arguments: `{"token":"b1"}`}}, {{ID: "call_b2", Name: "fx__work", Arguments: `{"token":"b2"}`}}},
	"approval": {{{ID: "call_g1", Name: "fx__guarded", Arguments: `{}`}}},
	// TestRealServerGuards's plans, whose results a guard stops.
	"trip one":      {{{ID: "call_n1", Name: "fx__note", Arguments: `{"text":"secret1"}`}}},
	"trip approved": {{{ID: "call_g2", Name: "fx__guarded", Arguments: `{}`}}},
}

func newStage() *stage {
	return &stage{points: map[string]chan struct{}{}, release: make(chan struct{}), ends: map[string]int{}, asked: map[string]int{}}
}

// at arms point; the channel closes when it is reached.
func (s *stage) at(point string) <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	ch := make(chan struct{})
	s.points[point] = ch
	return ch
}

// free lets every held request go, and arms a new release for the next.
func (s *stage) free() {
	s.mu.Lock()
	defer s.mu.Unlock()
	close(s.release)
	s.release = make(chan struct{})
}

// reach records what happened, and reports whether it was an armed
// point, and the release that frees it.
func (s *stage) reach(point string) (bool, chan struct{}) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.stamps = append(s.stamps, stamp{point, time.Now()})
	ch, ok := s.points[point]
	if ok {
		delete(s.points, point)
		close(ch)
	}
	return ok, s.release
}

// after is the first thing that happened after t, and when.
func (s *stage) after(t time.Time) stamp {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, st := range s.stamps {
		if st.at.After(t) {
			return st
		}
	}
	return stamp{}
}

func (s *stage) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if tok := r.URL.Query().Get("token"); strings.HasPrefix(r.URL.Path, "/fx/") {
		switch what := strings.TrimPrefix(r.URL.Path, "/fx/"); what {
		case "begin":
			if held, release := s.reach("begin:" + tok); held {
				select {
				case <-release:
				case <-r.Context().Done():
					return
				}
			}
		case "end":
			s.mu.Lock()
			s.ends[tok]++
			s.mu.Unlock()
			s.reach("end:" + tok)
		case "done":
			if held, release := s.reach("done:" + tok); held {
				select {
				case <-release:
				case <-r.Context().Done():
					return
				}
			}
		}
		w.WriteHeader(http.StatusOK)
		return
	}
	var req struct {
		Messages []struct {
			Role      string          `json:"role"`
			Content   string          `json:"content"`
			ToolCalls json.RawMessage `json:"tool_calls"`
		} `json:"messages"`
	}
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	prompt, n, last := "", 0, ""
	for _, msg := range req.Messages {
		switch msg.Role {
		case "user":
			prompt = msg.Content
		case "assistant":
			n++
		case "tool":
			last = msg.Content
		}
	}
	key := fmt.Sprintf("%s/%d", prompt, n)
	s.mu.Lock()
	s.asked[key]++
	s.mu.Unlock()
	if held, release := s.reach("model:" + key); held {
		select {
		case <-release:
		case <-r.Context().Done():
			return
		}
	}
	message := map[string]any{"role": "assistant", "content": "done: " + last}
	finish := "stop"
	if plays := answers[prompt]; n < len(plays) {
		var calls []map[string]any
		for _, c := range plays[n] {
			calls = append(calls, map[string]any{"id": c.ID, "type": "function", "function": map[string]any{"name": c.Name, "arguments": c.Arguments}})
		}
		message = map[string]any{"role": "assistant", "content": nil, "tool_calls": calls}
		finish = "tool_calls"
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{
		"id": "chatcmpl-1", "object": "chat.completion", "created": 1, "model": "scripted",
		"choices": []map[string]any{{"index": 0, "message": message, "finish_reason": finish}},
		"usage":   map[string]any{"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
	})
	if f, ok := w.(http.Flusher); ok {
		f.Flush()
	}
	s.reach("sent:" + key)
}

// resumeArgs finds, in a paused lode run's stderr, the lode resume command
// that approves its calls.
func resumeArgs(t *testing.T, stderr string) []string {
	t.Helper()
	var args []string
	var approvals []string
	for _, line := range strings.Split(stderr, "\n") {
		w := strings.Fields(line)
		if len(w) > 2 && w[0] == "lode" && w[1] == "resume" && strings.HasPrefix(w[len(w)-1], "approve:") {
			args = w[1 : len(w)-1]
			approvals = append(approvals, w[len(w)-1])
		}
	}
	if args == nil {
		t.Fatalf("no lode resume command among\n%s", stderr)
	}
	return append(args, approvals...)
}

// finish waits for a lode run (or resume) and, while it pauses for
// approval, approves with lode resume, until the run ends; it returns how
// many times it approved.
func finish(t *testing.T, ctx context.Context, dir, bin string, p *proc, what string) int {
	t.Helper()
	approved := 0
	for {
		switch code := p.wait(t); code {
		case 0:
			return approved
		case 3:
			approved++
			p = start(t, ctx, dir, bin, resumeArgs(t, p.stderr.String())...)
		default:
			t.Fatalf("%s: exit %d\nstdout %s\nstderr %s", what, code, p.stdout, p.stderr)
		}
	}
}

// threadsByPrompt reads every thread of the store in dir/threads, by the
// text of its first user turn.
func threadsByPrompt(t *testing.T, ctx context.Context, dir string) map[string][]ledger.Turn {
	t.Helper()
	store, err := file.Open(filepath.Join(dir, "threads"))
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	out := map[string][]ledger.Turn{}
	for info, err := range store.List(ctx) {
		if err != nil {
			t.Fatal(err)
		}
		st, err := store.Load(ctx, info.ID)
		if err != nil {
			t.Fatal(err)
		}
		turns := st.Turns()
		st.Close()
		for _, tr := range turns {
			if tr.Role == ledger.RoleUser {
				out[tr.Artifacts[0].(artifact.Text).Content] = turns
				break
			}
		}
	}
	return out
}

// TestRealServerKills runs five plans on lode worker processes that share
// a store and a task queue, and kills (SIGKILL) the worker at work at a
// different kind of moment in each: inside a model stream, just after an
// answer with a call that needs approval was sent, inside an idempotent
// tool, after a tool did its work and before its result was stored, and
// while the run waits for approval. A fresh worker is started just before
// each kill. Every run finishes; no tool's work is done twice; every call
// that needs approval is asked and runs only once approved; each thread
// equals, turn for turn, what lode run stores for the same plan in
// process. It prints, for each kind of moment, how long the run took to
// move on after the kill: the figures of BENCHMARKS.md.
func TestRealServerKills(t *testing.T) {
	addr := realServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	dir, twin := t.TempDir(), t.TempDir()
	bin := build(t, dir, "./cmd/lode")
	fx := build(t, dir, "./internal/fx")
	s := newStage()
	srv := httptest.NewServer(s)
	defer srv.Close()
	queue := "lode-kill-" + ledger.NewID()[:8]
	config := func(d, fxURL string) {
		cfg := fmt.Sprintf(`model:
  base_url: %s/v1
  name: scripted
  stream: false
store: threads
approve: [fx__guarded]
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
	}
	config(dir, srv.URL)
	config(twin, "")

	// Each kind holds the run at point, where the worker at work is the
	// only one; a fresh worker starts, and the first is killed there, or,
	// with then, let go and killed the moment then is reached.
	kinds := []struct {
		name, prompt, point, then string
	}{
		{"inside a model stream", "stream", "model:stream/0", ""},
		{"just after an answer with a call needing approval", "answer", "model:answer/0", "sent:answer/0"},
		{"inside a tool", "tool", "begin:t1", ""},
		{"after a tool's work, before its result is stored", "between", "done:b1", ""},
		{"while the run waits for approval", "approval", "", ""},
	}
	w := startWorker(t, ctx, dir, bin, addr)
	kill := func() time.Time {
		if err := syscall.Kill(-w.cmd.Process.Pid, syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		killed := time.Now()
		<-w.done
		return killed
	}
	var report []string
	approvals := 0
	for _, k := range kinds {
		var reached <-chan struct{}
		if k.point != "" {
			reached = s.at(k.point)
		}
		run := start(t, ctx, dir, bin, "run", "--temporal", addr, k.prompt)
		var recovered time.Duration
		var next stamp
		if reached != nil {
			select {
			case <-reached:
			case <-run.done:
				t.Fatalf("%s: lode run ended before the moment: %v\n%s", k.name, run.err, run.stderr)
			}
			fresh := startWorker(t, ctx, dir, bin, addr)
			if k.then != "" {
				sent := s.at(k.then)
				s.free()
				<-sent
			}
			killed := kill()
			w = fresh
			s.free()
			approvals += finish(t, ctx, dir, bin, run, k.prompt)
			next = s.after(killed)
			recovered = next.at.Sub(killed)
		} else {
			if code := run.wait(t); code != 3 {
				t.Fatalf("%s: lode run exit %d, want 3 (paused)\n%s", k.name, code, run.stderr)
			}
			fresh := startWorker(t, ctx, dir, bin, addr)
			killed := kill()
			w = fresh
			decide := start(t, ctx, dir, bin, resumeArgs(t, run.stderr.String())...)
			approvals++
			approvals += finish(t, ctx, dir, bin, decide, k.prompt)
			next = s.after(killed)
			recovered = next.at.Sub(killed)
		}
		report = append(report, fmt.Sprintf("%-52s %6.2f s (next: %s)", k.name, recovered.Seconds(), next.what))
	}
	t.Logf("time from the SIGKILL to the run's next step, by kind of moment:\n%s", strings.Join(report, "\n"))

	// No tool's work was done twice, and each was done.
	s.mu.Lock()
	ends := s.ends
	s.mu.Unlock()
	for _, tok := range []string{"s1", "a1", "t1", "b1", "b2"} {
		if n := ends[tok]; n != 1 {
			t.Errorf("work %s was done %d times, want once", tok, n)
		}
	}
	if got := sideEffects(t, filepath.Join(dir, "fx.log")); len(got) != 2 || approvals != 2 {
		t.Errorf("guarded ran %q after %d approvals, want twice after two", got, approvals)
	}

	// The twins, in process.
	for _, k := range kinds {
		run := start(t, ctx, twin, bin, "run", k.prompt)
		finish(t, ctx, twin, bin, run, "twin "+k.prompt)
	}
	got, want := threadsByPrompt(t, ctx, dir), threadsByPrompt(t, ctx, twin)
	prompts := make([]string, 0, len(want))
	for p := range want {
		prompts = append(prompts, p)
	}
	sort.Strings(prompts)
	for _, p := range prompts {
		g, wt := got[p], want[p]
		same := len(g) == len(wt)
		for i := 0; same && i < len(g); i++ {
			same = g[i].Role == wt[i].Role && reflect.DeepEqual(g[i].Artifacts, wt[i].Artifacts)
		}
		if !same {
			t.Errorf("thread %q on Temporal:%s\nin process:%s", p, showTurns(g), showTurns(wt))
		}
		// Every call that needs approval was asked before it ran.
		asked := map[string]bool{}
		for _, tr := range g {
			for _, a := range tr.Artifacts {
				switch x := a.(type) {
				case artifact.Pending:
					asked[x.ToolCallID] = true
				case artifact.ToolResult:
					if x.Name == "fx__guarded" && (!asked[x.ToolCallID] || x.IsError) {
						t.Errorf("thread %q: %s got %q without approval", p, x.ToolCallID, x.Content)
					}
				}
			}
		}
	}
	if err := w.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	w.wait(t)
}

func showTurns(ts []ledger.Turn) string {
	var sb strings.Builder
	for i, tr := range ts {
		fmt.Fprintf(&sb, "\n  %d %s %+v", i, tr.Role, tr.Artifacts)
	}
	return sb.String()
}
