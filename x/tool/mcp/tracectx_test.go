package mcp_test

import (
	"bytes"
	"context"
	"encoding/json"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/lodeworks/lode/artifact"
	"github.com/lodeworks/lode/ledger"
	"github.com/lodeworks/lode/tool"
	xtool "github.com/lodeworks/lode/x/tool"
	"github.com/lodeworks/lode/x/tool/mcp"
)

// tracedSpan is what the server process reports of each span it ended.
type tracedSpan struct {
	Name, TraceID, SpanID, ParentID string
	RemoteParent                    bool
}

// traceServerMain serves an echo tool on stdio with a tracer that records
// in memory, and when stdin ends writes the spans it recorded to
// $TRACE_OUT, one JSON object per line.
func traceServerMain() error {
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	reg := tool.NewRegistry()
	type echoIn struct {
		Text string `json:"text"`
	}
	if err := tool.RegisterFunc(reg, "echo", "Echoes text", func(_ context.Context, in echoIn) (string, error) { return in.Text, nil }); err != nil {
		return err
	}
	srv, err := mcp.NewServer(reg, mcp.WithTracer(tp.Tracer("server")))
	if err != nil {
		return err
	}
	if err := srv.ServeStdio(context.Background()); err != nil {
		return err
	}
	f, err := os.Create(os.Getenv("TRACE_OUT"))
	if err != nil {
		return err
	}
	enc := json.NewEncoder(f)
	for _, s := range exp.GetSpans() {
		if err := enc.Encode(tracedSpan{Name: s.Name, TraceID: s.SpanContext.TraceID().String(), SpanID: s.SpanContext.SpanID().String(),
			ParentID: s.Parent.SpanID().String(), RemoteParent: s.Parent.IsRemote()}); err != nil {
			return err
		}
	}
	return f.Close()
}

// A call from one process to a tool served by another is one trace: the
// client sends its span's context in the request's _meta, the server's
// span for the request continues it, and the server's execution span hangs
// under that. Each process records its spans in memory of its own.
func TestTraceCrossesProcesses(t *testing.T) {
	out := filepath.Join(t.TempDir(), "spans.jsonl")
	c, err := mcp.NewClient(mcp.WithName("remote"), mcp.WithStdio(os.Args[0], "-test.run=^$"),
		mcp.WithEnv(helperEnv+"=trace", "TRACE_OUT="+out, helperRace), mcp.WithCallTimeout(30*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	reg := tool.NewRegistry(tool.WithMCPServer(c))
	if err := reg.Err(); err != nil {
		t.Fatal(err)
	}
	h := xtool.NewHandler(reg, xtool.WithTracer(tp.Tracer("client")))
	ctx, root := tp.Tracer("client").Start(context.Background(), "turn")
	res := h.Execute(ctx, artifact.ToolCall{ID: "c1", Name: "remote__echo", Arguments: `{"text":"hi"}`})
	root.End()
	if res.IsError || res.Content != "hi" {
		t.Fatalf("the call failed: %+v", res)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}

	var clientCall sdktrace.ReadOnlySpan
	for _, s := range exp.GetSpans().Snapshots() {
		if s.Name() == "execute_tool remote__echo" {
			clientCall = s
		}
	}
	if clientCall == nil {
		t.Fatalf("the client recorded no execute_tool span: %v", exp.GetSpans())
	}
	raw, err := os.ReadFile(out)
	if err != nil {
		t.Fatalf("the server process wrote no spans: %v", err)
	}
	spans := map[string]tracedSpan{}
	dec := json.NewDecoder(bytes.NewReader(raw))
	for dec.More() {
		var s tracedSpan
		if err := dec.Decode(&s); err != nil {
			t.Fatal(err)
		}
		spans[s.Name] = s
	}
	want := clientCall.SpanContext()
	call, ok := spans["tools/call echo"]
	if !ok {
		t.Fatalf("the server recorded no tools/call span: %v", spans)
	}
	if call.TraceID != want.TraceID().String() || call.ParentID != want.SpanID().String() || !call.RemoteParent {
		t.Errorf("server span %+v: want trace %s under the client's span %s, as a remote parent", call, want.TraceID(), want.SpanID())
	}
	exec, ok := spans["execute_tool echo"]
	if !ok {
		t.Fatalf("the server recorded no execute_tool span: %v", spans)
	}
	if exec.TraceID != want.TraceID().String() || exec.ParentID != call.SpanID {
		t.Errorf("server execution span %+v: want trace %s under the server's span %s", exec, want.TraceID(), call.SpanID)
	}
}

// The server continues the trace a request's _meta names, tracestate
// included, and starts a trace of its own when the context it was sent is
// missing or malformed; the call is answered either way.
func TestServerContinuesTraceFromMeta(t *testing.T) {
	const parent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	cases := []struct {
		name, meta        string
		traceID, parentID string
		traceState        string
	}{
		{"valid", `{"traceparent":"` + parent + `","tracestate":"vendor=abc"}`, "4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7", "vendor=abc"},
		{"no-meta", ``, "", "", ""},
		{"malformed", `{"traceparent":"00-not-a-trace-01"}`, "", "", ""},
		{"all-zero", `{"traceparent":"00-00000000000000000000000000000000-0000000000000000-01"}`, "", "", ""},
		{"not-a-string", `{"traceparent":42}`, "", "", ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			rec := tracetest.NewSpanRecorder()
			tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
			s := serveLines(t, demoRegistry(t), nil, nil, mcp.WithTracer(tp.Tracer("server")))
			s.initialize()
			meta := ""
			if tc.meta != "" {
				meta = `,"_meta":` + tc.meta
			}
			s.send(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hi"}` + meta + `}}`)
			if got := decodeReply(t, s.next()).text(t); got != "hi" {
				t.Fatalf("the call answered %q", got)
			}
			var call sdktrace.ReadOnlySpan
			for _, sp := range rec.Ended() {
				if sp.Name() == "tools/call echo" {
					call = sp
				}
			}
			if call == nil {
				t.Fatal("no tools/call span")
			}
			p := call.Parent()
			if tc.traceID == "" {
				if p.IsValid() {
					t.Fatalf("span has parent %v, want a new trace", p)
				}
				return
			}
			if call.SpanContext().TraceID().String() != tc.traceID || p.SpanID().String() != tc.parentID || !p.IsRemote() || p.TraceState().String() != tc.traceState {
				t.Fatalf("span in trace %s under %s (remote %v, tracestate %q); want trace %s under %s, tracestate %q",
					call.SpanContext().TraceID(), p.SpanID(), p.IsRemote(), p.TraceState(), tc.traceID, tc.parentID, tc.traceState)
			}
		})
	}
}

// What a served tool asks of the client (here an elicitation) carries the
// trace context of the tool's execution, so the client can continue it.
func TestServerRequestsCarryTrace(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	reg := tool.NewRegistry()
	err := reg.Register(tool.Tool{Name: "ask", Description: "Asks the user"}, func(ctx context.Context, _ tool.Sandbox, _ map[string]any) (any, error) {
		req, _ := mcp.CallRequest(ctx)
		res, err := req.Session.Elicit(ctx, &sdk.ElicitParams{Message: "Go on?", RequestedSchema: map[string]any{"type": "object"}})
		if err != nil {
			return nil, err
		}
		return res.Action, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	srv, err := mcp.NewServer(reg, mcp.WithTracer(tp.Tracer("server")))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	seen := make(chan any, 1)
	client := sdk.NewClient(&sdk.Implementation{Name: "t", Version: "1"}, &sdk.ClientOptions{
		ElicitationHandler: func(_ context.Context, r *sdk.ElicitRequest) (*sdk.ElicitResult, error) {
			seen <- r.Params.GetMeta()["traceparent"]
			return &sdk.ElicitResult{Action: "decline"}, nil
		},
	})
	ct, st := sdk.NewInMemoryTransports()
	ss, err := srv.Connect(ctx, st)
	if err != nil {
		t.Fatal(err)
	}
	defer ss.Close()
	cs, err := client.Connect(ctx, ct, &sdk.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "ask", Arguments: map[string]any{}})
	if err != nil || res.IsError {
		t.Fatalf("call: %v %+v", err, res)
	}
	got := <-seen
	var exec sdktrace.ReadOnlySpan
	for _, sp := range rec.Ended() {
		if sp.Name() == "execute_tool ask" {
			exec = sp
		}
	}
	if exec == nil {
		t.Fatal("no execute_tool span")
	}
	sc := exec.SpanContext()
	if want := "00-" + sc.TraceID().String() + "-" + sc.SpanID().String() + "-01"; got != want {
		t.Fatalf("the elicitation's traceparent is %v, want %s", got, want)
	}
}

// The server's spans of a call name the conversation the caller's _meta
// names (lode/conversation.id, lode/session.id), and never a caller's
// identity a peer claims there: the server's own door says who calls.
func TestServerNamesTheCallersConversation(t *testing.T) {
	ann := ledger.NewThread(ledger.WithMetadata(map[string]string{"lode.user": "ann", "tenant": "acme", "role": "editor"}))
	cases := []struct {
		name, meta string
		opts       []mcp.ServerOption
		want       map[string]string
	}{
		{"the server's own caller", `{"lode/conversation.id":"c1","lode/user.id":"mallory"}`, []mcp.ServerOption{mcp.WithState(ann)},
			map[string]string{"gen_ai.conversation.id": "c1", "session.id": "c1", "user.id": "ann", "lode.tenant": "acme", "user.roles": `["editor"]`}},
		{"the server's own caller, no conversation", ``, []mcp.ServerOption{mcp.WithState(ann)},
			map[string]string{"user.id": "ann", "lode.tenant": "acme", "user.roles": `["editor"]`}},
		{"conversation and session", `{"lode/conversation.id":"c1","lode/session.id":"s1"}`, nil,
			map[string]string{"gen_ai.conversation.id": "c1", "session.id": "s1"}},
		{"conversation only: its own session", `{"lode/conversation.id":"c1"}`, nil,
			map[string]string{"gen_ai.conversation.id": "c1", "session.id": "c1"}},
		{"a claimed user is not taken", `{"lode/conversation.id":"c1","user.id":"mallory","lode/user.id":"mallory"}`, nil,
			map[string]string{"gen_ai.conversation.id": "c1", "session.id": "c1"}},
		{"not a string", `{"lode/conversation.id":42}`, nil, map[string]string{}},
		{"none", ``, nil, map[string]string{}},
	}
	keys := []string{"gen_ai.conversation.id", "session.id", "user.id", "user.roles", "lode.tenant"}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			rec := tracetest.NewSpanRecorder()
			tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
			s := serveLines(t, demoRegistry(t), nil, nil, append(tc.opts, mcp.WithTracer(tp.Tracer("server")))...)
			s.initialize()
			meta := ""
			if tc.meta != "" {
				meta = `,"_meta":` + tc.meta
			}
			s.send(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hi"}` + meta + `}}`)
			if got := decodeReply(t, s.next()).text(t); got != "hi" {
				t.Fatalf("the call answered %q", got)
			}
			seen := 0
			for _, sp := range rec.Ended() {
				if sp.Name() != "tools/call echo" && sp.Name() != "execute_tool echo" {
					continue
				}
				seen++
				got := map[string]string{}
				for _, kv := range sp.Attributes() {
					if slices.Contains(keys, string(kv.Key)) {
						got[string(kv.Key)] = kv.Value.Emit()
					}
				}
				if !maps.Equal(got, tc.want) {
					t.Errorf("span %q: %v, want %v", sp.Name(), got, tc.want)
				}
			}
			if seen != 2 {
				t.Errorf("%d of the call's two spans recorded", seen)
			}
		})
	}
}
