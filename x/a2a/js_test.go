package a2a_test

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/lodeworks/lode/tool"
	lodea2a "github.com/lodeworks/lode/x/a2a"
	xtool "github.com/lodeworks/lode/x/tool"
)

// jsAgent starts testdata/node/agent.mjs and returns its base URL and the
// lines it prints after "listening" (one "cancel ID" per cancel).
func jsAgent(t *testing.T, streaming bool) (string, <-chan string) {
	t.Helper()
	node, dir := requireNode(t)
	cmd := exec.Command(node, "agent.mjs")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "A2A_STREAMING="+map[bool]string{true: "on", false: "off"}[streaming])
	url, sc := startAgentProcess(t, cmd, "agent.mjs")
	lines := make(chan string, 16)
	go func() {
		defer close(lines)
		for sc.Scan() {
			lines <- sc.Text()
		}
	}()
	return url, lines
}

func TestJSAgent(t *testing.T) {
	for _, streaming := range []bool{true, false} {
		name := map[bool]string{true: "streaming", false: "blocking"}[streaming]
		t.Run(name, func(t *testing.T) {
			url, _ := jsAgent(t, streaming)
			reg, r := mount(t, url, lodea2a.WithReadOnly(), lodea2a.WithBearerToken("js-token"))
			if _, ok := reg.Lookup("js_weather__weather"); !ok {
				t.Fatalf("tools %v", reg.Tools())
			}
			exp := tracetest.NewInMemoryExporter()
			tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
			st, err := run(t, reg, nil, "js_weather__weather", `{"task":"hello"}`, []xtool.HandlerOption{xtool.WithTracer(tp.Tracer("t"))})
			if err != nil {
				t.Fatal(err)
			}
			res := resultOf(t, st)
			var traceID string
			for _, sp := range exp.GetSpans() {
				traceID = sp.SpanContext.TraceID().String()
			}
			if res.IsError || !strings.HasPrefix(res.Content, "echo: hello [traceparent=00-"+traceID+"-") || !strings.HasSuffix(res.Content, " authorization=Bearer js-token]") {
				t.Fatalf("result %+v (trace %s)", res, traceID)
			}

			// A question back, then its answer.
			v, err := r.Call(context.Background(), "weather", map[string]any{"task": "ask for the weather"})
			if err != nil {
				t.Fatal(err)
			}
			q := v.(tool.Result)
			ans := q.Value.(*lodea2a.Answer)
			if q.IsError || !strings.Contains(q.Content, "it asks:\nWhich city?") || ans.TaskID == "" {
				t.Fatalf("question %+v", q)
			}
			v, err = r.Call(context.Background(), "weather", map[string]any{"task": "Lyon", "task_id": ans.TaskID, "context_id": ans.ContextID})
			if err != nil {
				t.Fatal(err)
			}
			if a := v.(tool.Result); a.IsError || !strings.HasPrefix(a.Content, "Sunny in Lyon.") {
				t.Fatalf("answer %+v", a)
			}
		})
	}
}

func TestJSAgentCancelled(t *testing.T) {
	url, lines := jsAgent(t, true)
	ctx, cancel := context.WithCancel(context.Background())
	hc := &httpClientWatch{word: "TASK_STATE_WORKING", seen: cancel}
	_, r := mount(t, url, lodea2a.WithReadOnly(), lodea2a.WithHTTPClient(hc.client()))
	_, err := r.Call(ctx, "weather", map[string]any{"task": "hang on"})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err %v", err)
	}
	if l := <-lines; !strings.HasPrefix(l, "cancel ") {
		t.Fatalf("agent printed %q", l)
	}
}
