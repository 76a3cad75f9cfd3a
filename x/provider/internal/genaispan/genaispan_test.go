package genaispan

import (
	"context"
	"errors"
	"net/url"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/lodeworks/lode/artifact"
	"github.com/lodeworks/lode/provider"
)

func run(t *testing.T, r *Result, err error) sdktrace.ReadOnlySpan {
	t.Helper()
	rec := tracetest.NewSpanRecorder()
	tracer := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec)).Tracer("test")
	temp := 0.5
	_, span := Start(context.Background(), tracer, Call{Provider: "p", Model: "m", ServerAddr: "h", ServerPort: 9},
		&provider.Request{MaxTokens: 10, Temperature: &temp, Stop: []string{"x"}})
	End(context.Background(), span, r, err, func(error) string { return "kind" }, nil)
	spans := rec.Ended()
	if len(spans) != 1 {
		t.Fatalf("%d spans", len(spans))
	}
	return spans[0]
}

func attrs(s sdktrace.ReadOnlySpan) map[attribute.Key]attribute.Value {
	m := map[attribute.Key]attribute.Value{}
	for _, kv := range s.Attributes() {
		m[kv.Key] = kv.Value
	}
	return m
}

func TestSpan(t *testing.T) {
	cases := []struct {
		name      string
		r         *Result
		err       error
		want      map[attribute.Key]attribute.Value
		absent    []attribute.Key
		wantError bool
	}{
		{name: "answer", r: &Result{Model: "m-1", ID: "id", Finish: "stop", Usage: &artifact.Usage{InputTokens: 3, OutputTokens: 4, CachedInputTokens: 1}},
			want: map[attribute.Key]attribute.Value{
				"gen_ai.operation.name": attribute.StringValue("chat"), "gen_ai.provider.name": attribute.StringValue("p"),
				"gen_ai.request.model": attribute.StringValue("m"), "server.address": attribute.StringValue("h"),
				"server.port": attribute.IntValue(9), "gen_ai.request.max_tokens": attribute.IntValue(10),
				"gen_ai.request.temperature": attribute.Float64Value(0.5), "gen_ai.request.stop_sequences": attribute.StringSliceValue([]string{"x"}),
				"gen_ai.response.model": attribute.StringValue("m-1"), "gen_ai.response.id": attribute.StringValue("id"),
				"gen_ai.response.finish_reasons": attribute.StringSliceValue([]string{"stop"}),
				"gen_ai.usage.input_tokens":      attribute.Int64Value(3), "gen_ai.usage.output_tokens": attribute.Int64Value(4),
			},
			absent: []attribute.Key{"gen_ai.request.top_p", "gen_ai.usage.cache_read.input_tokens", "error.type"}},
		{name: "cache tokens", r: &Result{Usage: &artifact.Usage{CachedInputTokens: 7, CacheWriteTokens: 2}, CacheTokens: true},
			want: map[attribute.Key]attribute.Value{
				"gen_ai.usage.cache_read.input_tokens": attribute.Int64Value(7), "gen_ai.usage.cache_creation.input_tokens": attribute.Int64Value(2),
			},
			absent: []attribute.Key{"gen_ai.response.model", "gen_ai.response.id"}},
		{name: "failure without result", err: errors.New("secret prompt text"),
			want:   map[attribute.Key]attribute.Value{"error.type": attribute.StringValue("kind")},
			absent: []attribute.Key{"gen_ai.usage.input_tokens"}, wantError: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := run(t, tc.r, tc.err)
			got := attrs(s)
			for k, v := range tc.want {
				if got[k] != v {
					t.Errorf("%s = %v, want %v", k, got[k].Emit(), v.Emit())
				}
			}
			for _, k := range tc.absent {
				if _, ok := got[k]; ok {
					t.Errorf("%s set", k)
				}
			}
			if s.Name() != "chat m" {
				t.Errorf("name %q", s.Name())
			}
			if tc.wantError {
				if s.Status().Code != codes.Error || s.Status().Description != "kind" || len(s.Events()) != 1 {
					t.Errorf("status %v, events %v", s.Status(), s.Events())
				}
			} else if s.Status().Code == codes.Error {
				t.Errorf("status %v", s.Status())
			}
		})
	}
}

func TestPort(t *testing.T) {
	for raw, want := range map[string]int{
		"https://api.example.test/v1": 443, "http://127.0.0.1/v1": 80, "http://127.0.0.1:8080/v1": 8080, "https://h:9443": 9443,
	} {
		u, err := url.Parse(raw)
		if err != nil {
			t.Fatal(err)
		}
		if got := Port(u); got != want {
			t.Errorf("Port(%s) = %d, want %d", raw, got, want)
		}
	}
}
