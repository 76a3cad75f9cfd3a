// Command tracing shows traced tool execution: an OpenTelemetry tracer on
// the loop and the handler, and what the spans say — one "execute_tool"
// span per call with the GenAI attributes, errors marked.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/lodeworks/lode/artifact"
	"github.com/lodeworks/lode/ledger"
	"github.com/lodeworks/lode/loop"
	"github.com/lodeworks/lode/tool"
	"github.com/lodeworks/lode/x/provider/script"
	xtool "github.com/lodeworks/lode/x/tool"
)

type lookupArgs struct {
	City string `json:"city"`
}

func main() {
	if err := run(os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

func run(w io.Writer) error {
	registry := tool.NewRegistry()
	err := tool.RegisterFunc(registry, "weather", "Current weather in a city",
		func(_ context.Context, in lookupArgs) (string, error) {
			if in.City == "Atlantis" {
				return "", errors.New("no weather station in Atlantis")
			}
			return in.City + ": 4°C, light rain", nil
		})
	if err != nil {
		return err
	}

	// A recorder stands in for an exporter; in a service this would be an
	// OTLP exporter on a batch processor.
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	tracer := tp.Tracer("lode-example")

	step := loop.New(
		loop.WithTracer(tracer),
		loop.WithHandlers(xtool.NewHandler(registry, xtool.WithTracer(tracer))),
		loop.WithInvokeOptions(xtool.WithFilteredTools(registry, nil)),
	)
	prov := script.Play(
		script.Reply(
			artifact.ToolCall{ID: "call_1", Name: "weather", Arguments: `{"city":"Oslo"}`},
			artifact.ToolCall{ID: "call_2", Name: "weather", Arguments: `{"city":"Atlantis"}`},
			artifact.ToolCall{ID: "call_3", Name: "forecast", Arguments: `{}`},
		),
		script.Text("Oslo is rainy; Atlantis has no station."),
	)
	thread := ledger.NewThread()
	_ = thread.Append(ledger.RoleUser, artifact.Text{Content: "Weather in Oslo and Atlantis?"})
	if _, err := step.Run(context.Background(), thread, prov); err != nil {
		return err
	}
	_ = tp.Shutdown(context.Background())

	spans := rec.Ended()
	// Calls run concurrently; order the report by call ID.
	sort.SliceStable(spans, func(i, j int) bool { return callID(spans[i]) < callID(spans[j]) })
	for _, s := range spans {
		var attrs []string
		for _, kv := range s.Attributes() {
			if strings.HasPrefix(string(kv.Key), "gen_ai.tool") || kv.Key == "error.type" {
				attrs = append(attrs, fmt.Sprintf("%s=%s", kv.Key, kv.Value.Emit()))
			}
		}
		fmt.Fprintf(w, "%-26s %-6s %s\n", s.Name(), s.Status().Code, strings.Join(attrs, " "))
	}
	return nil
}

func callID(s sdktrace.ReadOnlySpan) string {
	for _, kv := range s.Attributes() {
		if kv.Key == "gen_ai.tool.call.id" {
			return kv.Value.AsString()
		}
	}
	return "~" + s.Name()
}
