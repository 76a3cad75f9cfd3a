package temporal_test

import (
	"context"
	"slices"
	"strings"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
	commonpb "go.temporal.io/api/common/v1"
	"go.temporal.io/sdk/workflow"

	"github.com/lodeworks/lode/artifact"
	"github.com/lodeworks/lode/ledger"
	"github.com/lodeworks/lode/ledger/file"
	"github.com/lodeworks/lode/loop"
	"github.com/lodeworks/lode/tool"
	"github.com/lodeworks/lode/x/agent"
	"github.com/lodeworks/lode/x/auth"
	"github.com/lodeworks/lode/x/provider/script"
	lt "github.com/lodeworks/lode/x/temporal"
	xtool "github.com/lodeworks/lode/x/tool"
)

// header is a workflow.HeaderWriter over a header the test starts a run
// with, as the client writes it.
type header struct{ *commonpb.Header }

func (h header) Set(k string, p *commonpb.Payload) { h.Fields[k] = p }

// traced runs thread t1 (written by a door for ann) through Temporal, its
// header holding the trace of a "start run" span when propagate is set,
// or bad when it is not nil; it returns the spans and the starter's.
func traced(t *testing.T, propagate bool, bad *commonpb.Payload) ([]sdktrace.ReadOnlySpan, trace.SpanContext) {
	t.Helper()
	store, err := file.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	caller := auth.Identity{User: "ann", Tenant: "acme", Roles: []string{"editor"}}
	st, err := store.Create(context.Background(), ledger.WithID("t1"), ledger.WithMetadata(caller.Metadata()),
		ledger.WithTurns(ledger.Turn{Role: ledger.RoleUser, Artifacts: []artifact.Artifact{artifact.Text{Content: "add"}}}))
	if err != nil {
		t.Fatal(err)
	}
	st.Close()

	rec := tracetest.NewSpanRecorder()
	tracer := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec)).Tracer("test")
	reg := tool.NewRegistry()
	if err := tool.RegisterFunc(reg, "add", "Add", func(_ context.Context, in struct{ A, B int }) (int, error) {
		return in.A + in.B, nil
	}); err != nil {
		t.Fatal(err)
	}
	prov := script.Play(script.Reply(artifact.ToolCall{ID: "c1", Name: "add", Arguments: `{"A":2,"B":40}`}), script.Text("42"))
	a, err := lt.New(store, prov, lt.WithHandler(xtool.NewHandler(reg, xtool.WithTracer(tracer))),
		lt.WithLoopOptions(loop.WithTracer(tracer)))
	if err != nil {
		t.Fatal(err)
	}

	ctx, start := tracer.Start(context.Background(), "start run")
	h := header{&commonpb.Header{Fields: map[string]*commonpb.Payload{}}}
	if err := lt.TracePropagator().Inject(ctx, h); err != nil {
		t.Fatal(err)
	}
	if bad != nil {
		h.Fields[lt.TraceHeader] = bad
	}
	start.End()
	e := newEnv(a)
	if propagate {
		e.SetContextPropagators([]workflow.ContextPropagator{lt.TracePropagator()})
	}
	e.SetHeader(h.Header)
	e.ExecuteWorkflow(lt.WorkflowName, lt.RunInput{Thread: "t1"})
	if err := e.GetWorkflowError(); err != nil {
		t.Fatal(err)
	}
	var spans []sdktrace.ReadOnlySpan
	for _, s := range rec.Ended() {
		if s.Name() != "start run" {
			spans = append(spans, s)
		}
	}
	return spans, start.SpanContext()
}

// A run through Temporal continues the trace of the code that started it
// when both clients have TracePropagator: the turn and call activities'
// spans (the loop's turns, x/tool's execute_tool) are children of the
// starter's span. Whatever the header, each span names the thread and the
// caller a door wrote on it, and a header that does not decode stops
// nothing.
func TestActivitiesContinueTheStartersTrace(t *testing.T) {
	garbage := &commonpb.Payload{Metadata: map[string][]byte{"encoding": []byte("json/plain")}, Data: []byte("{not json")}
	for _, tc := range []struct {
		name      string
		propagate bool
		bad       *commonpb.Payload
		oneTrace  bool
	}{
		{"with the propagator", true, nil, true},
		{"without it", false, nil, false},
		{"a header that does not decode", true, garbage, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			spans, root := traced(t, tc.propagate, tc.bad)
			want := map[attribute.Key]string{"gen_ai.conversation.id": "t1", "session.id": "t1", "user.id": "ann",
				"user.roles": `["editor"]`, "lode.tenant": "acme"}
			var names []string
			for _, s := range spans {
				names = append(names, s.Name())
				if in := s.SpanContext().TraceID() == root.TraceID(); in != tc.oneTrace {
					t.Errorf("span %q in the starter's trace: %v, want %v", s.Name(), in, tc.oneTrace)
				}
				if s.Name() == "lode.turn" && (s.Parent().SpanID() == root.SpanID()) != tc.oneTrace {
					t.Errorf("turn span's parent %s, starter's span %s", s.Parent().SpanID(), root.SpanID())
				}
				got := map[attribute.Key]string{}
				for _, kv := range s.Attributes() {
					if _, ok := want[kv.Key]; ok {
						got[kv.Key] = kv.Value.Emit()
					}
				}
				for k, v := range want {
					if got[k] != v {
						t.Errorf("span %q: %s = %q, want %q", s.Name(), k, got[k], v)
					}
				}
			}
			slices.Sort(names)
			if got := strings.Join(names, ","); got != "execute_tool add,lode.turn,lode.turn" {
				t.Errorf("spans %s", got)
			}
		})
	}
}

// A child agent's workflow continues its caller's trace too: the spans of
// its activities are in the starter's trace and name the child's thread,
// in the caller's session.
func TestChildWorkflowContinuesTheTrace(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tracer := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec)).Tracer("test")
	f := newFamily(t,
		[]script.Step{script.Call("c1", "helper", `{"task":"look"}`), script.Text("done")},
		[]script.Step{script.Call("k1", "read", `{}`), script.Text("found it")},
		[]agent.Option{agent.WithTracer(tracer)}, xtool.WithTracer(tracer))
	ctx, start := tracer.Start(context.Background(), "start run")
	h := header{&commonpb.Header{Fields: map[string]*commonpb.Payload{}}}
	if err := lt.TracePropagator().Inject(ctx, h); err != nil {
		t.Fatal(err)
	}
	start.End()
	e := newEnv(f.a)
	e.SetContextPropagators([]workflow.ContextPropagator{lt.TracePropagator()})
	e.SetHeader(h.Header)
	e.ExecuteWorkflow(lt.WorkflowName, lt.RunInput{Thread: f.id})
	if err := e.GetWorkflowError(); err != nil {
		t.Fatal(err)
	}
	childID := lt.ChildThreadID(f.id, "c1")
	var names []string
	for _, s := range rec.Ended() {
		if s.Name() == "start run" {
			continue
		}
		conv, session := "", ""
		for _, kv := range s.Attributes() {
			switch kv.Key {
			case "gen_ai.conversation.id":
				conv = kv.Value.AsString()
			case "session.id":
				session = kv.Value.AsString()
			}
		}
		names = append(names, s.Name()+" in "+conv+" session "+session)
		if s.SpanContext().TraceID() != start.SpanContext().TraceID() {
			t.Errorf("span %q is not in the starter's trace", s.Name())
		}
	}
	slices.Sort(names)
	want := "execute_tool read in " + childID + " session " + f.id
	if !slices.Contains(names, want) {
		t.Errorf("spans:\n%s\nwant among them %q", strings.Join(names, "\n"), want)
	}
}
