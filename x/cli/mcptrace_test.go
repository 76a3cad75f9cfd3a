package cli

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// otlpSpan is what the test reads of a span sent as OTLP/HTTP JSON.
type otlpSpan struct {
	TraceID      string `json:"traceId"`
	SpanID       string `json:"spanId"`
	ParentSpanID string `json:"parentSpanId"`
	Name         string `json:"name"`
	Attributes   []struct {
		Key   string `json:"key"`
		Value struct {
			StringValue string `json:"stringValue"`
		} `json:"value"`
	} `json:"attributes"`
}

// attr is the string attribute key of s, or "".
func (s otlpSpan) attr(key string) string {
	for _, a := range s.Attributes {
		if a.Key == key {
			return a.Value.StringValue
		}
	}
	return ""
}

// spanCollector is an OTLP/HTTP (JSON) trace endpoint that keeps every span
// it is sent, by name.
type spanCollector struct {
	mu    sync.Mutex
	spans map[string]otlpSpan
	added chan struct{}
}

func (c *spanCollector) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var req struct {
		ResourceSpans []struct {
			ScopeSpans []struct {
				Spans []otlpSpan `json:"spans"`
			} `json:"scopeSpans"`
		} `json:"resourceSpans"`
	}
	body, err := io.ReadAll(r.Body)
	if err != nil || json.Unmarshal(body, &req) != nil {
		http.Error(w, "bad OTLP JSON", http.StatusBadRequest)
		return
	}
	c.mu.Lock()
	for _, rs := range req.ResourceSpans {
		for _, ss := range rs.ScopeSpans {
			for _, s := range ss.Spans {
				c.spans[s.Name] = s
			}
		}
	}
	c.mu.Unlock()
	select {
	case c.added <- struct{}{}:
	default:
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write([]byte("{}"))
}

// wait returns the spans once every name in names has arrived.
func (c *spanCollector) wait(t *testing.T, names ...string) map[string]otlpSpan {
	t.Helper()
	deadline := time.After(30 * time.Second)
	for {
		c.mu.Lock()
		missing := ""
		for _, n := range names {
			if _, ok := c.spans[n]; !ok {
				missing = n
			}
		}
		out := make(map[string]otlpSpan, len(c.spans))
		for k, v := range c.spans {
			out[k] = v
		}
		c.mu.Unlock()
		if missing == "" {
			return out
		}
		select {
		case <-c.added:
		case <-deadline:
			t.Fatalf("no span %q reached the spanCollector; got %v", missing, out)
		}
	}
}

// runThroughServe runs `lode run`, whose model calls the calculator of a
// `lode serve` it starts as its stdio MCP server with serveYAML; the
// server exports its spans to col, and so does the run when traced.
func runThroughServe(t *testing.T, col *spanCollector, serveYAML string, traced bool) {
	t.Helper()
	otlp := httptest.NewServer(col)
	t.Cleanup(otlp.Close)
	model := httptest.NewServer(&fakeOpenAI{replies: []func(http.ResponseWriter, *http.Request){
		callReply("call_1", "remote__calculator__eval", `{"expression":"2+40"}`), textReply("It is 42."),
	}})
	t.Cleanup(model.Close)
	serveCfg := filepath.Join(t.TempDir(), "serve.yaml")
	if err := os.WriteFile(serveCfg, []byte(serveYAML), 0o644); err != nil {
		t.Fatal(err)
	}
	runDir := writeConfig(t, "tools: {}\nmcp:\n  - name: remote\n    command: ["+lodeBin+", serve, --config, "+serveCfg+"]\n"+
		"    env:\n      OTEL_EXPORTER_OTLP_ENDPOINT: "+otlp.URL+"\n      OTEL_EXPORTER_OTLP_PROTOCOL: http/json\n")
	vars := map[string]string{"OPENAI_API_KEY": "sk-test"}
	if traced {
		vars["OTEL_EXPORTER_OTLP_ENDPOINT"] = otlp.URL
		vars["OTEL_EXPORTER_OTLP_PROTOCOL"] = "http/json"
	}
	r := lode(t, runDir, vars, "", "run", "--base-url", model.URL+"/v1", "--model", "m", "What is 2 + 40?")
	if r.code != 0 || r.stdout != "It is 42.\n" {
		t.Fatalf("run: exit %d stdout %q stderr %q", r.code, r.stdout, r.stderr)
	}
}

// `lode run` calling a tool of `lode serve`, started as its stdio MCP
// server in another process, is one trace: each process exports its own
// spans, and the server's execute_tool span is a child of the run's.
func TestRunAndServeShareOneTrace(t *testing.T) {
	col := &spanCollector{spans: map[string]otlpSpan{}, added: make(chan struct{}, 1)}
	runThroughServe(t, col, "tools:\n  calculator: {}\n", true)
	spans := col.wait(t, "execute_tool remote__calculator__eval", "execute_tool calculator__eval")
	client := spans["execute_tool remote__calculator__eval"]
	server := spans["execute_tool calculator__eval"]
	if client.TraceID == "" || server.TraceID != client.TraceID || server.ParentSpanID != client.SpanID {
		t.Errorf("the server's execution %+v is not a child of the run's %+v", server, client)
	}
	// The server's spans name the caller's conversation, which crossed in
	// the request's _meta.
	conv := client.attr("gen_ai.conversation.id")
	if conv == "" {
		t.Fatalf("the run's execute_tool span names no conversation: %+v", client)
	}
	for _, k := range []string{"gen_ai.conversation.id", "session.id"} {
		if got := server.attr(k); got != conv {
			t.Errorf("the server's execute_tool: %s = %q, want the run's %q", k, got, conv)
		}
	}
	// Content is the server's own choice: its lode.yaml has no trace:.
	for _, k := range []string{"gen_ai.tool.call.arguments", "gen_ai.tool.call.result"} {
		if got := server.attr(k); got != "" {
			t.Errorf("the server recorded %s = %q with capture off", k, got)
		}
	}
}

// lode serve with trace: {content: true} records the arguments and result
// of the calls an MCP client makes, which no loop of its own runs.
func TestServeExportsContent(t *testing.T) {
	col := &spanCollector{spans: map[string]otlpSpan{}, added: make(chan struct{}, 1)}
	runThroughServe(t, col, "tools:\n  calculator: {}\ntrace:\n  content: true\n", false)
	server := col.wait(t, "execute_tool calculator__eval")["execute_tool calculator__eval"]
	if got := server.attr("gen_ai.tool.call.arguments"); !strings.Contains(got, "2+40") {
		t.Errorf("gen_ai.tool.call.arguments = %q, want the call's arguments", got)
	}
	if got := server.attr("gen_ai.tool.call.result"); !strings.Contains(got, "42") {
		t.Errorf("gen_ai.tool.call.result = %q, want the call's result", got)
	}
}
