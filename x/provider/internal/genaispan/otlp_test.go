package genaispan_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"

	"github.com/lodeworks/lode/artifact"
	"github.com/lodeworks/lode/capture"
	"github.com/lodeworks/lode/ledger"
	"github.com/lodeworks/lode/loop"
	"github.com/lodeworks/lode/provider"
	"github.com/lodeworks/lode/tool"
	"github.com/lodeworks/lode/x/provider/anthropic"
	"github.com/lodeworks/lode/x/provider/openai"
	"github.com/lodeworks/lode/x/provider/openai/openaitest"
	xtool "github.com/lodeworks/lode/x/tool"
)

// secret is planted in the user's prompt and in a tool's result.
const secret = "sk-plant-7f3a9c2e5b1d"

// receiver is an OTLP/HTTP trace endpoint: it keeps every body it is
// sent, as sent.
type receiver struct {
	srv    *httptest.Server
	mu     sync.Mutex
	bodies [][]byte
}

func newReceiver(t *testing.T) *receiver {
	r := &receiver{}
	r.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		b, err := io.ReadAll(req.Body)
		if err != nil || req.URL.Path != "/v1/traces" {
			http.Error(w, "bad request", http.StatusBadRequest)
			return
		}
		r.mu.Lock()
		r.bodies = append(r.bodies, b)
		r.mu.Unlock()
		w.Header().Set("Content-Type", "application/x-protobuf")
		out, _ := proto.Marshal(&coltracepb.ExportTraceServiceResponse{})
		_, _ = w.Write(out)
	}))
	t.Cleanup(r.srv.Close)
	return r
}

// spans decodes every body with the OTLP protobuf types.
func (r *receiver) spans(t *testing.T) (all []*tracepb.Span, raw []byte) {
	t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, b := range r.bodies {
		raw = append(raw, b...)
		var req coltracepb.ExportTraceServiceRequest
		if err := proto.Unmarshal(b, &req); err != nil {
			t.Fatalf("OTLP body does not decode: %v", err)
		}
		for _, rs := range req.ResourceSpans {
			for _, ss := range rs.ScopeSpans {
				all = append(all, ss.Spans...)
			}
		}
	}
	return all, raw
}

// exporting is a tracer whose spans go over OTLP/HTTP to r; end flushes
// them.
func exporting(t *testing.T, r *receiver) (*sdktrace.TracerProvider, func()) {
	t.Helper()
	exp, err := otlptracehttp.New(t.Context(), otlptracehttp.WithEndpointURL(r.srv.URL+"/v1/traces"))
	if err != nil {
		t.Fatal(err)
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	return tp, func() {
		if err := tp.Shutdown(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
}

func attr(s *tracepb.Span, key string) (string, bool) {
	for _, kv := range s.Attributes {
		if kv.Key == key {
			return kv.Value.GetStringValue(), true
		}
	}
	return "", false
}

// schemas are the conventions' schemas of the three content attributes,
// and of each part type, to check a part against its own type's schema
// (the conventions' generic part accepts any object with a type).
type schemas struct {
	attr  map[string]*jsonschema.Schema
	parts map[string]map[string]*jsonschema.Schema
}

func loadSchemas(t *testing.T) schemas {
	t.Helper()
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	files := map[string]string{
		"gen_ai.input.messages":      "gen-ai-input-messages.json",
		"gen_ai.output.messages":     "gen-ai-output-messages.json",
		"gen_ai.system_instructions": "gen-ai-system-instructions.json",
	}
	s := schemas{attr: map[string]*jsonschema.Schema{}, parts: map[string]map[string]*jsonschema.Schema{}}
	for key, file := range files {
		f, err := os.Open("testdata/" + file)
		if err != nil {
			t.Fatal(err)
		}
		doc, err := jsonschema.UnmarshalJSON(f)
		f.Close()
		if err != nil {
			t.Fatal(err)
		}
		url := "mem:///" + file
		if err := c.AddResource(url, doc); err != nil {
			t.Fatal(err)
		}
		if s.attr[key], err = c.Compile(url); err != nil {
			t.Fatal(err)
		}
		s.parts[key] = map[string]*jsonschema.Schema{}
		for _, typ := range []string{"text", "reasoning", "tool_call", "tool_call_response", "blob", "uri"} {
			if s.parts[key][typ], err = c.Compile(url + "#/$defs/part_" + typ); err != nil {
				t.Fatal(err)
			}
		}
	}
	return s
}

// check validates v, the value of attribute key, against its schema and
// each of its parts against its type's.
func (s schemas) check(t *testing.T, key, v string) {
	t.Helper()
	doc, err := jsonschema.UnmarshalJSON(strings.NewReader(v))
	if err != nil {
		t.Fatalf("%s is not JSON: %v\n%s", key, err, v)
	}
	if err := s.attr[key].Validate(doc); err != nil {
		t.Errorf("%s does not match the conventions' schema: %v\n%s", key, err, v)
	}
	var parts []map[string]any
	if key == "gen_ai.system_instructions" {
		_ = json.Unmarshal([]byte(v), &parts)
	} else {
		var msgs []struct {
			Parts []map[string]any `json:"parts"`
		}
		_ = json.Unmarshal([]byte(v), &msgs)
		for _, m := range msgs {
			parts = append(parts, m.Parts...)
		}
	}
	for _, p := range parts {
		typ, _ := p["type"].(string)
		ps, ok := s.parts[key][typ]
		if !ok {
			t.Errorf("%s has a part of type %q lode does not write", key, typ)
			continue
		}
		b, _ := json.Marshal(p)
		pd, _ := jsonschema.UnmarshalJSON(bytes.NewReader(b))
		if err := ps.Validate(pd); err != nil {
			t.Errorf("%s part %s does not match its type's schema: %v", key, b, err)
		}
	}
}

// adapter is a real adapter against its fake server, answering first a
// call of "lookup" (id "call_1", arguments {"q":"plan"}), then text.
type adapter struct {
	name string
	new  func(t *testing.T, tp *sdktrace.TracerProvider, answer string) provider.Provider
}

var adapters = []adapter{
	{"openai", func(t *testing.T, tp *sdktrace.TracerProvider, answer string) provider.Provider {
		srv := openaitest.NewServer(t, openaitest.Call("call_1", "lookup", `{"q":"plan"}`), openaitest.Text(answer))
		p, err := openai.New(openai.WithModel("gpt-test"), openai.WithAPIKey("test-key"),
			openai.WithBaseURL(srv.BaseURL()), openai.WithHTTPClient(srv.Client()),
			openai.WithEnv(func(string) string { return "" }), openai.WithTracer(tp.Tracer("openai")))
		if err != nil {
			t.Fatal(err)
		}
		return p
	}},
	{"anthropic", func(t *testing.T, tp *sdktrace.TracerProvider, answer string) provider.Provider {
		a, _ := json.Marshal(answer)
		replies := []string{
			`{"id":"msg_1","type":"message","role":"assistant","model":"claude-test","content":[{"type":"tool_use","id":"call_1","name":"lookup","input":{"q":"plan"}}],"stop_reason":"tool_use","usage":{"input_tokens":5,"output_tokens":3}}`,
			`{"id":"msg_2","type":"message","role":"assistant","model":"claude-test","content":[{"type":"text","text":` + string(a) + `}],"stop_reason":"end_turn","usage":{"input_tokens":9,"output_tokens":4}}`,
		}
		var mu sync.Mutex
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			_, _ = io.Copy(io.Discard, r.Body)
			mu.Lock()
			defer mu.Unlock()
			if len(replies) == 0 {
				http.Error(w, `{"type":"error","error":{"type":"api_error","message":"no reply left"}}`, 500)
				return
			}
			w.Header().Set("Content-Type", "application/json")
			_, _ = io.WriteString(w, replies[0])
			replies = replies[1:]
		}))
		t.Cleanup(srv.Close)
		p, err := anthropic.New(anthropic.WithModel("claude-test"), anthropic.WithAPIKey("test-key"),
			anthropic.WithBaseURL(srv.URL), anthropic.WithStreaming(false),
			anthropic.WithEnv(func(string) string { return "" }), anthropic.WithTracer(tp.Tracer("anthropic")))
		if err != nil {
			t.Fatal(err)
		}
		return p
	}},
}

// run takes one run of a thread asking with prompt, through the loop and
// x/tool's handler, with spans exported over OTLP, and returns them.
func run(t *testing.T, a adapter, c capture.Config, prompt, answer string, guards ...loop.Guard) ([]*tracepb.Span, []byte, error) {
	t.Helper()
	r := newReceiver(t)
	tp, end := exporting(t, r)
	reg := tool.NewRegistry()
	if err := reg.Register(tool.Tool{Name: "lookup", Description: "Look a plan up"},
		func(context.Context, tool.Sandbox, map[string]any) (any, error) {
			return "the plan's key is " + secret, nil
		}); err != nil {
		t.Fatal(err)
	}
	step := loop.New(
		loop.WithCapture(c),
		loop.WithTracer(tp.Tracer("loop")),
		loop.WithGuards(guards...),
		loop.WithHandlers(xtool.NewHandler(reg, xtool.WithTracer(tp.Tracer("tool")))),
		loop.WithInvokeOptions(xtool.WithFilteredTools(reg, nil), provider.WithSystemPrompt("Answer in one line.")),
	)
	th := ledger.NewThread()
	_ = th.Append(ledger.RoleUser, artifact.Text{Content: prompt})
	_, err := step.Run(t.Context(), th, a.new(t, tp, answer))
	end()
	spans, raw := r.spans(t)
	return spans, raw, err
}

var contentKeys = []string{"gen_ai.input.messages", "gen_ai.output.messages", "gen_ai.system_instructions",
	"gen_ai.tool.call.arguments", "gen_ai.tool.call.result"}

func TestOTLPContentMatchesConventions(t *testing.T) {
	s := loadSchemas(t)
	for _, a := range adapters {
		t.Run(a.name, func(t *testing.T) {
			spans, raw, err := run(t, a, capture.Config{On: true, Secrets: []string{secret}},
				"Read me the plan; my key is "+secret, "The plan is ready.")
			if err != nil {
				t.Fatal(err)
			}
			if bytes.Contains(raw, []byte(secret)) {
				t.Error("the secret was exported")
			}
			chats, tools := 0, 0
			for _, sp := range spans {
				for _, key := range contentKeys[:3] {
					if v, ok := attr(sp, key); ok {
						s.check(t, key, v)
					}
				}
				switch {
				case strings.HasPrefix(sp.Name, "chat "):
					chats++
					in, okIn := attr(sp, "gen_ai.input.messages")
					out, okOut := attr(sp, "gen_ai.output.messages")
					sys, okSys := attr(sp, "gen_ai.system_instructions")
					if !okIn || !okOut || !okSys {
						t.Errorf("chat span lacks content: %v", sp.Attributes)
						continue
					}
					if !strings.Contains(in, capture.Redacted) || !strings.Contains(sys, "Answer in one line.") {
						t.Errorf("input = %s, system = %s", in, sys)
					}
					if chats == 1 && !strings.Contains(out, `{"type":"tool_call","id":"call_1","name":"lookup","arguments":{"q":"plan"}}`) {
						t.Errorf("first output = %s", out)
					}
					if chats == 2 && !strings.Contains(out, `"The plan is ready."`) {
						t.Errorf("second output = %s", out)
					}
				case strings.HasPrefix(sp.Name, "execute_tool "):
					tools++
					args, _ := attr(sp, "gen_ai.tool.call.arguments")
					res, _ := attr(sp, "gen_ai.tool.call.result")
					if args != `{"q":"plan"}` || res != `"the plan's key is `+capture.Redacted+`"` {
						t.Errorf("execute_tool arguments = %s, result = %s", args, res)
					}
				}
			}
			if chats != 2 || tools != 1 {
				t.Errorf("%d chat spans and %d execute_tool spans, want 2 and 1", chats, tools)
			}
		})
	}
}

func TestOTLPNoContentWhenOff(t *testing.T) {
	for _, a := range adapters {
		t.Run(a.name, func(t *testing.T) {
			spans, raw, err := run(t, a, capture.Config{}, "Read me the plan; my key is "+secret, "The plan is ready.")
			if err != nil {
				t.Fatal(err)
			}
			if len(spans) == 0 {
				t.Fatal("no spans exported")
			}
			for _, sp := range spans {
				for _, key := range contentKeys {
					if v, ok := attr(sp, key); ok {
						t.Errorf("span %s has %s = %s with capture off", sp.Name, key, v)
					}
				}
			}
			for _, w := range []string{secret, "Read me the plan", "The plan is ready"} {
				if bytes.Contains(raw, []byte(w)) {
					t.Errorf("%q was exported with capture off", w)
				}
			}
		})
	}
}

// forbid trips every answer that says "FORBIDDEN".
type forbid struct{}

func (forbid) Name() string { return "forbid" }
func (forbid) Check(_ context.Context, c loop.Check) error {
	if c.At == artifact.AtOutput && strings.Contains(c.Text, "FORBIDDEN") {
		return loop.Trip("forbid", "said the word")
	}
	return nil
}

func TestOTLPGuardTrippedOutputNeverExported(t *testing.T) {
	for _, a := range adapters {
		t.Run(a.name, func(t *testing.T) {
			spans, raw, err := run(t, a, capture.Config{On: true}, "Read me the plan", "FORBIDDEN: the plan", forbid{})
			if !errors.Is(err, loop.ErrTripped) {
				t.Fatalf("run = %v, want a trip", err)
			}
			if bytes.Contains(raw, []byte("FORBIDDEN")) {
				t.Error("the output a guard stopped was exported")
			}
			chats := 0
			for _, sp := range spans {
				if !strings.HasPrefix(sp.Name, "chat ") {
					continue
				}
				chats++
				_, okOut := attr(sp, "gen_ai.output.messages")
				if want := chats == 1; okOut != want {
					t.Errorf("chat span %d has output: %v, want %v", chats, okOut, want)
				}
			}
			if chats != 2 {
				t.Errorf("%d chat spans exported, want 2 (the stopped one ends too)", chats)
			}
		})
	}
}

func TestOTLPOversizedMessageIsCut(t *testing.T) {
	s := loadSchemas(t)
	const limit = 1024
	spans, _, err := run(t, adapters[0], capture.Config{On: true, MaxBytes: limit},
		strings.Repeat("long prompt ", 1000), "The plan is ready.")
	if err != nil {
		t.Fatal(err)
	}
	cut := 0
	for _, sp := range spans {
		if v, ok := attr(sp, "gen_ai.input.messages"); ok {
			s.check(t, "gen_ai.input.messages", v)
			if len(v) > limit {
				t.Errorf("input messages of %d bytes, over the bound of %d", len(v), limit)
			}
			if strings.Contains(v, "…[truncated ") {
				cut++
			}
		}
	}
	if cut != 2 {
		t.Errorf("%d chat spans show the truncation marker, want 2", cut)
	}
}

// withhold trips every tool result that tells the plan's key.
type withhold struct{}

func (withhold) Name() string { return "withhold" }
func (withhold) Check(_ context.Context, c loop.Check) error {
	if c.At == artifact.AtResult && strings.Contains(c.Result.Content, "plan's key") {
		return loop.Trip("withhold", "tells the key")
	}
	return nil
}

func TestOTLPGuardTrippedResultNeverExported(t *testing.T) {
	for _, a := range adapters {
		t.Run(a.name, func(t *testing.T) {
			spans, raw, err := run(t, a, capture.Config{On: true}, "Read me the plan", "unused", withhold{})
			if !errors.Is(err, loop.ErrTripped) {
				t.Fatalf("run = %v, want a trip", err)
			}
			if bytes.Contains(raw, []byte("plan's key")) {
				t.Error("the result a guard stopped was exported")
			}
			tools := 0
			for _, sp := range spans {
				if strings.HasPrefix(sp.Name, "execute_tool ") {
					tools++
					if args, _ := attr(sp, "gen_ai.tool.call.arguments"); args != `{"q":"plan"}` {
						t.Errorf("arguments = %s", args)
					}
				}
			}
			if tools != 1 {
				t.Errorf("%d execute_tool spans exported, want 1 (the stopped one ends too)", tools)
			}
		})
	}
}
