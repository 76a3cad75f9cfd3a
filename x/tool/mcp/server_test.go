package mcp_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/lodeworks/lode/artifact"
	"github.com/lodeworks/lode/ledger"
	"github.com/lodeworks/lode/tool"
	xtool "github.com/lodeworks/lode/x/tool"
	"github.com/lodeworks/lode/x/tool/mcp"
)

// demoRegistry has a tool for each way a call can end.
func demoRegistry(t *testing.T) tool.Registry {
	t.Helper()
	reg := tool.NewRegistry()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	type echoIn struct {
		Text string `json:"text"`
	}
	must(tool.RegisterFunc(reg, "echo", "Echoes text", func(_ context.Context, in echoIn) (string, error) { return in.Text, nil },
		tool.WithHints(tool.Hints{ReadOnly: true})))
	must(tool.RegisterFunc(reg, "weather", "Reports the weather", func(context.Context, struct{}) (map[string]any, error) {
		return map[string]any{"temp": 21, "sky": "clear"}, nil
	}, tool.WithHints(tool.Hints{ReadOnly: true, Idempotent: true})))
	must(tool.RegisterFunc(reg, "fail", "Always fails", func(context.Context, struct{}) (string, error) {
		return "", errors.New("the disk is full")
	}, tool.WithHints(tool.Hints{Destructive: true})))
	must(tool.RegisterFunc(reg, "boom", "Panics", func(context.Context, struct{}) (string, error) { panic("kaboom") }))
	must(tool.RegisterFunc(reg, "stall", "Waits for its context", func(ctx context.Context, _ struct{}) (string, error) {
		<-ctx.Done()
		return "", ctx.Err()
	}, tool.WithTimeout(100*time.Millisecond)))
	return reg
}

// serveHTTP serves reg over streamable HTTP on a loopback port and returns
// the endpoint URL.
func serveHTTP(t *testing.T, reg tool.Registry, opts ...mcp.ServerOption) string {
	t.Helper()
	srv, err := mcp.NewServer(reg, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return serveServer(t, srv)
}

func serveServer(t *testing.T, srv *mcp.Server) string {
	t.Helper()
	mux := http.NewServeMux()
	mux.Handle("/mcp", srv)
	ts := httptest.NewServer(mux)
	t.Cleanup(func() {
		for ss := range srv.SDK().Sessions() {
			_ = ss.Close()
		}
		ts.Close()
	})
	return ts.URL + "/mcp"
}

// statusRecorder records the status of every HTTP response.
type statusRecorder struct {
	mu       sync.Mutex
	statuses []int
}

func (s *statusRecorder) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := http.DefaultTransport.RoundTrip(r)
	if err == nil && r.Method == http.MethodPost {
		s.mu.Lock()
		s.statuses = append(s.statuses, resp.StatusCode)
		s.mu.Unlock()
	}
	return resp, err
}

func sdkClient(t *testing.T, url string, hc *http.Client) *sdk.ClientSession {
	t.Helper()
	c := sdk.NewClient(&sdk.Implementation{Name: "test", Version: "1"}, nil)
	cs, err := c.Connect(context.Background(), &sdk.StreamableClientTransport{Endpoint: url, HTTPClient: hc}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	return cs
}

func TestServerListsRegistryTools(t *testing.T) {
	cs := sdkClient(t, serveHTTP(t, demoRegistry(t)), nil)
	res, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	byName := map[string]*sdk.Tool{}
	for _, tl := range res.Tools {
		names = append(names, tl.Name)
		byName[tl.Name] = tl
	}
	if want := []string{"boom", "echo", "fail", "stall", "weather"}; !reflect.DeepEqual(names, want) {
		t.Fatalf("tools = %v, want %v", names, want)
	}
	echo := byName["echo"]
	schema, _ := json.Marshal(echo.InputSchema)
	if echo.Description != "Echoes text" || !strings.Contains(string(schema), `"text":{"type":"string"}`) {
		t.Fatalf("echo = %+v, schema %s", echo, schema)
	}
	no := false
	yes := true
	cases := map[string]*sdk.ToolAnnotations{
		"echo":    {ReadOnlyHint: true, DestructiveHint: &no},
		"weather": {ReadOnlyHint: true, IdempotentHint: true, DestructiveHint: &no},
		"fail":    {DestructiveHint: &yes},
		"boom":    nil,
	}
	for name, want := range cases {
		if got := byName[name].Annotations; !reflect.DeepEqual(got, want) {
			t.Errorf("%s annotations = %+v, want %+v", name, got, want)
		}
	}
}

func TestServerFailureIsData(t *testing.T) {
	rec := &statusRecorder{}
	cs := sdkClient(t, serveHTTP(t, demoRegistry(t)), &http.Client{Transport: rec})
	cases := []struct {
		name    string
		args    any
		isError bool
		text    string
	}{
		{"echo", map[string]any{"text": "hi"}, false, "hi"},
		{"fail", nil, true, "the disk is full"},
		{"boom", nil, true, "the tool boom crashed (panic: kaboom); this is a fault in the tool, not in your arguments"},
		{"stall", nil, true, "the call to stall timed out after 100ms and was abandoned; it may have partly taken effect"},
		{"nope", nil, true, `unknown tool "nope". Tools available to this caller: boom, echo, fail, stall, weather.`},
		{"echo", map[string]any{"text": 7}, true, "invalid arguments for echo"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			res, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: tc.name, Arguments: tc.args})
			if err != nil {
				t.Fatalf("transport error: %v", err)
			}
			text := res.Content[0].(*sdk.TextContent).Text
			if res.IsError != tc.isError || !strings.HasPrefix(text, tc.text) {
				t.Fatalf("got %q (isError %v), want %q (isError %v)", text, res.IsError, tc.text, tc.isError)
			}
		})
	}
	rec.mu.Lock()
	statuses := append([]int(nil), rec.statuses...)
	rec.mu.Unlock()
	for _, s := range statuses {
		if s != http.StatusOK && s != http.StatusAccepted {
			t.Fatalf("HTTP statuses %v: a failed call must still be a 200", statuses)
		}
	}
	res, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: "weather"})
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := json.Marshal(res.StructuredContent); string(got) != `{"sky":"clear","temp":21}` {
		t.Fatalf("structured content = %s", got)
	}
}

// bearerIdentity maps two tokens to roles.
func bearerIdentity(r *http.Request) (ledger.State, error) {
	switch r.Header.Get("Authorization") {
	case "Bearer admin-token":
		return ledger.NewThread(ledger.WithMetadata(map[string]string{"role": "admin"})), nil
	case "Bearer viewer-token":
		return ledger.NewThread(ledger.WithMetadata(map[string]string{"role": "viewer"})), nil
	}
	return nil, errors.New("unknown token")
}

// readOnlyForViewers shows viewers read-only tools only.
func readOnlyForViewers(_ context.Context, st ledger.State, tools []tool.Tool) []tool.Tool {
	if role, _ := st.Metadata("role"); role == "admin" {
		return tools
	}
	var out []tool.Tool
	for _, t := range tools {
		if t.Hints.ReadOnly {
			out = append(out, t)
		}
	}
	return out
}

func TestServerIdentitySelectsFilter(t *testing.T) {
	url := serveHTTP(t, demoRegistry(t), mcp.WithIdentify(bearerIdentity), mcp.WithFilter(readOnlyForViewers))
	client := func(token string) *mcp.Client {
		c, err := mcp.NewClient(mcp.WithName("remote"), mcp.WithHTTP(url), mcp.WithHeader("Authorization", "Bearer "+token))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = c.Close() })
		return c
	}
	names := func(c *mcp.Client) []string {
		tools, err := c.Tools(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, tl := range tools {
			out = append(out, tl.Name)
		}
		return out
	}
	viewer, admin := client("viewer-token"), client("admin-token")
	if got, want := names(viewer), []string{"echo", "weather"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("viewer sees %v, want %v", got, want)
	}
	if got := names(admin); len(got) != 5 {
		t.Fatalf("admin sees %v", got)
	}
	// A hidden tool is refused even when called by name.
	v, err := viewer.Call(context.Background(), "fail", nil)
	if err != nil {
		t.Fatal(err)
	}
	if r := v.(*tool.Result); !r.IsError || r.Content != `unknown tool "fail". Tools available to this caller: echo, weather.` {
		t.Fatalf("viewer calling fail: %+v", r)
	}
	v, err = admin.Call(context.Background(), "fail", nil)
	if err != nil || v.(*tool.Result).Content != "the disk is full" {
		t.Fatalf("admin calling fail: %v, %v", v, err)
	}
	stranger := client("stolen")
	err = stranger.Connect(context.Background())
	if err == nil || !strings.Contains(err.Error(), "Unauthorized") {
		t.Fatalf("unknown token: %v", err)
	}
}

func TestServerRefusesForeignHostsOriginsAndBigBodies(t *testing.T) {
	url := serveHTTP(t, demoRegistry(t), mcp.WithMaxBodyBytes(2048), mcp.WithAllowedHosts("mcp.example.com"),
		mcp.WithAllowedOrigins("https://app.example.com"))
	initialize := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`
	post := func(host, origin string, body io.Reader, length int64) (int, string) {
		t.Helper()
		req, err := http.NewRequest(http.MethodPost, url, body)
		if err != nil {
			t.Fatal(err)
		}
		req.ContentLength = length
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if host != "" {
			req.Host = host
		}
		if origin != "" {
			req.Header.Set("Origin", origin)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, strings.TrimSpace(string(b))
	}
	big := `{"jsonrpc":"2.0","id":1,"method":"ping","params":{"pad":"` + strings.Repeat("x", 4096) + `"}}`
	cases := []struct {
		name, host, origin, body string
		chunked                  bool
		status                   int
		text                     string
	}{
		{"loopback", "", "", initialize, false, 200, ""},
		{"localhost name", "localhost:9", "", initialize, false, 200, ""},
		{"allowed host", "mcp.example.com", "", initialize, false, 200, ""},
		{"foreign host", "evil.example:80", "", initialize, false, 403, `Forbidden: Host "evil.example:80" is not allowed`},
		{"loopback origin", "", "http://localhost:5173", initialize, false, 200, ""},
		{"allowed origin", "", "https://app.example.com", initialize, false, 200, ""},
		{"foreign origin", "", "http://evil.example", initialize, false, 403, `Forbidden: Origin "http://evil.example" is not allowed`},
		{"null origin", "", "null", initialize, false, 403, `Forbidden: Origin "null" is not allowed`},
		{"big body", "", "", big, false, 413, fmt.Sprintf("request body of %d bytes exceeds the limit of 2048", len(big))},
		{"big chunked body", "", "", big, true, 413, "request body exceeds 2048 bytes"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			length := int64(len(tc.body))
			var body io.Reader = strings.NewReader(tc.body)
			if tc.chunked {
				length, body = -1, io.MultiReader(body)
			}
			status, text := post(tc.host, tc.origin, body, length)
			if status != tc.status || (tc.text != "" && text != tc.text) {
				t.Fatalf("got %d %q, want %d %q", status, text, tc.status, tc.text)
			}
		})
	}
}

func TestNewServerOptions(t *testing.T) {
	reg := tool.NewRegistry()
	cases := []struct {
		name string
		reg  tool.Registry
		opts []mcp.ServerOption
		want string
	}{
		{"nil registry", nil, nil, "mcp: invalid option: nil registry"},
		{"negative body", reg, []mcp.ServerOption{mcp.WithMaxBodyBytes(-1)}, "mcp: invalid option: WithMaxBodyBytes: -1 is not positive"},
		{"zero body", reg, []mcp.ServerOption{mcp.WithMaxBodyBytes(0)}, "mcp: invalid option: WithMaxBodyBytes: 0 is not positive"},
		{"nil option", reg, []mcp.ServerOption{nil}, "mcp: invalid option: nil ServerOption"},
		{"empty name", reg, []mcp.ServerOption{mcp.WithImplementation("", "1")}, "mcp: invalid option: WithImplementation: empty name"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s, err := mcp.NewServer(tc.reg, tc.opts...)
			if s != nil || err == nil || err.Error() != tc.want || !errors.Is(err, mcp.ErrOption) {
				t.Fatalf("got %v, %v; want %q", s, err, tc.want)
			}
		})
	}
}

func TestServerSpans(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	defer tp.Shutdown(context.Background())
	srv, err := mcp.NewServer(demoRegistry(t), mcp.WithTracer(tp.Tracer("test")))
	if err != nil {
		t.Fatal(err)
	}
	c, err := mcp.NewClient(mcp.WithName("local"), mcp.WithInProcess(srv))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Tools(context.Background()); err != nil {
		t.Fatal(err)
	}
	callText(t, c, "echo", map[string]any{"text": "hi"})
	if _, err := c.Call(context.Background(), "fail", nil); err != nil {
		t.Fatal(err)
	}
	spans := map[string]sdktrace.ReadOnlySpan{}
	for _, s := range rec.Ended() {
		spans[s.Name()] = s
	}
	attrs := func(s sdktrace.ReadOnlySpan) map[attribute.Key]string {
		m := map[attribute.Key]string{}
		for _, kv := range s.Attributes() {
			m[kv.Key] = kv.Value.Emit()
		}
		return m
	}
	call, exec := spans["tools/call echo"], spans["execute_tool echo"]
	if call == nil || exec == nil {
		t.Fatalf("spans = %v", keys(spans))
	}
	a := attrs(call)
	if a["mcp.method.name"] != "tools/call" || a["gen_ai.tool.name"] != "echo" || a["gen_ai.operation.name"] != "execute_tool" {
		t.Fatalf("tools/call span attributes = %v", a)
	}
	if exec.Parent().SpanID() != call.SpanContext().SpanID() {
		t.Fatal("execute_tool is not a child of the tools/call span")
	}
	if l := spans["tools/list"]; l == nil || attrs(l)["mcp.method.name"] != "tools/list" {
		t.Fatalf("no tools/list span: %v", keys(spans))
	}
	fail := spans["tools/call fail"]
	if fail == nil || fail.Status().Code != codes.Error || attrs(fail)["error.type"] != "tool_error" || fail.Status().Description != "the disk is full" {
		t.Fatalf("failed call span: %+v", fail)
	}
}

func keys[V any](m map[string]V) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

func TestServerNotifiesToolChanges(t *testing.T) {
	served := tool.NewRegistry()
	if err := served.Register(tool.Tool{Name: "one"}, func(context.Context, tool.Sandbox, map[string]any) (any, error) { return "1", nil }); err != nil {
		t.Fatal(err)
	}
	srv, err := mcp.NewServer(served)
	if err != nil {
		t.Fatal(err)
	}
	for _, transport := range []string{"in-process", "http"} {
		t.Run(transport, func(t *testing.T) {
			opt := mcp.WithInProcess(srv)
			if transport == "http" {
				opt = mcp.WithHTTP(serveServer(t, srv))
			}
			c, err := mcp.NewClient(mcp.WithName("up"), opt)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			mounted := tool.NewRegistry(tool.WithMCPServer(c))
			if err := mounted.Err(); err != nil {
				t.Fatal(err)
			}
			changed := make(chan []string, 4)
			c.OnToolsChanged(func() {
				var names []string
				for _, tl := range mounted.Tools() {
					names = append(names, tl.Name)
				}
				changed <- names
			})
			name := "two_" + strings.ReplaceAll(transport, "-", "_")
			if err := served.Register(tool.Tool{Name: name}, func(context.Context, tool.Sandbox, map[string]any) (any, error) { return "2", nil }); err != nil {
				t.Fatal(err)
			}
			srv.Refresh()
			var want []string
			for _, tl := range served.Tools() {
				want = append(want, "up__"+tl.Name)
			}
			waitFor(t, changed, want)
		})
	}
}

func TestServeAndShutdown(t *testing.T) {
	srv, err := mcp.NewServer(demoRegistry(t))
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx, ln) }()
	c, err := mcp.NewClient(mcp.WithName("remote"), mcp.WithHTTP(fmt.Sprintf("http://%s/mcp", ln.Addr())))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if got := callText(t, c, "echo", map[string]any{"text": "served"}); got != "served" {
		t.Fatalf("echo = %q", got)
	}
	cancel() // with the client's session still open
	if err := <-done; err != nil {
		t.Fatalf("Serve = %v", err)
	}
	err = srv.ListenAndServe(context.Background(), "127.0.0.1:-1")
	if err == nil || !strings.HasPrefix(err.Error(), "mcp: listen: ") {
		t.Fatalf("ListenAndServe on a bad address = %v", err)
	}
}

func TestServerRecoversPanicsOutsideTools(t *testing.T) {
	url := serveHTTP(t, demoRegistry(t),
		mcp.WithIdentify(func(r *http.Request) (ledger.State, error) {
			if r.Header.Get("Authorization") == "" {
				panic("identify broke")
			}
			return ledger.NewThread(), nil
		}),
		mcp.WithFilter(func(_ context.Context, st ledger.State, tools []tool.Tool) []tool.Tool {
			if _, ok := st.Metadata("x"); !ok {
				panic("filter broke")
			}
			return tools
		}))
	c, err := mcp.NewClient(mcp.WithName("remote"), mcp.WithHTTP(url), mcp.WithHeader("Authorization", "Bearer x"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	v, err := c.Call(context.Background(), "echo", map[string]any{"text": "x"})
	if err != nil {
		t.Fatal(err)
	}
	if r := v.(*tool.Result); !r.IsError || r.Content != "the server failed while handling this call (filter broke)" {
		t.Fatalf("panicking filter: %+v", r)
	}
	resp, err := http.Post(url, "application/json", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"ping"}`))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusUnauthorized || strings.TrimSpace(string(body)) != "Unauthorized: the server could not identify the request" {
		t.Fatalf("panicking identify hook: %d %q", resp.StatusCode, body)
	}
}

func TestServerStateless(t *testing.T) {
	c, err := mcp.NewClient(mcp.WithName("remote"), mcp.WithHTTP(serveHTTP(t, demoRegistry(t), mcp.WithStateless())))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if got := callText(t, c, "echo", map[string]any{"text": "stateless"}); got != "stateless" {
		t.Fatalf("echo = %q", got)
	}
}

func TestServerCallerState(t *testing.T) {
	reg := tool.NewRegistry()
	if err := reg.Register(tool.Tool{Name: "whoami"}, func(ctx context.Context, _ tool.Sandbox, _ map[string]any) (any, error) {
		st, ok := mcp.CallerState(ctx)
		req, ok2 := mcp.CallRequest(ctx)
		if !ok || !ok2 || req.Params.Name != "whoami" {
			return nil, errors.New("no caller")
		}
		role, _ := st.Metadata("role")
		return role, nil
	}); err != nil {
		t.Fatal(err)
	}
	url := serveHTTP(t, reg, mcp.WithIdentify(bearerIdentity))
	c, err := mcp.NewClient(mcp.WithName("remote"), mcp.WithHTTP(url), mcp.WithHeader("Authorization", "Bearer viewer-token"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if got := callText(t, c, "whoami", nil); got != "viewer" {
		t.Fatalf("whoami = %q", got)
	}
	if _, ok := mcp.CallerState(context.Background()); ok {
		t.Fatal("CallerState outside a call")
	}
	// A client cannot pose as another caller by sending the server's
	// internal identity header.
	c2, err := mcp.NewClient(mcp.WithName("remote"), mcp.WithHTTP(url), mcp.WithHeader("Authorization", "Bearer viewer-token"),
		mcp.WithHeader("X-Lode-Mcp-Identity", "1"))
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close()
	if got := callText(t, c2, "whoami", nil); got != "viewer" {
		t.Fatalf("whoami with a forged header = %q", got)
	}
}

func TestClientHTTPServerRestart(t *testing.T) {
	srv, err := mcp.NewServer(demoRegistry(t))
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	start := func(ln net.Listener) (stop func()) {
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- srv.Serve(ctx, ln) }()
		return func() {
			cancel()
			if err := <-done; err != nil {
				t.Error(err)
			}
		}
	}
	stop := start(ln)
	c, err := mcp.NewClient(mcp.WithName("remote"), mcp.WithHTTP("http://"+addr+"/mcp"), mcp.WithCallTimeout(10*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	callText(t, c, "echo", map[string]any{"text": "before"})
	stop()
	_, err = c.Call(context.Background(), "echo", map[string]any{"text": "down"})
	if !errors.Is(err, mcp.ErrConnectionLost) {
		t.Fatalf("call while the server is down: %v, want ErrConnectionLost", err)
	}
	ln, err = net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	stop = start(ln)
	defer stop()
	if got := callText(t, c, "echo", map[string]any{"text": "after"}); got != "after" {
		t.Fatalf("echo after restart = %q", got)
	}
}

// A server that restarts while the client is idle has forgotten the
// session; the next call starts a new one and goes through.
func TestClientHTTPSessionForgotten(t *testing.T) {
	srv, err := mcp.NewServer(demoRegistry(t))
	if err != nil {
		t.Fatal(err)
	}
	url := serveServer(t, srv)
	c, err := mcp.NewClient(mcp.WithName("remote"), mcp.WithHTTP(url))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	callText(t, c, "echo", map[string]any{"text": "one"})
	for ss := range srv.SDK().Sessions() {
		_ = ss.Close()
	}
	if got := callText(t, c, "echo", map[string]any{"text": "two"}); got != "two" {
		t.Fatalf("echo after the session was dropped = %q", got)
	}
}

// Parts a tool returns become MCP content of the matching type.
func TestServerMapsParts(t *testing.T) {
	reg := tool.NewRegistry()
	if err := reg.Register(tool.Tool{Name: "parts"}, func(context.Context, tool.Sandbox, map[string]any) (any, error) {
		return &tool.Result{Value: map[string]any{"n": 1}, Parts: []artifact.Artifact{
			artifact.Text{Content: "more text"},
			artifact.Image{URL: "https://img.example/cat.png", MIMEType: "image/png"},
			artifact.Audio{MIMEType: "audio/wav", Data: []byte{1}},
			artifact.Resource{URI: "file:///b.bin", MIMEType: "application/octet-stream", Blob: []byte{2}},
			artifact.ResourceLink{URI: "file:///a.txt", Name: "a.txt", MIMEType: "text/plain"},
			artifact.Unknown{Type: "video", Raw: json.RawMessage(`{"kind":"video","url":"v"}`)},
			artifact.Reasoning{Content: "hm"},
		}}, nil
	}); err != nil {
		t.Fatal(err)
	}
	srv, err := mcp.NewServer(reg)
	if err != nil {
		t.Fatal(err)
	}
	ct, st := sdk.NewInMemoryTransports()
	ss, err := srv.Connect(context.Background(), st)
	if err != nil {
		t.Fatal(err)
	}
	defer ss.Close()
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "t", Version: "1"}, nil).Connect(context.Background(), ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	res, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: "parts"})
	if err != nil {
		t.Fatal(err)
	}
	got, _ := json.Marshal(res.Content)
	want := `[{"type":"text","text":"{\"n\":1}"},{"type":"text","text":"more text"},` +
		`{"type":"resource_link","mimeType":"image/png","uri":"https://img.example/cat.png","name":"image"},` +
		`{"type":"audio","mimeType":"audio/wav","data":"AQ=="},` +
		`{"type":"resource","resource":{"uri":"file:///b.bin","mimeType":"application/octet-stream","blob":"Ag=="}},` +
		`{"type":"resource_link","mimeType":"text/plain","uri":"file:///a.txt","name":"a.txt"},` +
		`{"type":"text","text":"{\"kind\":\"video\",\"url\":\"v\"}"},` +
		`{"type":"text","text":"{\"kind\":\"reasoning\",\"content\":\"hm\"}"}]`
	if string(got) != want {
		t.Fatalf("content:\n%s\nwant\n%s", got, want)
	}
	if sc, _ := json.Marshal(res.StructuredContent); string(sc) != `{"n":1}` {
		t.Fatalf("structured content = %s", sc)
	}
}

func TestClientProtocolVersion(t *testing.T) {
	srv, err := mcp.NewServer(demoRegistry(t))
	if err != nil {
		t.Fatal(err)
	}
	c, err := mcp.NewClient(mcp.WithName("old"), mcp.WithInProcess(srv), mcp.WithProtocolVersion("2025-06-18"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	sess, err := c.Session(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if v := sess.InitializeResult().ProtocolVersion; v != "2025-06-18" {
		t.Fatalf("negotiated %q", v)
	}
	callText(t, c, "echo", map[string]any{"text": "old protocol"})
}

// WithState gives the filter its state where no HTTP identity exists, and
// WithHandler's options (here a result budget) apply to served calls.
func TestServerStateAndHandler(t *testing.T) {
	reg := demoRegistry(t)
	viewer := ledger.NewThread(ledger.WithMetadata(map[string]string{"role": "viewer"}))
	srv, err := mcp.NewServer(reg, mcp.WithState(viewer), mcp.WithFilter(readOnlyForViewers),
		mcp.WithHandler(xtool.NewHandler(reg, xtool.WithBudget(tool.Budget{Bytes: 40}))))
	if err != nil {
		t.Fatal(err)
	}
	ct, st := sdk.NewInMemoryTransports()
	ctx, cancel := context.WithCancel(context.Background())
	ran := make(chan error, 1)
	go func() { ran <- srv.Run(ctx, st) }()
	c, err := mcp.NewClient(mcp.WithName("local"), mcp.WithTransport(func(context.Context) (sdk.Transport, error) { return ct, nil }))
	if err != nil {
		t.Fatal(err)
	}
	tools, err := c.Tools(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(tools) != 2 {
		t.Fatalf("viewer tools = %v", tools)
	}
	got := callText(t, c, "echo", map[string]any{"text": strings.Repeat("long ", 40)})
	if !strings.Contains(got, "lode cut") || len(got) > 400 {
		t.Fatalf("budget not applied: %q", got)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	cancel()
	<-ran
}

func TestWithInProcessNil(t *testing.T) {
	c, err := mcp.NewClient(mcp.WithName("none"), mcp.WithInProcess(nil))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := c.Connect(context.Background()); err == nil || err.Error() != `mcp: server "none": mcp: WithInProcess: nil server` {
		t.Fatalf("Connect = %v", err)
	}
}

// A registry tool the SDK refuses to list is still callable, and the rest
// are served.
func TestServerSkipsToolTheSDKRefuses(t *testing.T) {
	reg := demoRegistry(t)
	err := reg.Register(tool.Tool{Name: "odd", Schema: json.RawMessage(`{"type":"object","properties":{"a":{"type":"string","x-mcp-header":"bad header"}}}`)},
		func(context.Context, tool.Sandbox, map[string]any) (any, error) { return "odd ran", nil })
	if err != nil {
		t.Fatal(err)
	}
	srv, err := mcp.NewServer(reg)
	if err != nil {
		t.Fatal(err)
	}
	c, err := mcp.NewClient(mcp.WithName("local"), mcp.WithInProcess(srv))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	tools, err := c.Tools(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, tl := range tools {
		if tl.Name == "odd" {
			t.Fatal("odd was listed")
		}
	}
	if len(tools) != 5 {
		t.Fatalf("tools = %d, want 5", len(tools))
	}
	if got := callText(t, c, "odd", nil); got != "odd ran" {
		t.Fatalf("odd = %q", got)
	}
}

// syncBuffer is a bytes.Buffer that the go-sdk's logging transport may
// write from its own goroutines.
type syncBuffer struct {
	mu  sync.Mutex
	buf strings.Builder
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// A caller cannot probe for the names of tools it may not use: calling a
// hidden tool gives the very result, byte for byte, of calling a tool that
// does not exist, through the Handler and over MCP alike. Two servers show
// a viewer the same two tools: one also holds hidden tools, the other
// nothing else; every name gets the same answer from both.
func TestHiddenToolsCannotBeProbed(t *testing.T) {
	viewer := ledger.NewThread(ledger.WithMetadata(map[string]string{"role": "viewer"}))
	hiding := demoRegistry(t) // echo and weather visible; boom, fail and stall hidden
	bare := tool.NewRegistry()
	for _, tl := range hiding.Tools() {
		if tl.Hints.ReadOnly {
			if err := bare.Register(tl, func(context.Context, tool.Sandbox, map[string]any) (any, error) { return nil, nil }); err != nil {
				t.Fatal(err)
			}
		}
	}
	long := strings.Repeat("fail", 100)
	cases := []struct {
		label, name string
		args        any
	}{
		{"hidden", "fail", nil},
		{"hidden, with arguments", "boom", map[string]any{"x": 1}},
		{"hidden, slow", "stall", nil},
		{"missing", "ghost", nil},
		{"garbled", "fail\x00", nil},
		{"spaces", " fail ", nil},
		{"empty", "", nil},
		{"long", long, nil},
	}
	want := func(name string) string {
		q := fmt.Sprintf("%q", name)
		if len(name) > 100 {
			q = fmt.Sprintf("%q… (%d bytes)", name[:100], len(name))
		}
		return "unknown tool " + q + ". Tools available to this caller: echo, weather."
	}

	// Through the Handler, as the server runs it: for a caller outside a
	// loop turn.
	for _, c := range cases {
		var results []artifact.ToolResult
		for _, reg := range []tool.Registry{hiding, bare} {
			ctx := xtool.WithCaller(xtool.WithOffered(context.Background(), readOnlyForViewers(context.Background(), viewer, reg.Tools())), viewer)
			args, _ := json.Marshal(c.args)
			results = append(results, xtool.NewHandler(reg).Execute(ctx, artifact.ToolCall{ID: "1", Name: c.name, Arguments: string(args)}))
		}
		if !reflect.DeepEqual(results[0], results[1]) {
			t.Errorf("%s: the handler tells hidden from missing:\n%+v\n%+v", c.label, results[0], results[1])
		}
		if r := results[0]; !r.IsError || r.Content != want(c.name) {
			t.Errorf("%s: handler result %+v, want %q", c.label, r, want(c.name))
		}
	}

	// Over MCP: everything the server writes to the client, byte for byte.
	serve := func(reg tool.Registry) (wire string, results []*sdk.CallToolResult) {
		srv, err := mcp.NewServer(reg, mcp.WithState(viewer), mcp.WithFilter(readOnlyForViewers))
		if err != nil {
			t.Fatal(err)
		}
		var log syncBuffer
		ct, st := sdk.NewInMemoryTransports()
		ss, err := srv.Connect(context.Background(), &sdk.LoggingTransport{Transport: st, Writer: &log})
		if err != nil {
			t.Fatal(err)
		}
		cs, err := sdk.NewClient(&sdk.Implementation{Name: "t", Version: "1"}, nil).Connect(context.Background(), ct, nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range cases {
			res, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: c.name, Arguments: c.args})
			if err != nil {
				t.Fatalf("%s: transport error %v", c.label, err)
			}
			results = append(results, res)
		}
		_ = cs.Close()
		_ = ss.Wait()
		// The logging transport may record two replies out of order, so
		// the lines are compared as a set: each carries its request id.
		var lines []string
		for line := range strings.Lines(log.String()) {
			if strings.HasPrefix(line, "write: ") {
				lines = append(lines, line)
			}
		}
		slices.Sort(lines)
		return strings.Join(lines, ""), results
	}
	hidWire, hidResults := serve(hiding)
	bareWire, _ := serve(bare)
	if hidWire != bareWire {
		t.Errorf("the server tells hidden from missing:\n%s\n%s", hidWire, bareWire)
	}
	if n := strings.Count(hidWire, `"isError":true`); n != len(cases) {
		t.Errorf("%d error results on the wire for %d calls:\n%s", n, len(cases), hidWire)
	}
	for i, c := range cases {
		r := hidResults[i]
		if len(r.Content) != 1 || !r.IsError || r.StructuredContent != nil {
			t.Errorf("%s: MCP result %+v", c.label, r)
			continue
		}
		if text := r.Content[0].(*sdk.TextContent).Text; text != want(c.name) {
			t.Errorf("%s: MCP text %q, want %q", c.label, text, want(c.name))
		}
	}
}
