package fallback_test

import (
	"context"
	"reflect"
	"sync"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/lodeworks/lode/artifact"
	"github.com/lodeworks/lode/ledger"
	"github.com/lodeworks/lode/loop"
	"github.com/lodeworks/lode/provider"
	"github.com/lodeworks/lode/x/provider/fallback"
)

// events keeps the AttemptEvents a loop's observer sees.
type events struct {
	mu  sync.Mutex
	evs []fallback.AttemptEvent
}

func (e *events) Emit(_ context.Context, ev loop.Event) {
	if a, ok := ev.(fallback.AttemptEvent); ok {
		e.mu.Lock()
		e.evs = append(e.evs, a)
		e.mu.Unlock()
	}
}

// The loop's observers see each attempt start and end, and why it fell
// back; the turn's usage counts both attempts, and the last Usage of the
// stored answer is the answering request's.
func TestEventsAndUsageThroughTheLoop(t *testing.T) {
	e503 := &statusErr{503}
	first := newFake("a", step{art: artifact.Usage{InputTokens: 7}}, step{err: e503})
	second := newFake("b", answer("b", 10, 2)...)
	sr := tracetest.NewSpanRecorder()
	tracer := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(sr)).Tracer("test")
	p, err := fallback.New([]provider.Provider{first, second}, fallback.WithTracer(tracer))
	if err != nil {
		t.Fatal(err)
	}
	obs := &events{}
	step := loop.New(loop.WithObserver(obs))
	th := ledger.NewThread()
	_ = th.Append(ledger.RoleUser, artifact.Text{Content: "hi"})
	if _, err := step.Run(context.Background(), th, p); err != nil {
		t.Fatal(err)
	}
	if err := step.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	want := []fallback.AttemptEvent{
		{Attempt: 0, Provider: 0, Model: "a", Status: fallback.StatusStarted},
		{Attempt: 0, Provider: 0, Model: "a", Status: fallback.StatusFailed, Err: e503, Class: fallback.ClassServer, FellBack: true,
			Usage: &artifact.Usage{InputTokens: 7}},
		{Attempt: 1, Provider: 1, Model: "b", Status: fallback.StatusStarted},
		{Attempt: 1, Provider: 1, Model: "b", Status: fallback.StatusAnswered, Usage: &artifact.Usage{InputTokens: 10, OutputTokens: 2}},
	}
	if !reflect.DeepEqual(obs.evs, want) {
		t.Errorf("events:\n%+v\nwant\n%+v", obs.evs, want)
	}
	turns := th.Turns()
	got := turns[len(turns)-1].Artifacts
	wantArts := []artifact.Artifact{
		// Each attempt's usage names its model, to be priced at its prices.
		artifact.Usage{InputTokens: 7, Model: "a"}, artifact.Text{Content: "b"},
		artifact.Usage{InputTokens: 10, OutputTokens: 2, Model: "b"}, artifact.Finish{Reason: "stop"},
	}
	if !reflect.DeepEqual(got, wantArts) {
		t.Errorf("stored answer = %#v", got)
	}

	spans := sr.Ended()
	if len(spans) != 2 {
		t.Fatalf("%d spans", len(spans))
	}
	wantAttrs := []map[attribute.Key]attribute.Value{
		{
			"lode.fallback.attempt": attribute.IntValue(0), "lode.fallback.provider": attribute.IntValue(0),
			"lode.fallback.hedge": attribute.BoolValue(false), "gen_ai.request.model": attribute.StringValue("a"),
			"lode.fallback.status": attribute.StringValue("failed"), "lode.fallback.fell_back": attribute.BoolValue(true),
			"gen_ai.usage.input_tokens": attribute.Int64Value(7), "gen_ai.usage.output_tokens": attribute.Int64Value(0),
			"error.type": attribute.StringValue("server"),
		},
		{
			"lode.fallback.attempt": attribute.IntValue(1), "lode.fallback.provider": attribute.IntValue(1),
			"lode.fallback.hedge": attribute.BoolValue(false), "gen_ai.request.model": attribute.StringValue("b"),
			"lode.fallback.status": attribute.StringValue("answered"), "lode.fallback.fell_back": attribute.BoolValue(false),
			"gen_ai.usage.input_tokens": attribute.Int64Value(10), "gen_ai.usage.output_tokens": attribute.Int64Value(2),
		},
	}
	for _, w := range wantAttrs { // the run's identity, as on every span of it
		w["gen_ai.conversation.id"] = attribute.StringValue(th.ID())
		w["session.id"] = attribute.StringValue(th.ID())
	}
	for i, s := range spans {
		if s.Name() != "lode.fallback.attempt" {
			t.Errorf("span %d is %q", i, s.Name())
		}
		attrs := map[attribute.Key]attribute.Value{}
		for _, kv := range s.Attributes() {
			attrs[kv.Key] = kv.Value
		}
		if !reflect.DeepEqual(attrs, wantAttrs[i]) {
			t.Errorf("span %d attributes:\n%v\nwant\n%v", i, attrs, wantAttrs[i])
		}
	}
	if d := spans[0].Status().Description; d != "server" {
		t.Errorf("failed span's status = %q", d)
	}
}

// A hedged loser is reported as lost, with the usage it drained.
func TestHedgeEvents(t *testing.T) {
	never := make(chan struct{})
	first := newFake("a", step{wait: never, afterCancel: []artifact.Artifact{artifact.Usage{InputTokens: 5}}})
	second := newFake("b", answer("b", 10, 2)...)
	first.started = make(chan struct{})
	clock := newFakeClock()
	p := hedgedProvider(t, clock, first, second)
	obs := &events{}
	step := loop.New(loop.WithObserver(obs))
	th := ledger.NewThread()
	_ = th.Append(ledger.RoleUser, artifact.Text{Content: "hi"})
	go clock.fire()
	if _, err := step.Run(context.Background(), th, p); err != nil {
		t.Fatal(err)
	}
	_ = step.Flush(context.Background())
	var ends []fallback.AttemptEvent
	for _, e := range obs.evs {
		if e.Status != fallback.StatusStarted {
			ends = append(ends, e)
		}
	}
	want := []fallback.AttemptEvent{
		{Attempt: 0, Provider: 0, Model: "a", Status: fallback.StatusLost, Usage: &artifact.Usage{InputTokens: 5}},
		{Attempt: 1, Provider: 1, Model: "b", Hedge: true, Status: fallback.StatusAnswered, Usage: &artifact.Usage{InputTokens: 10, OutputTokens: 2}},
	}
	if !reflect.DeepEqual(ends, want) {
		t.Errorf("events:\n%+v\nwant\n%+v", ends, want)
	}
	if len(obs.evs) != 4 {
		t.Errorf("%d events, want 4", len(obs.evs))
	}
}
