package mcp_test

import (
	"context"
	"errors"
	"io"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/lodeworks/lode/artifact"
	"github.com/lodeworks/lode/tool"
	xtool "github.com/lodeworks/lode/x/tool"
	"github.com/lodeworks/lode/x/tool/mcp"
)

// newFake returns a client of the raw fake server, closed with the test.
func newFake(t *testing.T, extra []mcp.Option, quirks ...string) *mcp.Client {
	t.Helper()
	cmd, args, env := fakeCommand(t, quirks...)
	opts := append([]mcp.Option{mcp.WithName("fake"), mcp.WithStdio(cmd, args...), mcp.WithEnv(env...)}, extra...)
	c, err := mcp.NewClient(opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

func callText(t *testing.T, c *mcp.Client, name string, args map[string]any) string {
	t.Helper()
	v, err := c.Call(context.Background(), name, args)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	r := v.(*tool.Result)
	if r.IsError {
		t.Fatalf("%s: error result %q", name, r.Content)
	}
	return r.Content
}

func TestFakeNotificationBeforeInitializeReply(t *testing.T) {
	c := newFake(t, nil, "early")
	if err := c.Connect(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := callText(t, c, "echo", map[string]any{"text": "hi"}); got != "hi" {
		t.Fatalf("echo = %q", got)
	}
}

func TestFakeResponsesOutOfOrder(t *testing.T) {
	c := newFake(t, nil)
	var wg sync.WaitGroup
	got := make([]string, 2)
	for i := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			v, err := c.Call(context.Background(), "pair", map[string]any{"n": i + 1})
			if err != nil {
				t.Error(err)
				return
			}
			got[i] = v.(*tool.Result).Content
		}()
	}
	wg.Wait()
	if got[0] != "1" || got[1] != "2" {
		t.Fatalf("answers crossed: call 1 got %q, call 2 got %q", got[0], got[1])
	}
}

func TestFakeExitMidCallThenReconnect(t *testing.T) {
	c := newFake(t, nil)
	reg := tool.NewRegistry(tool.WithMCPServer(c))
	if err := reg.Err(); err != nil {
		t.Fatal(err)
	}
	h := xtool.NewHandler(reg)
	first := h.Execute(context.Background(), artifact.ToolCall{ID: "1", Name: "fake__pid"})
	res := h.Execute(context.Background(), artifact.ToolCall{ID: "2", Name: "fake__crash"})
	if !res.IsError || !strings.Contains(res.Content, "connection to the server was lost") {
		t.Fatalf("crash: got %+v, want an error result saying the connection was lost", res)
	}
	second := h.Execute(context.Background(), artifact.ToolCall{ID: "3", Name: "fake__pid"})
	if first.IsError || second.IsError {
		t.Fatalf("pid calls failed: %q, %q", first.Content, second.Content)
	}
	if first.Content == second.Content {
		t.Fatalf("the server was not restarted: pid %s both times", first.Content)
	}
	var direct error
	if _, direct = c.Call(context.Background(), "crash", nil); !errors.Is(direct, mcp.ErrConnectionLost) {
		t.Fatalf("Call(crash) error = %v, want ErrConnectionLost", direct)
	}
}

// A call that times out is followed by a ping. A server that answers it
// (only the tool is slow) keeps its session; one that does not (the whole
// server hangs) is replaced, and the next call starts the server afresh
// instead of queuing behind the hung one.
func TestFakeHangTimesOut(t *testing.T) {
	cases := []struct {
		name, tool, quirk string
		want              string
		kept              bool
	}{
		{"hang", "hang", "", `the tool fake__hang failed: mcp: server "fake": tools/call "hang": no answer within 1s; the server still answers pings, so the session was kept: mcp: server did not answer in time`, true},
		// Revisions without ping: "method not found" is an answer too.
		{"hang, no ping method", "hang", "noping", `the tool fake__hang failed: mcp: server "fake": tools/call "hang": no answer within 1s; the server still answers pings, so the session was kept: mcp: server did not answer in time`, true},
		{"freeze", "freeze", "", `the tool fake__freeze failed: mcp: server "fake": tools/call "freeze": no answer within 1s; the session was dropped and the next call reconnects: mcp: server did not answer in time`, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			defer goleak.VerifyNone(t, append(leakOptions(), goleak.IgnoreCurrent())...)
			// Long enough to start the server again under the race detector.
			c := newFake(t, []mcp.Option{mcp.WithCallTimeout(time.Second), mcp.WithPingTimeout(time.Second)}, tc.quirk)
			if err := c.Connect(context.Background()); err != nil {
				t.Fatal(err)
			}
			reg := tool.NewRegistry(tool.WithMCPServer(c))
			h := xtool.NewHandler(reg)
			pid := callText(t, c, "pid", nil)
			res := h.Execute(context.Background(), artifact.ToolCall{ID: "1", Name: "fake__" + tc.tool})
			if !res.IsError || res.Content != tc.want {
				t.Fatalf("%s: got %q (error %v), want %q", tc.tool, res.Content, res.IsError, tc.want)
			}
			if again := callText(t, c, "pid", nil); (again == pid) != tc.kept {
				t.Fatalf("after the timeout: pid %s, before %s; want the session kept: %v", again, pid, tc.kept)
			}
			if got := callText(t, c, "echo", map[string]any{"text": "still here"}); got != "still here" {
				t.Fatalf("echo after %s = %q", tc.tool, got)
			}
			_, err := c.Call(context.Background(), tc.tool, nil)
			if !errors.Is(err, mcp.ErrTimeout) {
				t.Fatalf("Call(%s) = %v, want ErrTimeout", tc.tool, err)
			}
			if err := c.Close(); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// WithPingTimeout(-1) sends no ping: the session of a slow tool is
// replaced at once.
func TestFakeHangNoPing(t *testing.T) {
	c := newFake(t, []mcp.Option{mcp.WithCallTimeout(time.Second), mcp.WithPingTimeout(-1)})
	pid := callText(t, c, "pid", nil)
	_, err := c.Call(context.Background(), "hang", nil)
	want := `mcp: server "fake": tools/call "hang": no answer within 1s; the session was dropped and the next call reconnects: mcp: server did not answer in time`
	if err == nil || err.Error() != want {
		t.Fatalf("Call(hang) = %v, want %q", err, want)
	}
	if again := callText(t, c, "pid", nil); again == pid {
		t.Fatalf("the session was kept (pid %s)", pid)
	}
}

// A caller's deadline on a hung server drops the session as the call
// timeout does, and the calls still waiting on the session end at once,
// saying why, rather than waiting on a server that stopped answering.
func TestFakeDeadlineDropsTheSessionAndItsOtherCalls(t *testing.T) {
	defer goleak.VerifyNone(t, append(leakOptions(), goleak.IgnoreCurrent())...)
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	// No call timeout: only the drop can end the first call.
	c := newFake(t, []mcp.Option{mcp.WithCallTimeout(-1), mcp.WithPingTimeout(time.Second), mcp.WithStderr(w)})
	reg := tool.NewRegistry(tool.WithMCPServer(c))
	h := xtool.NewHandler(reg)
	pid := callText(t, c, "pid", nil)
	waiting := make(chan artifact.ToolResult, 1)
	go func() {
		waiting <- h.Execute(context.Background(), artifact.ToolCall{ID: "1", Name: "fake__freeze"})
	}()
	line := make([]byte, len("freeze received\n"))
	if _, err := io.ReadFull(r, line); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	_, err = c.Call(ctx, "pair", map[string]any{"n": 1})
	want := `mcp: server "fake": tools/call "pair": no answer before the caller's deadline; the session was dropped and the next call reconnects: context deadline exceeded`
	if err == nil || err.Error() != want || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Call(pair) = %v, want %q", err, want)
	}
	res := <-waiting
	wantRes := `the tool fake__freeze failed: mcp: server "fake": tools/call "freeze": abandoned, the session was dropped because tools/call "pair" got no answer before the caller's deadline; the next call reconnects: mcp: server did not answer in time`
	if !res.IsError || res.Content != wantRes {
		t.Fatalf("the waiting call: got %q (error %v), want %q", res.Content, res.IsError, wantRes)
	}
	if again := callText(t, c, "pid", nil); again == pid {
		t.Fatalf("the call after the drop went to the same server (pid %s)", pid)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
}

// A caller that cancels its call keeps the session.
func TestFakeCancelKeepsTheSession(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	c := newFake(t, []mcp.Option{mcp.WithStderr(w)})
	pid := callText(t, c, "pid", nil)
	ctx, cancel := context.WithCancel(context.Background())
	called := make(chan error, 1)
	go func() {
		_, err := c.Call(ctx, "hang", nil)
		called <- err
	}()
	line := make([]byte, len("hang received\n"))
	if _, err := io.ReadFull(r, line); err != nil {
		t.Fatal(err)
	}
	cancel()
	if err := <-called; err == nil || err.Error() != `mcp: server "fake": tools/call "hang": context canceled` {
		t.Fatalf("cancelled Call = %v", err)
	}
	if again := callText(t, c, "pid", nil); again != pid {
		t.Fatalf("a cancelled call restarted the server: pid %s then %s", pid, again)
	}
}

func TestFakeProtocolErrorKeepsSession(t *testing.T) {
	c := newFake(t, nil)
	pid := callText(t, c, "pid", nil)
	_, err := c.Call(context.Background(), "nope", nil)
	want := `mcp: server "fake" refused tools/call "nope": unknown tool nope (JSON-RPC error -32602)`
	if err == nil || !strings.HasPrefix(err.Error(), want) {
		t.Fatalf("err = %v, want prefix %q", err, want)
	}
	if got := callText(t, c, "pid", nil); got != pid {
		t.Fatalf("a refused call restarted the server: pid %s then %s", pid, got)
	}
}

func TestStdioCommandMissing(t *testing.T) {
	c, err := mcp.NewClient(mcp.WithName("ghost"), mcp.WithStdio("/nonexistent/mcp-server"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_, err = c.Tools(context.Background())
	if err == nil || !strings.Contains(err.Error(), `mcp: server "ghost"`) || !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("err = %v, want a not-exist error naming the server", err)
	}
	reg := tool.NewRegistry(tool.WithMCPServer(c))
	if reg.Err() == nil || !strings.Contains(reg.Err().Error(), `source "ghost"`) {
		t.Fatalf("registry error = %v", reg.Err())
	}
}

func TestClientUseAfterClose(t *testing.T) {
	c := newFake(t, nil)
	callText(t, c, "pid", nil)
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if err := c.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	if _, err := c.Call(context.Background(), "pid", nil); !errors.Is(err, mcp.ErrClosed) {
		t.Fatalf("Call after Close = %v, want ErrClosed", err)
	}
	if _, err := c.Tools(context.Background()); !errors.Is(err, mcp.ErrClosed) {
		t.Fatalf("Tools after Close = %v, want ErrClosed", err)
	}
}

// Close stops the server and every process it started, and the client's
// goroutines. The fake and the child it spawns share a stderr pipe; the
// pipe reaches EOF only once both are gone.
func TestCloseEndsEverything(t *testing.T) {
	defer goleak.VerifyNone(t, append(leakOptions(), goleak.IgnoreCurrent())...)
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	cmd, args, env := fakeCommand(t)
	c, err := mcp.NewClient(mcp.WithName("fake"), mcp.WithStdio(cmd, args...), mcp.WithEnv(env...), mcp.WithStderr(w))
	if err != nil {
		t.Fatal(err)
	}
	child, err := strconv.Atoi(callText(t, c, "spawn", nil))
	if err != nil || child <= 0 {
		t.Fatalf("spawn answered %v", err)
	}
	w.Close() // the fake and its child hold their own copies
	eof := make(chan error, 1)
	go func() {
		_, err := io.Copy(io.Discard, r)
		eof <- err
	}()
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-eof:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("process %d, started by the server, still runs after Close", child)
	}
}

// Close cancels a connection attempt in flight and stops the process it
// started.
func TestCloseDuringConnect(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	cmd, args, env := fakeCommand(t, "mute")
	c, err := mcp.NewClient(mcp.WithName("mute"), mcp.WithStdio(cmd, args...), mcp.WithEnv(env...), mcp.WithStderr(w))
	if err != nil {
		t.Fatal(err)
	}
	connected := make(chan error, 1)
	go func() { connected <- c.Connect(context.Background()) }()
	line := make([]byte, len("initialize received\n"))
	if _, err := io.ReadFull(r, line); err != nil {
		t.Fatal(err)
	}
	w.Close()
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if err := <-connected; !errors.Is(err, mcp.ErrClosed) {
		t.Fatalf("Connect = %v, want ErrClosed", err)
	}
	if rest, err := io.ReadAll(r); err != nil || len(rest) != 0 {
		t.Fatalf("after Close: %q, %v", rest, err)
	}
}

// A call in flight when the client is closed ends with ErrClosed.
func TestCloseDuringCall(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	cmd, args, env := fakeCommand(t)
	c, err := mcp.NewClient(mcp.WithName("fake"), mcp.WithStdio(cmd, args...), mcp.WithEnv(env...), mcp.WithStderr(w))
	if err != nil {
		t.Fatal(err)
	}
	called := make(chan error, 1)
	go func() {
		_, err := c.Call(context.Background(), "hang", nil)
		called <- err
	}()
	line := make([]byte, len("hang received\n"))
	if _, err := io.ReadFull(r, line); err != nil {
		t.Fatal(err)
	}
	w.Close()
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if err := <-called; !errors.Is(err, mcp.ErrClosed) {
		t.Fatalf("Call = %v, want ErrClosed", err)
	}
}

func TestStdioDirAndEnv(t *testing.T) {
	dir := t.TempDir()
	c := newFake(t, []mcp.Option{mcp.WithDir(dir), mcp.WithEnv("FAKE_EXTRA=set")})
	if got := callText(t, c, "cwd", nil); got != dir+" set" {
		t.Fatalf("cwd = %q, want %q", got, dir+" set")
	}
}

func TestStdioServersDoNotInheritSecrets(t *testing.T) {
	t.Setenv("LODE_TEST_SECRET_KEY", "hunter2")
	path := os.Getenv("PATH")
	cases := []struct {
		name   string
		opts   []mcp.Option
		secret string
	}{
		{"default", nil, "LODE_TEST_SECRET_KEY unset"},
		{"parent env", []mcp.Option{mcp.WithParentEnv()}, "LODE_TEST_SECRET_KEY=hunter2"},
		{"given explicitly", []mcp.Option{mcp.WithEnv("LODE_TEST_SECRET_KEY=for-this-server")}, "LODE_TEST_SECRET_KEY=for-this-server"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cl := newFake(t, c.opts)
			if got := callText(t, cl, "getenv", map[string]any{"name": "LODE_TEST_SECRET_KEY"}); got != c.secret {
				t.Fatalf("server sees %q, want %q", got, c.secret)
			}
			if got := callText(t, cl, "getenv", map[string]any{"name": "PATH"}); got != "PATH="+path {
				t.Fatalf("server sees %q, want PATH inherited", got)
			}
		})
	}
}
