package core

import (
	"context"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/lodeworks/lode/artifact"
	"github.com/lodeworks/lode/capture"
	"github.com/lodeworks/lode/ledger"
	"github.com/lodeworks/lode/provider"
	"github.com/lodeworks/lode/x/provider/internal/genaispan"
)

// Every adapter's span gets its content here: the request's turns when it
// starts, the whole artifacts it yielded (no deltas) when it ends, and no
// output for a call that failed or whose output a Hold stopped.
func TestRunCapturesContent(t *testing.T) {
	answer := []artifact.Artifact{artifact.TextDelta{Content: "Hi"}, artifact.Text{Content: "Hi"}, artifact.Finish{Reason: "stop"}}
	req := &provider.Request{Turns: []ledger.Turn{
		{Role: ledger.RoleSystem, Artifacts: []artifact.Artifact{artifact.Text{Content: "sys"}}},
		{Role: ledger.RoleUser, Artifacts: []artifact.Artifact{artifact.Text{Content: "hello"}}},
	}}
	cases := []struct {
		name     string
		capture  bool
		hold     *bool
		err      error
		in, out  string
		wantSpan bool
	}{
		{"off", false, nil, nil, "", "", true},
		{"on", true, nil, nil, `[{"role":"user","parts":[{"type":"text","content":"hello"}]}]`,
			`[{"role":"assistant","parts":[{"type":"text","content":"Hi"}],"finish_reason":"stop"}]`, true},
		{"failed", true, nil, context.DeadlineExceeded, `[{"role":"user","parts":[{"type":"text","content":"hello"}]}]`, "", true},
		{"held, passed", true, ptr(true), nil, `[{"role":"user","parts":[{"type":"text","content":"hello"}]}]`,
			`[{"role":"assistant","parts":[{"type":"text","content":"Hi"}],"finish_reason":"stop"}]`, true},
		{"held, stopped", true, ptr(false), nil, `[{"role":"user","parts":[{"type":"text","content":"hello"}]}]`, "", true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			rec := tracetest.NewSpanRecorder()
			conn := Conn{Model: "m", Tracer: sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec)).Tracer("t")}
			ctx := capture.With(t.Context(), capture.Config{On: c.capture})
			var hold *capture.Hold
			if c.hold != nil {
				ctx, hold = capture.WithHold(ctx)
			}
			Invocation{Provider: "x", ErrorType: func(error) string { return "kind" }}.Run(ctx, &conn, req,
				func(artifact.Artifact, error) bool { return true },
				func(ctx context.Context, yield Yield) (*genaispan.Result, error) {
					for _, a := range answer {
						yield(a, nil)
					}
					return &genaispan.Result{}, c.err
				})
			if hold != nil {
				if len(rec.Ended()) != 0 {
					t.Fatal("a held span ended before its release")
				}
				hold.Release(*c.hold)
			}
			spans := rec.Ended()
			if len(spans) != 1 {
				t.Fatalf("%d spans", len(spans))
			}
			got := map[attribute.Key]string{}
			for _, kv := range spans[0].Attributes() {
				got[kv.Key] = kv.Value.Emit()
			}
			if got["gen_ai.input.messages"] != c.in || got["gen_ai.output.messages"] != c.out {
				t.Errorf("input = %s\noutput = %s", got["gen_ai.input.messages"], got["gen_ai.output.messages"])
			}
			if want := map[bool]string{true: `[{"type":"text","content":"sys"}]`}[c.capture]; got["gen_ai.system_instructions"] != want {
				t.Errorf("system = %s, want %s", got["gen_ai.system_instructions"], want)
			}
		})
	}
}

func ptr[T any](v T) *T { return &v }
