package cli

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/lodeworks/lode/x/provider/openai"
)

// watched is an io.Writer safe for concurrent use whose text a test can
// wait on.
type watched struct {
	mu      sync.Mutex
	b       strings.Builder
	changed chan struct{}
}

func newWatched() *watched { return &watched{changed: make(chan struct{}, 1)} }

func (w *watched) Write(p []byte) (int, error) {
	w.mu.Lock()
	n, err := w.b.Write(p)
	w.mu.Unlock()
	select {
	case w.changed <- struct{}{}:
	default:
	}
	return n, err
}

func (w *watched) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.String()
}

// waitFor waits until s occurs n times in what was written.
func (w *watched) waitFor(t *testing.T, s string, n int) {
	t.Helper()
	deadline := time.NewTimer(30 * time.Second)
	defer deadline.Stop()
	for strings.Count(w.String(), s) < n {
		select {
		case <-w.changed:
		case <-deadline.C:
			t.Fatalf("waited in vain for %d× %q in:\n%s", n, s, w.String())
		}
	}
}

// stallReply streams a first chunk, says so on started, and then keeps the
// stream open until the client goes away.
func stallReply(started chan<- struct{}) func(http.ResponseWriter, *http.Request) {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprintf(w, "data: %s\n\n", chunk(`{"role":"assistant","content":"Thinking very hard"}`, ""))
		w.(http.Flusher).Flush()
		close(started)
		<-r.Context().Done()
	}
}

func TestConfigPrecedence(t *testing.T) {
	file := "model:\n  base_url: http://127.0.0.1:1/file\n  name: file-model\n  api_key_env: FILE_KEY\n  timeout: 10m\n  idle_timeout: 30s\nsystem: from the file\nmax_turns: 3\n"
	cases := []struct {
		name   string
		file   string
		vars   map[string]string
		flags  []string
		want   ModelConfig
		system string
		turns  int
	}{
		{"defaults", "", nil, nil, ModelConfig{APIKeyEnv: "OPENAI_API_KEY", keyEnvDefault: true, IdleTimeout: Duration(openai.DefaultIdleTimeout)}, "", 20},
		{"the file", file, nil, nil, ModelConfig{BaseURL: "http://127.0.0.1:1/file", Name: "file-model", APIKeyEnv: "FILE_KEY", Timeout: Duration(10 * time.Minute), IdleTimeout: Duration(30 * time.Second)}, "from the file", 3},
		{"the environment over the file", file, map[string]string{"OPENAI_BASE_URL": "http://127.0.0.1:1/env", "LODE_MODEL": "env-model"}, nil,
			ModelConfig{BaseURL: "http://127.0.0.1:1/env", Name: "env-model", APIKeyEnv: "FILE_KEY", Timeout: Duration(10 * time.Minute), IdleTimeout: Duration(30 * time.Second)}, "from the file", 3},
		{"flags over the environment", file, map[string]string{"OPENAI_BASE_URL": "http://127.0.0.1:1/env", "LODE_MODEL": "env-model"},
			[]string{"--base-url", "http://127.0.0.1:1/flag", "--model", "flag-model", "--system", "from a flag", "--max-turns", "7", "--timeout", "1m", "--idle-timeout", "5s"},
			ModelConfig{BaseURL: "http://127.0.0.1:1/flag", Name: "flag-model", APIKeyEnv: "FILE_KEY", Timeout: Duration(time.Minute), IdleTimeout: Duration(5 * time.Second)}, "from a flag", 7},
		{"flags at zero leave the file's values", file, nil, []string{"--max-turns", "0", "--timeout", "0", "--idle-timeout", "0"},
			ModelConfig{BaseURL: "http://127.0.0.1:1/file", Name: "file-model", APIKeyEnv: "FILE_KEY", Timeout: Duration(10 * time.Minute), IdleTimeout: Duration(30 * time.Second)}, "from the file", 3},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			if tc.file != "" {
				dir = writeConfig(t, tc.file)
			}
			t.Chdir(dir)
			fs := flag.NewFlagSet("lode run", flag.ContinueOnError)
			var o options
			o.register(fs)
			if err := fs.Parse(tc.flags); err != nil {
				t.Fatal(err)
			}
			cfg, err := o.load(env{getenv: func(k string) string { return tc.vars[k] }})
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(cfg.Model, tc.want) || cfg.System != tc.system || cfg.MaxTurns != tc.turns {
				t.Errorf("model %+v system %q max turns %d", cfg.Model, cfg.System, cfg.MaxTurns)
			}
		})
	}
}

func TestEnvironmentOverridesTheFileEndToEnd(t *testing.T) {
	fake := &fakeOpenAI{replies: []func(http.ResponseWriter, *http.Request){textReply("from the env server")}}
	srv := httptest.NewServer(fake)
	defer srv.Close()
	dir := writeConfig(t, "model:\n  base_url: http://127.0.0.1:1/v1\n  name: m\n")
	r := lode(t, dir, map[string]string{"OPENAI_BASE_URL": srv.URL + "/v1"}, "", "run", "hi")
	if r.code != 0 || r.stdout != "from the env server\n" {
		t.Fatalf("exit %d stdout %q stderr %q", r.code, r.stdout, r.stderr)
	}
}

func TestKeyComesFromAPIKeyEnvOnly(t *testing.T) {
	// The provider must not fall back to the process's OPENAI_API_KEY
	// when the configuration names another variable.
	t.Setenv("OPENAI_API_KEY", "sk-openai-process")
	cases := []struct {
		name string
		vars map[string]string
		want string
	}{
		{"the named variable", map[string]string{"MY_KEY": "sk-mine", "OPENAI_API_KEY": "sk-openai"}, "Bearer sk-mine"},
		{"the named variable unset", map[string]string{"OPENAI_API_KEY": "sk-openai"}, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			fake := &fakeOpenAI{replies: []func(http.ResponseWriter, *http.Request){textReply("ok")}}
			srv := httptest.NewServer(fake)
			defer srv.Close()
			dir := writeConfig(t, fmt.Sprintf("model:\n  base_url: %s/v1\n  name: m\n  api_key_env: MY_KEY\n", srv.URL))
			r := lode(t, dir, tc.vars, "", "run", "hi")
			if r.code != 0 {
				t.Fatalf("exit %d: %s", r.code, r.stderr)
			}
			fake.mu.Lock()
			defer fake.mu.Unlock()
			if got := fake.headers[0].Get("Authorization"); got != tc.want {
				t.Errorf("Authorization = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestTraceFlagPrintsSpans(t *testing.T) {
	fake := &fakeOpenAI{replies: []func(http.ResponseWriter, *http.Request){
		callReply("call_1", "calculator__eval", `{"expression":"6*7"}`),
		textReply("42"),
	}}
	srv := httptest.NewServer(fake)
	defer srv.Close()
	r := lode(t, t.TempDir(), map[string]string{"OPENAI_BASE_URL": srv.URL + "/v1"}, "", "run", "--trace", "--model", "tiny", "6*7?")
	if r.code != 0 || r.stdout != "42\n" {
		t.Fatalf("exit %d stdout %q stderr %s", r.code, r.stdout, r.stderr)
	}
	for _, want := range []string{
		"span chat tiny ", "gen_ai.usage.input_tokens=20",
		"span execute_tool calculator__eval ", "gen_ai.tool.call.id=call_1",
		"span lode.turn ",
	} {
		if !strings.Contains(r.stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, r.stderr)
		}
	}
}

// collector is an OTLP/HTTP endpoint that records what it is sent.
type collector struct {
	mu     sync.Mutex
	status int
	posts  []otlpPost
}

type otlpPost struct {
	path, contentType string
	body              []byte
}

func (c *collector) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var body io.Reader = r.Body
	if r.Header.Get("Content-Encoding") == "gzip" {
		zr, err := gzip.NewReader(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		body = zr
	}
	data, _ := io.ReadAll(body)
	c.mu.Lock()
	c.posts = append(c.posts, otlpPost{r.URL.Path, r.Header.Get("Content-Type"), data})
	status := c.status
	c.mu.Unlock()
	if r.Method != http.MethodPost {
		status = http.StatusMethodNotAllowed
	}
	if status != 0 {
		w.WriteHeader(status)
		return
	}
	w.Header().Set("Content-Type", r.Header.Get("Content-Type"))
	w.WriteHeader(http.StatusOK)
}

func (c *collector) received() []otlpPost {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]otlpPost(nil), c.posts...)
}

func TestOTLPExport(t *testing.T) {
	cases := []struct {
		name        string
		vars        func(url string) map[string]string
		path, ctype string
	}{{
		name:  "OTEL_EXPORTER_OTLP_ENDPOINT, protobuf",
		vars:  func(u string) map[string]string { return map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": u} },
		path:  "/v1/traces",
		ctype: "application/x-protobuf",
	}, {
		name: "a traces endpoint of its own, used as it is",
		vars: func(u string) map[string]string {
			return map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:1", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": u + "/custom/traces"}
		},
		path:  "/custom/traces",
		ctype: "application/x-protobuf",
	}, {
		name: "http/json",
		vars: func(u string) map[string]string {
			return map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": u + "/", "OTEL_EXPORTER_OTLP_PROTOCOL": "http/json"}
		},
		path:  "/v1/traces",
		ctype: "application/json",
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			col := &collector{}
			colSrv := httptest.NewServer(col)
			defer colSrv.Close()
			fake := &fakeOpenAI{replies: []func(http.ResponseWriter, *http.Request){
				callReply("call_1", "calculator__eval", `{"expression":"2^10"}`),
				textReply("1024"),
			}}
			srv := httptest.NewServer(fake)
			defer srv.Close()
			vars := tc.vars(colSrv.URL)
			vars["OPENAI_BASE_URL"] = srv.URL + "/v1"
			r := lode(t, t.TempDir(), vars, "", "run", "--model", "tiny", "2^10?")
			if r.code != 0 || r.stdout != "1024\n" {
				t.Fatalf("exit %d stdout %q stderr %s", r.code, r.stdout, r.stderr)
			}
			// The command flushes its spans before it returns.
			posts := col.received()
			if len(posts) == 0 {
				t.Fatal("no request reached the collector")
			}
			var all []byte
			for _, p := range posts {
				if strings.HasSuffix(p.path, "/v1/metrics") {
					continue // TestOTLPMetricsExport
				}
				if p.path != tc.path || p.contentType != tc.ctype {
					t.Errorf("POST %s (%s), want %s (%s)", p.path, p.contentType, tc.path, tc.ctype)
				}
				all = append(all, p.body...)
			}
			for _, name := range []string{"chat tiny", "execute_tool calculator__eval", "lode.turn"} {
				if !bytes.Contains(all, []byte(name)) {
					t.Errorf("no span %q exported", name)
				}
			}
		})
	}
}

func TestOTLPCollectorDownDoesNotHoldTheExit(t *testing.T) {
	// A collector that keeps failing would have the exporter retry for a
	// minute; the command waits only flushWait.
	col := &collector{status: http.StatusServiceUnavailable}
	colSrv := httptest.NewServer(col)
	defer colSrv.Close()
	fake := &fakeOpenAI{replies: []func(http.ResponseWriter, *http.Request){textReply("ok")}}
	srv := httptest.NewServer(fake)
	defer srv.Close()
	t.Chdir(t.TempDir())
	vars := map[string]string{"OPENAI_BASE_URL": srv.URL + "/v1", "OTEL_EXPORTER_OTLP_ENDPOINT": colSrv.URL}
	var out, errb strings.Builder
	e := env{stdin: strings.NewReader(""), stdout: &out, stderr: &errb, interrupts: make(chan os.Signal),
		getenv: func(k string) string { return vars[k] }, flushWait: 100 * time.Millisecond}
	done := make(chan int, 1)
	go func() { done <- run(context.Background(), e, []string{"run", "--model", "m", "hi"}) }()
	select {
	case code := <-done:
		if code != 0 || out.String() != "ok\n" {
			t.Fatalf("exit %d stdout %q stderr %q", code, out.String(), errb.String())
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the command waited on a collector that is down")
	}
	if len(col.received()) == 0 {
		t.Error("no export was tried")
	}
	lines := strings.Split(strings.TrimSpace(errb.String()), "\n")
	if len(lines) < 2 || !strings.HasPrefix(lines[len(lines)-2], "lode: spans not exported to "+colSrv.URL+"/v1/traces within 100ms: ") ||
		!strings.HasPrefix(lines[len(lines)-1], "lode: metrics not exported to "+colSrv.URL+"/v1/metrics within 100ms: ") {
		t.Errorf("stderr %q", errb.String())
	}
}

func TestCheckServeAddr(t *testing.T) {
	cases := []struct {
		addr   string
		allow  []string
		remote bool
		ok     bool
	}{
		{"127.0.0.1:8080", nil, false, true},
		{"127.1.2.3:0", nil, false, true},
		{"localhost:8080", nil, false, true},
		{"LOCALHOST:8080", nil, false, true},
		{"[::1]:8080", nil, false, true},
		{":8080", nil, true, false},
		{"0.0.0.0:8080", nil, true, false},
		{"[::]:8080", nil, true, false},
		{"192.0.2.7:8080", nil, true, false},
		{"myhost:8080", nil, true, false},
		{"0.0.0.0:8080", []string{"myhost"}, true, true},
		{"127.0.0.1:8080", []string{"proxy.example"}, false, true},
		{"127.0.0.1", nil, false, false},
	}
	for _, tc := range cases {
		remote, err := checkServeAddr(tc.addr, tc.allow)
		if (err == nil) != tc.ok || (err == nil && remote != tc.remote) {
			t.Errorf("checkServeAddr(%q, %v) = %v, %v", tc.addr, tc.allow, remote, err)
		}
	}
}

func TestServeAllowHost(t *testing.T) {
	dir := writeConfig(t, "tools:\n  calculator: {}\n")
	t.Chdir(dir)
	stderr := newWatched()
	e := env{stdin: strings.NewReader(""), stdout: io.Discard, stderr: stderr, interrupts: make(chan os.Signal),
		getenv: func(string) string { return "" }}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan int, 1)
	go func() {
		done <- run(ctx, e, []string{"serve", "--http", "127.0.0.1:0", "--allow-host", "tools.example"})
	}()
	stderr.waitFor(t, "/mcp\n", 1)
	line := stderr.String()
	url := strings.TrimSpace(line[strings.Index(line, "http://"):])
	init := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`
	for host, want := range map[string]int{"tools.example": http.StatusOK, "tools.example:8080": http.StatusOK, "evil.example": http.StatusForbidden} {
		req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(init))
		req.Host = host
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != want {
			t.Errorf("Host %s: status %d, want %d", host, resp.StatusCode, want)
		}
	}
	if strings.Contains(line, "warning") {
		t.Errorf("a warning for a loopback address: %s", line)
	}
	cancel()
	if code := <-done; code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
}

// chatEnv runs lode chat in-process against srv; the test writes its input
// to the returned pipe and sends Ctrl-C on sig.
func chatEnv(t *testing.T, ctx context.Context, srv *httptest.Server) (in *io.PipeWriter, sig chan os.Signal, stdout, stderr *watched, done <-chan int) {
	t.Helper()
	t.Chdir(t.TempDir())
	pr, pw := io.Pipe()
	t.Cleanup(func() { pw.Close() })
	sig = make(chan os.Signal, 1)
	stdout, stderr = newWatched(), newWatched()
	e := env{stdin: pr, stdout: stdout, stderr: stderr, interrupts: sig,
		getenv: func(k string) string { return map[string]string{"OPENAI_BASE_URL": srv.URL}[k] }}
	d := make(chan int, 1)
	go func() { d <- run(ctx, e, []string{"chat", "--model", "m"}) }()
	return pw, sig, stdout, stderr, d
}

func waitExit(t *testing.T, done <-chan int, stderr *watched) int {
	t.Helper()
	select {
	case code := <-done:
		return code
	case <-time.After(30 * time.Second):
		t.Fatalf("chat did not end; stderr:\n%s", stderr.String())
		return -1
	}
}

func TestChatCtrlCAtThePromptOnlySaysHowToQuit(t *testing.T) {
	fake := &fakeOpenAI{replies: []func(http.ResponseWriter, *http.Request){textReply("Still here.")}}
	srv := httptest.NewServer(fake)
	defer srv.Close()
	in, sig, stdout, stderr, done := chatEnv(t, context.Background(), srv)
	stderr.waitFor(t, "you> ", 1)
	sig <- os.Interrupt
	stderr.waitFor(t, "(Ctrl-D quits)\nyou> ", 1)
	sig <- os.Interrupt
	stderr.waitFor(t, "(Ctrl-D quits)\nyou> ", 2)
	io.WriteString(in, "are you there?\n")
	stdout.waitFor(t, "Still here.\n", 1)
	in.Close()
	if code := waitExit(t, done, stderr); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
}

func TestChatEndsWithItsContext(t *testing.T) {
	// SIGTERM cancels the command's context; a chat waiting at the prompt
	// must end then, not at the next line typed.
	srv := httptest.NewServer(&fakeOpenAI{})
	defer srv.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	_, _, _, stderr, done := chatEnv(t, ctx, srv)
	stderr.waitFor(t, "you> ", 1)
	cancel()
	if code := waitExit(t, done, stderr); code != 143 || !strings.HasSuffix(stderr.String(), "lode: terminated\n") {
		t.Fatalf("exit %d: %q", code, stderr.String())
	}
}

func TestChatEndsWithItsContextMidTurn(t *testing.T) {
	started := make(chan struct{})
	srv := httptest.NewServer(&fakeOpenAI{replies: []func(http.ResponseWriter, *http.Request){stallReply(started)}})
	defer srv.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	in, _, _, stderr, done := chatEnv(t, ctx, srv)
	io.WriteString(in, "think\n")
	<-started
	cancel()
	if code := waitExit(t, done, stderr); code != 143 || !strings.HasSuffix(stderr.String(), "lode: terminated\n") {
		t.Fatalf("exit %d: %q", code, stderr.String())
	}
}

// lodeProcess starts the built command in a temporary folder with only the
// environment given.
func lodeProcess(t *testing.T, vars map[string]string, args ...string) (cmd *exec.Cmd, stdin io.WriteCloser, stdout, stderr *watched) {
	t.Helper()
	cmd = exec.Command(lodeBin, args...)
	cmd.Dir = t.TempDir()
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + cmd.Dir}
	for k, v := range vars {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	stdout, stderr = newWatched(), newWatched()
	cmd.Stdout, cmd.Stderr = stdout, stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		}
	})
	return cmd, stdin, stdout, stderr
}

func waitProcess(t *testing.T, cmd *exec.Cmd, stderr *watched) int {
	t.Helper()
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	select {
	case <-exited:
		return cmd.ProcessState.ExitCode()
	case <-time.After(30 * time.Second):
		t.Fatalf("lode did not exit; stderr:\n%s", stderr.String())
		return -1
	}
}

func TestSignalsInTheRealProcess(t *testing.T) {
	t.Run("chat: Ctrl-C stops the turn, then at the prompt only says how to quit", func(t *testing.T) {
		started := make(chan struct{})
		fake := &fakeOpenAI{replies: []func(http.ResponseWriter, *http.Request){stallReply(started), textReply("Still here.")}}
		srv := httptest.NewServer(fake)
		defer srv.Close()
		cmd, stdin, stdout, stderr := lodeProcess(t, map[string]string{"OPENAI_BASE_URL": srv.URL}, "chat", "--model", "m")
		stderr.waitFor(t, "you> ", 1)
		io.WriteString(stdin, "first question\n")
		<-started
		_ = cmd.Process.Signal(os.Interrupt)
		stderr.waitFor(t, "(turn stopped)\nyou> ", 1)
		_ = cmd.Process.Signal(os.Interrupt)
		stderr.waitFor(t, "(Ctrl-D quits)\nyou> ", 1)
		_ = cmd.Process.Signal(os.Interrupt)
		stderr.waitFor(t, "(Ctrl-D quits)\nyou> ", 2)
		io.WriteString(stdin, "second question\n")
		stdout.waitFor(t, "Still here.\n", 1)
		stdin.Close()
		if code := waitProcess(t, cmd, stderr); code != 0 {
			t.Fatalf("exit %d: %s", code, stderr.String())
		}
	})
	t.Run("chat: SIGTERM at the prompt ends it", func(t *testing.T) {
		srv := httptest.NewServer(&fakeOpenAI{})
		defer srv.Close()
		cmd, _, _, stderr := lodeProcess(t, map[string]string{"OPENAI_BASE_URL": srv.URL}, "chat", "--model", "m")
		stderr.waitFor(t, "you> ", 1)
		_ = cmd.Process.Signal(syscall.SIGTERM)
		if code := waitProcess(t, cmd, stderr); code != 143 || !strings.HasSuffix(stderr.String(), "\nlode: terminated\n") {
			t.Fatalf("exit %d: %s", code, stderr.String())
		}
	})
	t.Run("run: Ctrl-C stops the run", func(t *testing.T) {
		started := make(chan struct{})
		srv := httptest.NewServer(&fakeOpenAI{replies: []func(http.ResponseWriter, *http.Request){stallReply(started)}})
		defer srv.Close()
		cmd, _, stdout, stderr := lodeProcess(t, map[string]string{"OPENAI_BASE_URL": srv.URL}, "run", "--model", "m", "think")
		<-started
		stdout.waitFor(t, "Thinking very hard", 1)
		_ = cmd.Process.Signal(os.Interrupt)
		if code := waitProcess(t, cmd, stderr); code != 130 || stderr.String() != "lode: interrupted\n" {
			t.Fatalf("exit %d: %q", code, stderr.String())
		}
		if stdout.String() != "Thinking very hard\n" {
			t.Errorf("stdout %q", stdout.String())
		}
	})
}

func TestRunEndsOnSIGTERMWithItsOwnCode(t *testing.T) {
	// 130 says the user typed Ctrl-C; SIGTERM from a supervisor gets 143.
	started := make(chan struct{})
	srv := httptest.NewServer(&fakeOpenAI{replies: []func(http.ResponseWriter, *http.Request){stallReply(started)}})
	defer srv.Close()
	cmd, _, _, stderr := lodeProcess(t, map[string]string{"OPENAI_BASE_URL": srv.URL}, "run", "--model", "m", "think")
	<-started
	_ = cmd.Process.Signal(syscall.SIGTERM)
	if code := waitProcess(t, cmd, stderr); code != 143 || stderr.String() != "lode: terminated\n" {
		t.Fatalf("exit %d: %q", code, stderr.String())
	}
}

func TestServeStdioEndsOnSIGTERM(t *testing.T) {
	dir := writeConfig(t, "tools:\n  calculator: {}\n")
	cmd, stdin, stdout, stderr := lodeProcess(t, nil, "serve", "--config", filepath.Join(dir, "lode.yaml"))
	defer stdin.Close()
	io.WriteString(stdin, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`+"\n")
	stdout.waitFor(t, `"id":1`, 1) // serving, so the signal is caught
	_ = cmd.Process.Signal(syscall.SIGTERM)
	if code := waitProcess(t, cmd, stderr); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
}

func TestServerThatCannotStream(t *testing.T) {
	whole := func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"id":"x","object":"chat.completion","model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"whole answer"},"finish_reason":"stop"}]}`)
	}
	srv := httptest.NewServer(&fakeOpenAI{replies: []func(http.ResponseWriter, *http.Request){whole, whole}})
	defer srv.Close()
	base := fmt.Sprintf("model:\n  base_url: %s/v1\n  name: m\n", srv.URL)

	r := lode(t, writeConfig(t, base), nil, "", "run", "hi")
	want := "lode: the model endpoint " + srv.URL + "/v1 did not stream its answer: if it cannot, set stream: false under model: in lode.yaml\n"
	if r.code != 1 || r.stderr != want {
		t.Fatalf("exit %d stderr %q", r.code, r.stderr)
	}
	r = lode(t, writeConfig(t, base+"  stream: false\n"), nil, "", "run", "hi")
	if r.code != 0 || r.stdout != "whole answer\n" || r.stderr != "" {
		t.Fatalf("exit %d stdout %q stderr %q", r.code, r.stdout, r.stderr)
	}
}

func TestThinkingIsShownOnce(t *testing.T) {
	thinking := func(w http.ResponseWriter, _ *http.Request) {
		sse(w,
			chunk(`{"role":"assistant","reasoning_content":"Let me "}`, ""),
			chunk(`{"reasoning_content":"think."}`, ""),
			chunk(`{"content":"Done."}`, ""),
			chunk(`{}`, "stop"),
		)
	}
	srv := httptest.NewServer(&fakeOpenAI{replies: []func(http.ResponseWriter, *http.Request){thinking}})
	defer srv.Close()
	r := lode(t, t.TempDir(), map[string]string{"OPENAI_BASE_URL": srv.URL}, "", "run", "--model", "m", "hi")
	if r.code != 0 || r.stdout != "Done.\n" || strings.Count(r.stderr, "(thinking…)") != 1 || strings.Contains(r.stderr, "think.") {
		t.Fatalf("exit %d stdout %q stderr %q", r.code, r.stdout, r.stderr)
	}
}

func TestExplainNamesTheEndpointInUse(t *testing.T) {
	// With only OPENAI_API_KEY set the configuration names no endpoint;
	// the line must name the one the provider used.
	cfg := &Config{Model: ModelConfig{APIKeyEnv: "OPENAI_API_KEY"}}
	cases := []struct {
		err  error
		want string
	}{
		{&net.OpError{Op: "dial", Net: "tcp", Err: errors.New("connection refused")},
			"cannot reach the model endpoint https://api.openai.com/v1: connection refused"},
		{fmt.Errorf("wrapped: %w", &net.DNSError{Err: "no such host", Name: "api.openai.com"}),
			"cannot reach the model endpoint https://api.openai.com/v1: lookup api.openai.com: no such host"},
	}
	for _, tc := range cases {
		if got := explain(tc.err, cfg, openai.DefaultBaseURL); got == nil || got.Error() != tc.want {
			t.Errorf("explain(%v) = %v, want %s", tc.err, got, tc.want)
		}
	}
}

// TestOTLPMetricsExport checks that lode run sends its metrics (tokens,
// dollars, tool durations) to the collector the standard variables name,
// flushed at exit, beside its spans; and that a metrics protocol it does
// not speak is refused before anything runs.
func TestOTLPMetricsExport(t *testing.T) {
	cases := []struct {
		name string
		vars func(url string) map[string]string
		path string
	}{
		{"OTEL_EXPORTER_OTLP_ENDPOINT", func(u string) map[string]string { return map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": u} }, "/v1/metrics"},
		{"a metrics endpoint of its own", func(u string) map[string]string {
			return map[string]string{"OTEL_EXPORTER_OTLP_METRICS_ENDPOINT": u + "/custom/metrics"}
		}, "/custom/metrics"},
		{"traces as JSON, metrics on protobuf", func(u string) map[string]string {
			return map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": u, "OTEL_EXPORTER_OTLP_PROTOCOL": "http/json"}
		}, "/v1/metrics"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			col := &collector{}
			colSrv := httptest.NewServer(col)
			defer colSrv.Close()
			_, url := costServer(t)
			vars := tc.vars(colSrv.URL)
			vars["OPENAI_BASE_URL"] = url
			r := lode(t, writeConfig(t, pricedTiny), vars, "", "run", "--model", "tiny", "what is 1+1?")
			if r.code != 0 {
				t.Fatalf("exit %d stderr %s", r.code, r.stderr)
			}
			var metrics []byte
			for _, p := range col.received() {
				if p.path == tc.path {
					if p.contentType != "application/x-protobuf" {
						t.Errorf("metrics posted as %s", p.contentType)
					}
					metrics = append(metrics, p.body...)
				}
			}
			for _, name := range []string{"gen_ai.client.token.usage", "lode.cost", "lode.tool.duration", "calculator__eval"} {
				if !bytes.Contains(metrics, []byte(name)) {
					t.Errorf("no %q in the metrics posted to %s", name, tc.path)
				}
			}
		})
	}
	t.Run("metrics as JSON refused", func(t *testing.T) {
		vars := map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:1", "OTEL_EXPORTER_OTLP_METRICS_PROTOCOL": "http/json"}
		r := lode(t, t.TempDir(), vars, "", "run", "--model", "tiny", "hi")
		if r.code != 1 || !strings.Contains(r.stderr, "OTEL_EXPORTER_OTLP_METRICS_PROTOCOL=http/json is not supported; lode exports metrics as http/protobuf") {
			t.Errorf("exit %d stderr %q", r.code, r.stderr)
		}
	})
}
