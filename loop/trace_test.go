package loop_test

import (
	"context"
	"errors"
	"testing"

	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/lodeworks/lode/loop"
	"github.com/lodeworks/lode/x/provider/script"
)

func TestRunSpans(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	step := loop.New(loop.WithTracer(tp.Tracer("t")), loop.WithHandlers(echoTools))
	boom := errors.New("overloaded")
	_, err := step.Run(context.Background(), userThread("x"), script.Play(script.Call("1", "t", "{}"), script.Fail(boom)))
	if !errors.Is(err, boom) {
		t.Fatal(err)
	}
	spans := rec.Ended()
	if len(spans) != 3 {
		t.Fatalf("%d spans", len(spans))
	}
	run := spans[2]
	if run.Name() != "invoke_agent lode" || run.Status().Code != codes.Error {
		t.Fatalf("run span %s %v", run.Name(), run.Status())
	}
	for i, s := range spans[:2] {
		if s.Name() != "lode.turn" || s.Parent().SpanID() != run.SpanContext().SpanID() {
			t.Errorf("turn span %d: %s, parent %v", i, s.Name(), s.Parent().SpanID())
		}
	}
	if spans[0].Status().Code == codes.Error || spans[1].Status().Code != codes.Error {
		t.Errorf("turn statuses %v, %v", spans[0].Status(), spans[1].Status())
	}
}
