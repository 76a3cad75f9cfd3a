package openai

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"reflect"
	"strconv"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/lodeworks/lode/x/provider/internal/providertest"
)

func TestTraceSuccess(t *testing.T) {
	f := newFake(t, jsonReply(429, `{"error":{"message":"slow down"}}`, "Retry-After", "0"),
		sse(textChunk("hi"), finishChunk("stop"), usageChunk(12, 5)))
	sr, tr := providertest.Recorder()
	req := userReq("hi")
	req.MaxTokens, req.Temperature = 100, new(0.0)
	if err := drain(t.Context(), f.provider(t, WithTracer(tr)), req); err != nil {
		t.Fatal(err)
	}
	spans := sr.Ended()
	if len(spans) != 1 {
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
		"gen_ai.request.temperature":     attribute.Float64Value(0),
		"server.address":                 attribute.StringValue("127.0.0.1"),
		"server.port":                    attribute.IntValue(port),
		"gen_ai.response.model":          attribute.StringValue("gpt-test-2024"),
		"gen_ai.response.id":             attribute.StringValue("chatcmpl-1"),
		"gen_ai.response.finish_reasons": attribute.StringSliceValue([]string{"stop"}),
		"gen_ai.usage.input_tokens":      attribute.Int64Value(12),
		"gen_ai.usage.output_tokens":     attribute.Int64Value(5),
	}
	if got := providertest.Attributes(s); !reflect.DeepEqual(got, want) {
		t.Errorf("attributes =\n%v\nwant\n%v", got, want)
	}
	ev := s.Events()
	if len(ev) != 1 || ev[0].Name != "retry" {
		t.Fatalf("events = %v", ev)
	}
	if got := attribute.NewSet(ev[0].Attributes...); got.Len() != 3 {
		t.Errorf("retry attributes = %v", ev[0].Attributes)
	} else if v, _ := got.Value("http.response.status_code"); v.AsInt64() != http.StatusTooManyRequests {
		t.Errorf("retry status = %v", v)
	}
}

func TestTraceFailures(t *testing.T) {
	cases := []struct {
		name      string
		reply     http.HandlerFunc
		errorType string
	}{
		{"401", jsonReply(401, `{"error":{"message":"bad key","type":"invalid_request_error","code":"invalid_api_key"}}`), "401"},
		{"malformed stream", sseRaw("data: {oops\n\n"), "malformed_response"},
		{"early end", sseRaw("data: " + textChunk("a") + "\n\n"), "incomplete_response"},
		{"nameless tool call", sse(chunk(`{"tool_calls":[{"index":0,"id":"c","function":{"arguments":"{}"}}]}`, "null"), finishChunk("tool_calls")), "invalid_tool_call"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newFake(t, tc.reply)
			sr, tr := providertest.Recorder()
			err := drain(t.Context(), f.provider(t, WithTracer(tr)), userReq("hi"))
			if err == nil {
				t.Fatal("no error")
			}
			spans := sr.Ended()
			if len(spans) != 1 {
				t.Fatalf("%d spans", len(spans))
			}
			s := spans[0]
			// The status text is the closed error.type, never the raw
			// error text.
			if s.Status().Code != codes.Error || s.Status().Description != tc.errorType {
				t.Errorf("status = %v, want %q", s.Status(), tc.errorType)
			}
			if got := providertest.Attributes(s)["error.type"]; got.AsString() != tc.errorType {
				t.Errorf("error.type = %q, want %q", got.AsString(), tc.errorType)
			}
			if len(s.Events()) != 1 || s.Events()[0].Name != "exception" {
				t.Errorf("events = %v", s.Events())
			}
		})
	}
	t.Run("request error", func(t *testing.T) {
		f := newFake(t)
		sr, tr := providertest.Recorder()
		req := userReq("hi")
		req.MaxTokens = -1
		if err := drain(t.Context(), f.provider(t, WithTracer(tr)), req); err == nil {
			t.Fatal("no error")
		}
		if got := providertest.Attributes(sr.Ended()[0])["error.type"]; got.AsString() != "invalid_request" {
			t.Errorf("error.type = %q", got.AsString())
		}
	})
}

func TestTraceConsumerStopIsNotAnError(t *testing.T) {
	f := newFake(t, sse(textChunk("a"), textChunk("b"), finishChunk("stop")))
	sr, tr := providertest.Recorder()
	for range f.provider(t, WithTracer(tr)).Invoke(t.Context(), userReq("hi")) {
		break
	}
	spans := sr.Ended()
	if len(spans) != 1 || spans[0].Status().Code == codes.Error {
		t.Fatalf("spans = %v", spans)
	}
}

// errorType answers from a closed set: an error of no known kind is
// "_OTHER", not its Go type name.
func TestErrorTypeClosedSet(t *testing.T) {
	cases := []struct {
		name string
		err  error
		want string
	}{
		{"unknown", errors.New("dial tcp: refused"), "_OTHER"},
		{"wrapped unknown", fmt.Errorf("openai: cannot reach the server: %w", errors.New("refused")), "_OTHER"},
		{"canceled", fmt.Errorf("openai: %w", context.Canceled), "canceled"},
		{"deadline", fmt.Errorf("openai: %w", context.DeadlineExceeded), "timeout"},
		{"idle", &TimeoutError{Idle: true, Limit: time.Second}, "idle_timeout"},
		{"stream error", &APIError{Message: "boom"}, "stream_error"},
		{"request", &RequestError{Turn: -1, Reason: "not sent"}, "invalid_request"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := errorType(tc.err); got != tc.want {
				t.Errorf("errorType(%v) = %q, want %q", tc.err, got, tc.want)
			}
		})
	}
}
