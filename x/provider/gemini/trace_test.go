package gemini

import (
	"net/url"
	"reflect"
	"strconv"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/lodeworks/lode/provider"
	"github.com/lodeworks/lode/x/provider/internal/providertest"
)

func TestTrace(t *testing.T) {
	f := newFake(t,
		reply{status: 429, header: map[string]string{"Retry-After": "0"}, body: errQuota},
		reply{sse: true, body: sse(`{"candidates":[{"content":{"parts":[{"text":"hi"}],"role":"model"},"finishReason":"STOP"}],"usageMetadata":{"promptTokenCount":100,"candidatesTokenCount":4,"thoughtsTokenCount":6,"cachedContentTokenCount":90,"totalTokenCount":110},"modelVersion":"gemini-2.5-flash-001","responseId":"resp-1"}`)},
		reply{status: 400, body: errBadKey},
		reply{sse: true, body: sse(`{"promptFeedback":{"blockReason":"SAFETY"}}`)},
	)
	sr, tr := providertest.Recorder()
	p := newTestProvider(t, f, WithTracer(tr))
	temp := 0.0
	r := &provider.Request{Turns: turns(user("x")), MaxTokens: 100, Temperature: &temp, Stop: []string{"END"}}
	if _, _, err := collect(p, r); err != nil {
		t.Fatal(err)
	}
	if _, _, err := collect(p, r); err == nil {
		t.Fatal("the 400 was not an error")
	}
	if _, _, err := collect(p, r); err == nil {
		t.Fatal("the blocked prompt was not an error")
	}
	spans := sr.Ended()
	if len(spans) != 3 {
		t.Fatalf("%d spans", len(spans))
	}
	s := spans[0]
	if s.Name() != "chat gemini-2.5-flash" || s.SpanKind() != trace.SpanKindClient || s.Status().Code == codes.Error {
		t.Errorf("span %q kind %v status %v", s.Name(), s.SpanKind(), s.Status())
	}
	u, _ := url.Parse(f.srv.URL)
	port, _ := strconv.Atoi(u.Port())
	want := map[attribute.Key]attribute.Value{
		"gen_ai.operation.name":                    attribute.StringValue("chat"),
		"gen_ai.provider.name":                     attribute.StringValue("gcp.gemini"),
		"gen_ai.request.model":                     attribute.StringValue("gemini-2.5-flash"),
		"gen_ai.request.max_tokens":                attribute.IntValue(100),
		"gen_ai.request.temperature":               attribute.Float64Value(0),
		"gen_ai.request.stop_sequences":            attribute.StringSliceValue([]string{"END"}),
		"server.address":                           attribute.StringValue("127.0.0.1"),
		"server.port":                              attribute.IntValue(port),
		"gen_ai.response.model":                    attribute.StringValue("gemini-2.5-flash-001"),
		"gen_ai.response.id":                       attribute.StringValue("resp-1"),
		"gen_ai.response.finish_reasons":           attribute.StringSliceValue([]string{"STOP"}),
		"gen_ai.usage.input_tokens":                attribute.Int64Value(100),
		"gen_ai.usage.output_tokens":               attribute.Int64Value(10),
		"gen_ai.usage.cache_read.input_tokens":     attribute.Int64Value(90),
		"gen_ai.usage.cache_creation.input_tokens": attribute.Int64Value(0),
	}
	if got := providertest.Attributes(s); !reflect.DeepEqual(got, want) {
		t.Errorf("attributes\n got %v\nwant %v", got, want)
	}
	if ev := s.Events(); len(ev) != 1 || ev[0].Name != "retry" {
		t.Errorf("events = %v", ev)
	}
	for i, wantType := range map[int]string{1: "INVALID_ARGUMENT", 2: "prompt_blocked"} {
		e := spans[i]
		errType := providertest.ErrorType(e)
		if e.Status().Code != codes.Error || e.Status().Description != wantType || errType != wantType {
			t.Errorf("span %d: status %v, error.type %q, want %q", i, e.Status(), errType, wantType)
		}
	}
}
