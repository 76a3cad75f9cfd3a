package temporal

import (
	"context"

	"go.opentelemetry.io/otel/propagation"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/workflow"
)

// TraceHeader is the Temporal header TracePropagator writes: the W3C
// trace context (traceparent, tracestate) and baggage of the context
// that started the run, as a JSON object of strings.
const TraceHeader = "lode-trace"

// TracePropagator carries the trace of the code that starts a run to
// every activity of it and to its child agents' workflows, so that a run
// is one trace whichever workers take its turns and calls: each
// activity's spans (a turn's, its chat span, a call's execute_tool) are
// children of the span the run was started in. The workflow itself makes
// no spans; it only hands the header on.
//
// Give it to client.Options.ContextPropagators of both the client that
// starts runs (client.ExecuteWorkflow with a context holding a span) and
// the client the worker is made with. A header that does not decode is
// ignored: a trace is never a reason to fail a run.
func TracePropagator() workflow.ContextPropagator { return tracePropagator{} }

var traceProp = propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{})

type tracePropagator struct{}

// traceKey holds, in a workflow's context, the carrier it was started
// with.
type traceKey struct{}

func writeTrace(w workflow.HeaderWriter, c propagation.MapCarrier) error {
	if len(c) == 0 {
		return nil
	}
	p, err := converter.GetDefaultDataConverter().ToPayload(map[string]string(c))
	if err != nil {
		return err
	}
	w.Set(TraceHeader, p)
	return nil
}

func readTrace(r workflow.HeaderReader) propagation.MapCarrier {
	p, ok := r.Get(TraceHeader)
	if !ok {
		return nil
	}
	var m map[string]string
	if converter.GetDefaultDataConverter().FromPayload(p, &m) != nil || len(m) == 0 {
		return nil
	}
	return m
}

// Inject writes the trace of ctx's span, if any.
func (tracePropagator) Inject(ctx context.Context, w workflow.HeaderWriter) error {
	c := propagation.MapCarrier{}
	traceProp.Inject(ctx, c)
	return writeTrace(w, c)
}

// Extract returns ctx continuing the trace the header names.
func (tracePropagator) Extract(ctx context.Context, r workflow.HeaderReader) (context.Context, error) {
	if c := readTrace(r); c != nil {
		ctx = traceProp.Extract(ctx, c)
	}
	return ctx, nil
}

// InjectFromWorkflow hands the workflow's trace on to an activity or a
// child workflow.
func (tracePropagator) InjectFromWorkflow(ctx workflow.Context, w workflow.HeaderWriter) error {
	c, _ := ctx.Value(traceKey{}).(propagation.MapCarrier)
	return writeTrace(w, c)
}

// ExtractToWorkflow keeps the header's trace in the workflow's context.
func (tracePropagator) ExtractToWorkflow(ctx workflow.Context, r workflow.HeaderReader) (workflow.Context, error) {
	if c := readTrace(r); c != nil {
		ctx = workflow.WithValue(ctx, traceKey{}, c)
	}
	return ctx, nil
}
