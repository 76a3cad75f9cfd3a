package cli

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lodeworks/lode/internal/pgtest"
	"github.com/lodeworks/lode/tool"
	"github.com/lodeworks/lode/x/tool/mcp"
)

// lodeBin is the command built once for the tests that need a process
// (serve over stdio and HTTP).
var lodeBin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "lode-cmd-test")
	if err != nil {
		panic(err)
	}
	lodeBin = filepath.Join(dir, "lode")
	if out, err := exec.Command("go", "build", "-o", lodeBin, "../../cmd/lode").CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "building lode: %v\n%s", err, out)
		os.Exit(1)
	}
	code := pgtest.Main(m)
	os.RemoveAll(dir)
	os.Exit(code)
}

type result struct {
	code           int
	stdout, stderr string
}

// lode runs the command in-process in dir with the given environment.
func lode(t *testing.T, dir string, vars map[string]string, stdin string, args ...string) result {
	t.Helper()
	if dir != "" {
		t.Chdir(dir)
	}
	var out, errb strings.Builder
	e := env{
		stdin:  strings.NewReader(stdin),
		stdout: &out, stderr: &errb,
		getenv:     func(k string) string { return vars[k] },
		interrupts: make(chan os.Signal),
	}
	code := run(context.Background(), e, args)
	return result{code, out.String(), errb.String()}
}

func writeConfig(t *testing.T, body string) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "lode.yaml"), []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

func TestDemo(t *testing.T) {
	r := lode(t, t.TempDir(), nil, "", "demo")
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	for _, want := range []string{
		"→ calculator__eval {\"expression\":\"1/3 + 1/6\"}",
		"← calculator__eval: 1/2 = 0.5",
		"✗ filesystem__read: path \"../../etc/passwd\": the path leads outside the root",
		"Still open: #1 Printer on fire (open); #2 Order more toner (todo).",
		"trace: 3 turns, 4 tool calls",
		"error (tool_error)",
		`notes/answer.txt on disk: "1/3 + 1/6 = 1/2\n"`,
	} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("demo output lacks %q:\n%s", want, r.stdout)
		}
	}
}

func TestTools(t *testing.T) {
	root := t.TempDir()
	dir := writeConfig(t, fmt.Sprintf("tools:\n  calculator: {}\n  filesystem:\n    root: %q\n    read_only: true\n", root))
	r := lode(t, dir, nil, "", "tools")
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	for _, want := range []string{"calculator__eval", "filesystem__read", "filesystem__stat", "args: {", "tools\n"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("tools output lacks %q:\n%s", want, r.stdout)
		}
	}
	if strings.Contains(r.stdout, "filesystem__write") {
		t.Error("read-only filesystem offers write")
	}
	r = lode(t, dir, nil, "", "tools", "-json")
	var list []struct {
		Name        string          `json:"name"`
		InputSchema json.RawMessage `json:"inputSchema"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &list); err != nil || len(list) < 3 {
		t.Fatalf("tools -json: %v\n%s", err, r.stdout)
	}
	for _, l := range list {
		if err := tool.ValidateSchema(l.InputSchema); err != nil {
			t.Errorf("%s: %v", l.Name, err)
		}
	}
}

func TestBadInputsAreOneClearLine(t *testing.T) {
	unauthorized := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusUnauthorized)
		io.WriteString(w, `{"error":{"message":"Incorrect API key provided","type":"invalid_request_error","code":"invalid_api_key"}}`)
	}))
	defer unauthorized.Close()
	cases := []struct {
		name   string
		config string
		vars   map[string]string
		args   []string
		code   int
		want   string
	}{
		{"no endpoint", "", nil, []string{"run", "hi"}, 1, "lode: " + noEndpoint},
		{"no model", "", map[string]string{"OPENAI_API_KEY": "k"}, []string{"run", "hi"}, 1, "lode: no model named: set --model, LODE_MODEL or model.name in lode.yaml"},
		{"unreachable", "", nil, []string{"run", "--base-url", "http://127.0.0.1:1/v1", "--model", "m", "hi"}, 1, "lode: cannot reach the model endpoint http://127.0.0.1:1/v1: "},
		{"wrong key", "", map[string]string{"OPENAI_API_KEY": "bad"}, []string{"run", "--base-url", unauthorized.URL, "--model", "m", "hi"}, 1, "lode: openai: 401 Unauthorized: Incorrect API key provided — check the API key in $OPENAI_API_KEY (model.api_key_env in lode.yaml names the variable)"},
		{"malformed config", "tools: [unclosed\n", nil, []string{"tools"}, 1, "lode: lode.yaml: line 1: did not find expected ',' or ']'"},
		{"unknown key", "model:\n  name: m\nmodle: x\n", nil, []string{"tools"}, 1, `lode: lode.yaml:3: unknown key "modle" at the top level`},
		{"unknown nested key", "model:\n  nam: m\n", nil, []string{"tools"}, 1, `lode: lode.yaml:2: unknown key "nam" in model:`},
		{"a key in the file", "model:\n  name: m\n  api_key: sk-x\n", nil, []string{"tools"}, 1,
			`lode: lode.yaml:3: unknown key "api_key" in model: (the key never goes in the file: api_key_env names the variable that holds it)`},
		{"unknown pack", "tools:\n  nope: {}\n", nil, []string{"tools"}, 1, `lode: lode.yaml:2: unknown pack "nope" in tools:; the packs are bash, calculator, filesystem, local, skills`},
		{"bad option", "tools:\n  filesystem: {}\n", nil, []string{"tools"}, 1, "lode: lode.yaml:2: tools.filesystem: option root is required: the directory the tools are confined to"},
		{"pack option refused", "tools:\n  local:\n    path: /nonexistent-lode-board\n", nil, []string{"tools"}, 1, `lode: lode.yaml:2: tools.local: path "/nonexistent-lode-board" does not exist`},
		{"options to a pack that takes none", "tools:\n  calculator:\n    colour: blue\n", nil, []string{"tools"}, 1, `lode: lode.yaml:2: tools.calculator: unknown option "colour"; the options are max_bits, max_depth, max_input, tool_prefix`},
		{"mcp without command", "mcp:\n  - name: x\n", nil, []string{"tools"}, 1, `lode: lode.yaml:2: mcp server "x" needs a command or a url`},
		{"mcp env on a url", "mcp:\n  - name: x\n    url: http://127.0.0.1:1/mcp\n    inherit_env: true\n", nil, []string{"tools"}, 1, `lode: lode.yaml:2: mcp server "x": env and inherit_env apply to a command, not a url`},
		{"missing config file", "", nil, []string{"tools", "--config", "nope.yaml"}, 1, "lode: config: open nope.yaml: no such file or directory"},
		{"unknown command", "", nil, []string{"fly"}, 2, `lode: unknown command "fly"`},
		{"run without prompt", "", nil, []string{"run"}, 2, "lode: lode run needs a prompt"},
		{"bad flag", "", nil, []string{"run", "--nope"}, 2, "lode: flag provided but not defined: -nope"},
		{"a flag of another command", "", nil, []string{"tools", "--model", "m"}, 2, "lode: flag provided but not defined: -model"},
		{"malformed base URL", "", nil, []string{"run", "--base-url", "127.0.0.1:8000/v1", "--model", "m", "hi"}, 1, `lode: openai: base URL "127.0.0.1:8000/v1" is not an http(s) URL`},
		{"unknown key in an mcp server", "mcp:\n  - name: x\n    cmd: [x]\n", nil, []string{"tools"}, 1, `lode: lode.yaml:3: unknown key "cmd" in an mcp: server`},
		{"negative max_turns", "max_turns: -1\n", nil, []string{"tools"}, 1, "lode: lode.yaml:1: max_turns must not be negative (0 means the default, 20)"},
		{"a second document", "model:\n  name: m\n---\npolicy:\n  roles: {}\n", nil, []string{"tools"}, 1, "lode: lode.yaml:4: a second YAML document starts here; lode.yaml is one document, and the settings of any other would be ignored"},
		{"an empty second document", "model:\n  name: m\n---\n", nil, []string{"tools"}, 1, "lode: lode.yaml:4: a second YAML document starts here"},
		{"a broken second document", "model:\n  name: m\n---\ntools: [\n", nil, []string{"tools"}, 1, "lode: lode.yaml: after the first document: "},
		{"a key given twice", "approve: [calculator]\nmodel: {name: m}\napprove: []\n", nil, []string{"tools"}, 1, `lode: lode.yaml: line 3: mapping key "approve" already defined at line 1`},
		{"a config that is not a mapping", "- a\n- b\n", nil, []string{"tools"}, 1, "lode: lode.yaml:1: the file must be a mapping of keys (model:, system:, max_turns:, tools:, mcp:)"},
		{"OTLP over gRPC", "", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4317", "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"}, []string{"serve"}, 1,
			"lode: OTEL_EXPORTER_OTLP_PROTOCOL=grpc is not supported; lode exports http/protobuf or http/json"},
		{"OTLP traces protocol named", "", map[string]string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://127.0.0.1:4317/v1/traces", "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL": "grpc"}, []string{"serve"}, 1,
			"lode: OTEL_EXPORTER_OTLP_TRACES_PROTOCOL=grpc is not supported; lode exports http/protobuf or http/json"},
		{"OTLP endpoint that is not a URL", "", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "collector:4318"}, []string{"serve"}, 1,
			`lode: OTLP endpoint "collector:4318/v1/traces" is not an http(s) URL`},
		{"OTLP metrics endpoint that is not a URL", "", map[string]string{"OTEL_EXPORTER_OTLP_METRICS_ENDPOINT": "collector:4318/v1/metrics"}, []string{"serve"}, 1,
			`lode: OTLP endpoint "collector:4318/v1/metrics" is not an http(s) URL`},
		{"OTLP metrics over gRPC", "", map[string]string{"OTEL_EXPORTER_OTLP_METRICS_ENDPOINT": "http://127.0.0.1:4317", "OTEL_EXPORTER_OTLP_METRICS_PROTOCOL": "grpc"}, []string{"serve"}, 1,
			"lode: OTEL_EXPORTER_OTLP_METRICS_PROTOCOL=grpc is not supported; lode exports metrics as http/protobuf"},
		{"a metric export interval that is not a number", "", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318", "OTEL_METRIC_EXPORT_INTERVAL": "10s"}, []string{"serve"}, 1,
			"lode: OTEL_METRIC_EXPORT_INTERVAL=10s: want a positive number of milliseconds"},
		{"serve on every interface", "", nil, []string{"serve", "--http", ":0"}, 2, `lode: --http :0 is not a loopback address: anyone who could reach it could run the tools, with no authentication; serve on 127.0.0.1:PORT, or add --allow-host NAME`},
		{"serve on a LAN address", "", nil, []string{"serve", "--http", "192.0.2.7:8080"}, 2, `lode: --http 192.0.2.7:8080 is not a loopback address`},
		{"serve on an address without a port", "", nil, []string{"serve", "--http", "127.0.0.1"}, 2, `lode: --http "127.0.0.1": want HOST:PORT, e.g. 127.0.0.1:8080`},
		{"allow-host without --http", "", nil, []string{"serve", "--allow-host", "example.test"}, 2, "lode: --allow-host needs --http"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			if c.config != "" {
				dir = writeConfig(t, c.config)
			}
			r := lode(t, dir, c.vars, "", c.args...)
			if r.code != c.code {
				t.Fatalf("exit %d, want %d; stderr %q", r.code, c.code, r.stderr)
			}
			lines := strings.Split(strings.TrimSpace(r.stderr), "\n")
			last := lines[len(lines)-1]
			if !strings.HasPrefix(last, c.want) {
				t.Fatalf("stderr %q, want a line starting %q", r.stderr, c.want)
			}
			if strings.Contains(r.stderr, "goroutine ") || strings.Contains(r.stderr, "panic") {
				t.Fatalf("stack trace on stderr: %s", r.stderr)
			}
			if c.code == 1 && len(lines) != 1 {
				t.Fatalf("more than one line on stderr: %q", r.stderr)
			}
		})
	}
}

// fakeOpenAI serves scripted chat-completion streams in the real wire
// format and records the requests.
type fakeOpenAI struct {
	mu       sync.Mutex
	replies  []func(w http.ResponseWriter, r *http.Request)
	requests []map[string]any
	headers  []http.Header
}

func (f *fakeOpenAI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var body map[string]any
	_ = json.NewDecoder(r.Body).Decode(&body)
	f.mu.Lock()
	f.requests = append(f.requests, body)
	f.headers = append(f.headers, r.Header.Clone())
	if len(f.replies) == 0 {
		f.mu.Unlock()
		http.Error(w, "no more replies", http.StatusInternalServerError)
		return
	}
	reply := f.replies[0]
	f.replies = f.replies[1:]
	f.mu.Unlock()
	reply(w, r)
}

func sse(w http.ResponseWriter, chunks ...string) {
	w.Header().Set("Content-Type", "text/event-stream")
	fl := w.(http.Flusher)
	for _, c := range chunks {
		fmt.Fprintf(w, "data: %s\n\n", c)
		fl.Flush()
	}
	fmt.Fprint(w, "data: [DONE]\n\n")
	fl.Flush()
}

func chunk(delta string, finish string) string {
	fin := "null"
	if finish != "" {
		fin = `"` + finish + `"`
	}
	return fmt.Sprintf(`{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":%s,"finish_reason":%s}]}`, delta, fin)
}

func callReply(id, name, args string) func(http.ResponseWriter, *http.Request) {
	return func(w http.ResponseWriter, _ *http.Request) {
		sse(w,
			chunk(fmt.Sprintf(`{"role":"assistant","tool_calls":[{"index":0,"id":%q,"type":"function","function":{"name":%q,"arguments":""}}]}`, id, name), ""),
			chunk(fmt.Sprintf(`{"tool_calls":[{"index":0,"function":{"arguments":%q}}]}`, args), ""),
			chunk(`{}`, "tool_calls"),
			`{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"m","choices":[],"usage":{"prompt_tokens":20,"completion_tokens":5,"total_tokens":25}}`,
		)
	}
}

func textReply(parts ...string) func(http.ResponseWriter, *http.Request) {
	return func(w http.ResponseWriter, _ *http.Request) {
		var chunks []string
		for i, p := range parts {
			role := ""
			if i == 0 {
				role = `"role":"assistant",`
			}
			chunks = append(chunks, chunk(fmt.Sprintf(`{%s"content":%q}`, role, p), ""))
		}
		sse(w, append(chunks, chunk(`{}`, "stop"))...)
	}
}

func TestRunAgainstOpenAICompatibleServer(t *testing.T) {
	fake := &fakeOpenAI{replies: []func(http.ResponseWriter, *http.Request){
		callReply("call_1", "calculator__eval", `{"expression":"2^64"}`),
		textReply("2^64 is ", "18446744073709551616."),
	}}
	srv := httptest.NewServer(fake)
	defer srv.Close()
	r := lode(t, t.TempDir(), map[string]string{"OPENAI_BASE_URL": srv.URL + "/v1"}, "", "run", "--model", "tiny", "--system", "Be exact.", "what is 2^64?")
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	if r.stdout != "2^64 is 18446744073709551616.\n" {
		t.Errorf("stdout = %q", r.stdout)
	}
	for _, want := range []string{`→ calculator__eval {"expression":"2^64"}`, "← calculator__eval: 18446744073709551616"} {
		if !strings.Contains(r.stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, r.stderr)
		}
	}
	fake.mu.Lock()
	defer fake.mu.Unlock()
	if len(fake.requests) != 2 || fake.requests[0]["model"] != "tiny" {
		t.Fatalf("requests: %v", fake.requests)
	}
	msgs := fake.requests[1]["messages"].([]any)
	if first := msgs[0].(map[string]any); first["role"] != "system" || first["content"] != "Be exact." {
		t.Errorf("first message %v", first)
	}
	if last := msgs[len(msgs)-1].(map[string]any); last["role"] != "tool" || last["tool_call_id"] != "call_1" {
		t.Errorf("last message %v", last)
	}
}

func TestChatCtrlCStopsTheTurnNotTheProgram(t *testing.T) {
	inTurn := make(chan struct{})
	fake := &fakeOpenAI{replies: []func(http.ResponseWriter, *http.Request){
		func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/event-stream")
			fmt.Fprintf(w, "data: %s\n\n", chunk(`{"role":"assistant","content":"Thinking very hard"}`, ""))
			w.(http.Flusher).Flush()
			close(inTurn)
			<-r.Context().Done()
		},
		textReply("Still here."),
	}}
	srv := httptest.NewServer(fake)
	defer srv.Close()
	sig := make(chan os.Signal, 1)
	pr, pw := io.Pipe()
	out := newWatched()
	var errb strings.Builder
	e := env{stdin: pr, stdout: out, stderr: &errb, interrupts: sig,
		getenv: func(k string) string { return map[string]string{"OPENAI_BASE_URL": srv.URL}[k] }}
	t.Chdir(t.TempDir())
	done := make(chan int)
	go func() { done <- run(context.Background(), e, []string{"chat", "--model", "m"}) }()
	io.WriteString(pw, "first question\n")
	<-inTurn
	out.waitFor(t, "Thinking very hard", 1)
	sig <- os.Interrupt
	io.WriteString(pw, "second question\n")
	pw.Close()
	select {
	case code := <-done:
		if code != 0 {
			t.Fatalf("exit %d: %s", code, errb.String())
		}
	case <-time.After(20 * time.Second):
		t.Fatal("chat did not end after EOF")
	}
	if !strings.Contains(errb.String(), "(turn stopped)") || !strings.Contains(out.String(), "Still here.") {
		t.Fatalf("stdout %q\nstderr %q", out.String(), errb.String())
	}
	// The stopped answer's text stays in the thread, as the person saw
	// it: the next request alternates, user, assistant, user.
	fake.mu.Lock()
	defer fake.mu.Unlock()
	var got []string
	for _, m := range fake.requests[1]["messages"].([]any) {
		m := m.(map[string]any)
		got = append(got, fmt.Sprintf("%v: %v", m["role"], m["content"]))
	}
	if want := []string{"user: first question", "assistant: Thinking very hard", "user: second question"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("the next request carried %q, want %q", got, want)
	}
}

func TestServeOverStdio(t *testing.T) {
	dir := writeConfig(t, "tools:\n  calculator: {}\n")
	c, err := mcp.NewClient(mcp.WithName("lode"), mcp.WithStdio(lodeBin, "serve", "--config", filepath.Join(dir, "lode.yaml")))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	checkServed(t, c)
}

func TestServeOverHTTP(t *testing.T) {
	dir := writeConfig(t, "tools:\n  calculator: {}\n")
	cmd := exec.Command(lodeBin, "serve", "--http", "127.0.0.1:0", "--config", filepath.Join(dir, "lode.yaml"))
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	line, err := bufio.NewReader(stderr).ReadString('\n')
	if err != nil {
		t.Fatalf("no address line: %v", err)
	}
	i := strings.Index(line, "http://")
	if i < 0 {
		t.Fatalf("address line %q", line)
	}
	c, err := mcp.NewClient(mcp.WithName("lode"), mcp.WithHTTP(strings.TrimSpace(line[i:])))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	checkServed(t, c)
}

func checkServed(t *testing.T, c *mcp.Client) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	tools, err := c.Tools(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(tools) != 1 || tools[0].Name != "calculator__eval" {
		t.Fatalf("served tools %v", tools)
	}
	v, err := c.Call(ctx, "calculator__eval", map[string]any{"expression": "1/3 + 1/6"})
	if err != nil {
		t.Fatal(err)
	}
	res, ok := v.(*tool.Result)
	if !ok || res.IsError || !strings.HasPrefix(res.Content, "1/2") {
		t.Fatalf("call result %#v", v)
	}
	v, err = c.Call(ctx, "calculator__eval", map[string]any{"expression": "1/0"})
	if err != nil {
		t.Fatal(err)
	}
	if res, ok := v.(*tool.Result); !ok || !res.IsError {
		t.Fatalf("a failing call is not an error result: %#v", v)
	}
}

// TestMountsMCPServersFromConfig mounts lode's own server over stdio, as a
// configuration names it, and calls through it.
func TestMountsMCPServersFromConfig(t *testing.T) {
	inner := writeConfig(t, "tools:\n  calculator: {}\n")
	outer := writeConfig(t, fmt.Sprintf("tools:\n  calculator: {}\nmcp:\n  - name: inner\n    command: [%q, serve, --config, %q]\n    env: {LODE_MODEL: unused}\n",
		lodeBin, filepath.Join(inner, "lode.yaml")))
	r := lode(t, outer, nil, "", "tools")
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	for _, want := range []string{"calculator__eval", "inner__calculator__eval", "2 tools"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("tools output lacks %q:\n%s", want, r.stdout)
		}
	}
}

// TestToolsWithoutToolsSection: with no lode.yaml the calculator is
// mounted; a lode.yaml without tools: mounts no pack.
func TestToolsWithoutToolsSection(t *testing.T) {
	r := lode(t, t.TempDir(), nil, "", "tools", "--json")
	if r.code != 0 || !strings.Contains(r.stdout, `"calculator__eval"`) {
		t.Fatalf("no lode.yaml: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	r = lode(t, writeConfig(t, "system: Be brief.\n"), nil, "", "tools", "--json")
	if r.code != 0 || strings.TrimSpace(r.stdout) != "[]" {
		t.Fatalf("lode.yaml without tools: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
}
