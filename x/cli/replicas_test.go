package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httptrace"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/lodeworks/lode/internal/pgtest"
	"github.com/lodeworks/lode/ledger"
	"github.com/lodeworks/lode/loop"
	xstore "github.com/lodeworks/lode/x/store"
)

// replica is one lode web process.
type replica struct {
	name string
	cmd  *exec.Cmd
	url  string // http://127.0.0.1:PORT
	err  *watched
}

// startReplica runs lode web as a process of its own with the
// configuration cfg and the model at model.
func startReplica(t *testing.T, name, cfg, model string) *replica {
	t.Helper()
	cmd, _, _, stderr := lodeProcess(t, nil, "web", "--config", cfg, "--addr", "127.0.0.1:0", "--base-url", model+"/v1", "--model", "m")
	stderr.waitFor(t, "chat at http://", 1)
	stderr.waitFor(t, "/\n", 1)
	m := regexp.MustCompile(`chat at (http://\S+)/\n`).FindStringSubmatch(stderr.String())
	if m == nil {
		t.Fatalf("lode web %s said:\n%s", name, stderr.String())
	}
	return &replica{name: name, cmd: cmd, url: m[1], err: stderr}
}

// kill ends the process with SIGKILL and waits for it.
func (r *replica) kill(t *testing.T) {
	t.Helper()
	if err := r.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	if code := waitProcess(t, r.cmd, r.err); code != -1 {
		t.Fatalf("lode web %s was not killed: exit %d", r.name, code)
	}
}

// call sends a request to the replica and reads the whole answer.
func (r *replica) call(t *testing.T, method, path string, body any) (int, http.Header, string) {
	t.Helper()
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = strings.NewReader(string(b))
	}
	req, _ := http.NewRequest(method, r.url+path, rd)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s on %s: %v", method, path, r.name, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, string(b)
}

func userMessage(thread, text string) map[string]any {
	return map[string]any{"id": thread, "messages": []any{map[string]any{"id": "m" + text, "role": "user", "parts": []any{map[string]any{"type": "text", "text": text}}}}}
}

// running is what GET /api/threads/ID says of the thread.
func (r *replica) running(t *testing.T, thread string) bool {
	t.Helper()
	code, _, body := r.call(t, "GET", "/api/threads/"+thread, nil)
	var v struct{ Running bool }
	if code != 200 || json.Unmarshal([]byte(body), &v) != nil {
		t.Fatalf("GET thread on %s: %d %s", r.name, code, body)
	}
	return v.Running
}

// sendOnceFree posts text to the thread until the replica takes it: it
// answers 409 while another process's lease on the thread is live.
func (r *replica) sendOnceFree(t *testing.T, thread, text string) string {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		code, _, body := r.call(t, "POST", "/api/chat", userMessage(thread, text))
		if code == 200 {
			return body
		}
		if code != http.StatusConflict || !strings.Contains(body, "on another server") || time.Now().After(deadline) {
			t.Fatalf("POST on %s: %d %s", r.name, code, body)
		}
		time.Sleep(50 * time.Millisecond) // the dead process's lease lapses in its own time
	}
}

// Two lode web processes over one PostgreSQL database serve one
// conversation: a message on A and the next on B; a call paused on A and
// approved on B runs once, and A refuses meanwhile; B killed inside the
// call, A goes on once B's lease lapses, the call answered as interrupted;
// A killed while the model streams, a new B goes on.
func TestWebReplicasOverPostgres(t *testing.T) {
	dsn := pgtest.Shared(t).NewDatabase(t)
	sandbox := t.TempDir()
	fifo := filepath.Join(sandbox, "inside")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	dir := writeConfig(t, fmt.Sprintf("store: %s\nlease: 3s\ntools:\n  bash: {dir: %q}\n", dsn, sandbox))
	cfg := filepath.Join(dir, "lode.yaml")
	streaming := make(chan struct{})
	fake := &fakeOpenAI{replies: []func(http.ResponseWriter, *http.Request){
		textReply("Hello from A."),
		textReply("Still here, on B."),
		callReply("call_1", "bash__run", `{"command":"echo ran >> ran.log; echo in > inside; sleep 20"}`),
		textReply("Back on A."),
		stallReply(streaming),
		textReply("Continued on B."),
	}}
	model := httptest.NewServer(fake)
	defer model.Close()
	a := startReplica(t, "A", cfg, model.URL)
	b := startReplica(t, "B", cfg, model.URL)
	if !strings.Contains(a.err.String(), "threads in "+dsn+",") {
		t.Fatalf("lode web said:\n%s", a.err.String())
	}

	// A message on A, the next on B: B's request carries A's turns.
	code, hdr, body := a.call(t, "POST", "/api/chat", userMessage("", "hi"))
	thread := hdr.Get("X-Lode-Thread")
	if code != 200 || thread == "" || !strings.Contains(body, "Hello from A.") {
		t.Fatalf("first message on A: %d %q", code, body)
	}
	code, _, body = b.call(t, "POST", "/api/chat", userMessage(thread, "second"))
	if code != 200 || !strings.Contains(body, "Still here, on B.") {
		t.Fatalf("second message on B: %d %q", code, body)
	}
	if got := strings.Join(requestTexts(t, fake, 1), "|"); got != "hi|Hello from A.|second" {
		t.Fatalf("B asked the model with %q", got)
	}

	// A call that needs approval pauses on A; B approves it and runs it.
	code, _, body = a.call(t, "POST", "/api/chat", userMessage(thread, "clean up"))
	if code != 200 || !strings.Contains(body, `"tool-approval-request"`) {
		t.Fatalf("third message on A: %d %q", code, body)
	}
	decided := make(chan string, 1)
	go func() {
		req, _ := http.NewRequest("POST", b.url+"/api/threads/"+thread+"/decide", strings.NewReader(`{"decisions":[{"id":"call_1","approve":true}]}`))
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			decided <- err.Error()
			return
		}
		b, _ := io.ReadAll(resp.Body) // ends when B is killed
		resp.Body.Close()
		decided <- fmt.Sprint(resp.StatusCode, " ", string(b))
	}()
	inside := make(chan error, 1)
	go func() {
		// Opening blocks until the command writes; reading to the end lets
		// its echo finish (a reader gone first would kill the shell with
		// SIGPIPE).
		f, err := os.Open(fifo)
		if err == nil {
			_, err = io.ReadAll(f)
			f.Close()
		}
		inside <- err
	}()
	select {
	case err := <-inside:
		if err != nil {
			t.Fatal(err)
		}
	case got := <-decided:
		t.Fatalf("the decision on B ended before the command ran: %s\nB said:\n%s", got, b.err.String())
	case <-time.After(60 * time.Second):
		t.Fatalf("the command never started; B said:\n%s", b.err.String())
	}
	if !a.running(t, thread) {
		t.Fatal("A does not show the thread running on B")
	}
	code, _, body = a.call(t, "POST", "/api/threads/"+thread+"/decide", map[string]any{"decisions": []any{map[string]any{"id": "call_1", "approve": true}}})
	if code != http.StatusConflict || !strings.HasPrefix(body, fmt.Sprintf("web: a turn is running on thread %q on another server (web/", thread)) {
		t.Fatalf("the same decision on A: %d %q", code, body)
	}
	code, _, body = a.call(t, "POST", "/api/chat", userMessage(thread, "too soon"))
	if code != http.StatusConflict || !strings.Contains(body, "wait for it to end, or follow it with GET /api/chat/"+thread+"/stream") {
		t.Fatalf("a message on A meanwhile: %d %q\nA said:\n%s\nB said:\n%s", code, body, a.err.String(), b.err.String())
	}

	// A follows B's turn; B dies inside the call; A goes on.
	followed := make(chan int, 1)
	asked := make(chan struct{})
	go func() {
		// B is killed once the request is on A's socket: A then has the
		// lease's 3s, from the kill, to find the turn running elsewhere.
		trace := &httptrace.ClientTrace{WroteRequest: func(httptrace.WroteRequestInfo) { close(asked) }}
		req, _ := http.NewRequestWithContext(httptrace.WithClientTrace(context.Background(), trace), http.MethodGet, a.url+"/api/chat/"+thread+"/stream", nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			followed <- -1
			return
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		followed <- resp.StatusCode
	}()
	select {
	case <-asked:
	case got := <-followed:
		t.Fatalf("following B's turn from A failed before it was asked: %d", got)
	}
	b.kill(t)
	<-decided
	body = a.sendOnceFree(t, thread, "are you there?")
	if !strings.Contains(body, "Back on A.") {
		t.Fatalf("A after B died: %q", body)
	}
	if got := <-followed; got != 200 {
		t.Fatalf("following B's turn from A answered %d", got)
	}
	texts := requestTexts(t, fake, 3)
	if n := len(texts); n < 2 || texts[n-2] != loop.InterruptedMessage || texts[n-1] != "are you there?" {
		t.Fatalf("A asked the model with %q", texts)
	}
	if log, _ := os.ReadFile(filepath.Join(sandbox, "ran.log")); string(log) != "ran\n" {
		t.Fatalf("the approved command ran %q", log)
	}

	// A dies while the model streams; a new B goes on.
	b = startReplica(t, "B2", cfg, model.URL)
	go func() {
		b, _ := json.Marshal(userMessage(thread, "think"))
		if resp, err := http.Post(a.url+"/api/chat", "application/json", strings.NewReader(string(b))); err == nil {
			io.Copy(io.Discard, resp.Body) // ends when A is killed
			resp.Body.Close()
		}
	}()
	<-streaming
	if !b.running(t, thread) {
		t.Fatal("B does not show the thread running on A")
	}
	a.kill(t)
	body = b.sendOnceFree(t, thread, "go on")
	if !strings.Contains(body, "Continued on B.") {
		t.Fatalf("B after A died: %q", body)
	}
	texts = requestTexts(t, fake, 5)
	if n := len(texts); n < 2 || texts[n-2] != "think" || texts[n-1] != "go on" {
		t.Fatalf("B asked the model with %q", texts)
	}

	// The store says the same: no lease left, every turn kept once.
	s, err := xstore.Open(context.Background(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	st, err := s.Load(context.Background(), thread)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if l, _ := st.Lease(); l.Owner != "" {
		t.Fatalf("a lease is left: %+v", l)
	}
	if res := resultFor(st, "call_1"); len(res) != 1 || res[0].Content != loop.InterruptedMessage {
		t.Fatalf("call_1's results: %+v", res)
	}
	users := 0
	for _, tr := range st.Turns() {
		if tr.Role == ledger.RoleUser {
			users++
		}
	}
	if users != 6 {
		t.Fatalf("%d user turns stored, want 6 (no refused message kept)", users)
	}
}
