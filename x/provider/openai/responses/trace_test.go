package responses

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"reflect"
	"strconv"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/lodeworks/lode/provider"

	"github.com/lodeworks/lode/x/provider/internal/providertest"
)

func TestTrace(t *testing.T) {
	f := newFake(t, jsonReply(429, err429, "Retry-After", "0"), sse(textAnswer("hi")...), jsonReply(400, err400),
		sse(created(), `{"type":"error","code":"server_error","message":"oops"}`))
	sr, tr := providertest.Recorder()
	p := f.provider(t, WithTracer(tr))
	temp := 0.5
	r := &provider.Request{Turns: userReq("x").Turns, MaxTokens: 100, Temperature: &temp}
	if _, _, err := providertest.CollectContext(t.Context(), p, r); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if _, _, err := providertest.CollectContext(t.Context(), p, r); err == nil {
			t.Fatal("no error")
		}
	}
	spans := sr.Ended()
	if len(spans) != 3 {
		t.Fatalf("%d spans", len(spans))
	}
	s := spans[0]
	if s.Name() != "chat gpt-test" || s.SpanKind() != trace.SpanKindClient || s.Status().Code == codes.Error {
		t.Errorf("span %q kind %v status %v", s.Name(), s.SpanKind(), s.Status())
	}
	u, _ := url.Parse(f.srv.URL)
	port, _ := strconv.Atoi(u.Port())
	want := map[attribute.Key]attribute.Value{
		"gen_ai.operation.name":          attribute.StringValue("chat"),
		"gen_ai.provider.name":           attribute.StringValue("openai"),
		"gen_ai.request.model":           attribute.StringValue("gpt-test"),
		"gen_ai.request.max_tokens":      attribute.IntValue(100),
		"gen_ai.request.temperature":     attribute.Float64Value(0.5),
		"server.address":                 attribute.StringValue("127.0.0.1"),
		"server.port":                    attribute.IntValue(port),
		"gen_ai.response.model":          attribute.StringValue("gpt-test-2025"),
		"gen_ai.response.id":             attribute.StringValue("resp_1"),
		"gen_ai.response.finish_reasons": attribute.StringSliceValue([]string{"stop"}),
		"gen_ai.usage.input_tokens":      attribute.Int64Value(10),
		"gen_ai.usage.output_tokens":     attribute.Int64Value(5),
	}
	got := providertest.Attributes(s)
	if !reflect.DeepEqual(got, want) {
		t.Errorf("attributes =\n%v\nwant\n%v", got, want)
	}
	if ev := s.Events(); len(ev) != 1 || ev[0].Name != "retry" {
		t.Errorf("events = %v", ev)
	}
	for i, wantType := range []string{"400", "server_error"} {
		s := spans[i+1]
		if s.Status().Code != codes.Error || s.Status().Description != wantType {
			t.Errorf("span %d status = %v; want %q", i+1, s.Status(), wantType)
		}
	}
}

// TestIdleTimeout: a server that sends its headers and then nothing ends
// the invocation with the idle limit's error, not a hang.
func TestIdleTimeout(t *testing.T) {
	release := make(chan struct{})
	defer close(release)
	f := newFake(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = w.Write([]byte(event(created())))
		w.(http.Flusher).Flush()
		select {
		case <-r.Context().Done():
		case <-release:
		}
	})
	_, _, err := providertest.CollectContext(t.Context(), f.provider(t, WithIdleTimeout(50*time.Millisecond)), userReq("x"))
	var te *TimeoutError
	if !errors.As(err, &te) || !te.Idle || !errors.Is(err, ErrIdleTimeout) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v", err)
	}
}

// TestCancel: cancelling the context ends a stream that waits.
func TestCancel(t *testing.T) {
	release := make(chan struct{})
	defer close(release)
	f := newFake(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = w.Write([]byte(event(created()) + event(added(0, messageItem(0, ""))) + event(textDelta(0, "a"))))
		w.(http.Flusher).Flush()
		select {
		case <-r.Context().Done():
		case <-release:
		}
	})
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	var err error
	for a, e := range f.provider(t).Invoke(ctx, userReq("x")) {
		if a != nil {
			cancel()
		}
		if e != nil {
			err = e
		}
	}
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v", err)
	}
}
