package anthropic

import (
	"net/url"
	"reflect"
	"strconv"
	"testing"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/lodeworks/lode/provider"
	"github.com/lodeworks/lode/x/provider/internal/providertest"
)

var recorder = providertest.Recorder

func TestTrace(t *testing.T) {
	f := newFake(t,
		reply{status: 429, header: map[string]string{"Retry-After": "0"}, body: errBody("rate_limit_error", "x")},
		sse(msgStart(`{"input_tokens":10,"cache_read_input_tokens":90,"cache_creation_input_tokens":5,"output_tokens":1}`),
			blockStart(0, `{"type":"text","text":"hi"}`), blockStop(0), msgDelta("end_turn", `{"output_tokens":4}`), msgStop),
		reply{status: 400, body: errBody("invalid_request_error", "bad")},
	)
	sr, tr := recorder()
	p := f.provider(t, WithTracer(tr))
	temp := 0.0
	r := &provider.Request{Turns: req(userTurn("x")).Turns, MaxTokens: 100, Temperature: &temp, Stop: []string{"END"}}
	if _, _, err := collect(p, r); err != nil {
		t.Fatal(err)
	}
	if _, _, err := collect(p, r); err == nil {
		t.Fatal("the 400 was not an error")
	}
	spans := sr.Ended()
	if len(spans) != 2 {
		t.Fatalf("%d spans", len(spans))
	}
	s := spans[0]
	if s.Name() != "chat claude-sonnet-4-5" || s.SpanKind() != trace.SpanKindClient || s.Status().Code == codes.Error {
		t.Errorf("span %q kind %v status %v", s.Name(), s.SpanKind(), s.Status())
	}
	u, _ := url.Parse(f.srv.URL)
	port, _ := strconv.Atoi(u.Port())
	want := map[attribute.Key]attribute.Value{
		"gen_ai.operation.name":                    attribute.StringValue("chat"),
		"gen_ai.provider.name":                     attribute.StringValue("anthropic"),
		"gen_ai.request.model":                     attribute.StringValue("claude-sonnet-4-5"),
		"gen_ai.request.max_tokens":                attribute.IntValue(100),
		"gen_ai.request.temperature":               attribute.Float64Value(0),
		"gen_ai.request.stop_sequences":            attribute.StringSliceValue([]string{"END"}),
		"server.address":                           attribute.StringValue("127.0.0.1"),
		"server.port":                              attribute.IntValue(port),
		"gen_ai.response.model":                    attribute.StringValue("claude-sonnet-4-5-20250929"),
		"gen_ai.response.id":                       attribute.StringValue("msg_1"),
		"gen_ai.response.finish_reasons":           attribute.StringSliceValue([]string{"end_turn"}),
		"gen_ai.usage.input_tokens":                attribute.Int64Value(105),
		"gen_ai.usage.output_tokens":               attribute.Int64Value(4),
		"gen_ai.usage.cache_read.input_tokens":     attribute.Int64Value(90),
		"gen_ai.usage.cache_creation.input_tokens": attribute.Int64Value(5),
	}
	if got := providertest.Attributes(s); !reflect.DeepEqual(got, want) {
		t.Errorf("attributes\n got %v\nwant %v", got, want)
	}
	if ev := s.Events(); len(ev) != 1 || ev[0].Name != "retry" {
		t.Errorf("events = %v", ev)
	}
	e := spans[1]
	errType := providertest.ErrorType(e)
	if e.Status().Code != codes.Error || errType != "invalid_request_error" {
		t.Errorf("failed span: status %v, error.type %q", e.Status(), errType)
	}
}

// The SDK's own spans stay off, even with a global tracer provider: the
// adapter's span is the one WithTracer asks for.
func TestNoSDKSpans(t *testing.T) {
	sr, _ := recorder()
	prev := otel.GetTracerProvider()
	otel.SetTracerProvider(sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(sr)))
	t.Cleanup(func() { otel.SetTracerProvider(prev) })
	f := newFake(t, textAnswer("ok"))
	if _, _, err := collect(f.provider(t), req(userTurn("x"))); err != nil {
		t.Fatal(err)
	}
	if n := len(sr.Ended()); n != 0 {
		t.Fatalf("%d spans without WithTracer", n)
	}
	if h := f.headers[0].Get("Traceparent"); h != "" {
		t.Errorf("traceparent %q sent", h)
	}
}
