package loop

import (
	"context"
	"strings"
	"testing"

	"github.com/lodeworks/lode/artifact"
	"github.com/lodeworks/lode/capture"
	"github.com/lodeworks/lode/ledger"
)

// BenchmarkToolContentEvent is what telling the observers one call's
// content costs, apart from the call: a 60-byte JSON of arguments and a
// 1 KB result, encoded and scrubbed of one secret as on the span, posted
// to one observer that drops it. With capture off nothing is done.
func BenchmarkToolContentEvent(b *testing.B) {
	call := artifact.ToolCall{ID: "call_1", Name: "lookup", Arguments: `{"q":"the plan for Friday","limit":10,"exact":true}`}
	res := artifact.ToolResult{ToolCallID: "call_1", Name: "lookup", Content: strings.Repeat("The plan is on track. ", 46)}
	s := New(WithObserver(EmitterFunc(func(context.Context, Event) {})))
	for _, on := range []bool{false, true} {
		name := "off"
		if on {
			name = "on"
		}
		b.Run(name, func(b *testing.B) {
			ctx := capture.With(b.Context(), capture.Config{On: on, Secrets: []string{"sk-bench-4b1e9d7c"}})
			c := &collector{step: s, call: call, sealed: true,
				turns: []TurnCompleteEvent{{Role: ledger.RoleTool, Artifacts: []artifact.Artifact{res}}}}
			b.ReportAllocs()
			for b.Loop() {
				s.notifyToolContent(ctx, c, true)
			}
			b.StopTimer()
			if err := s.Flush(ctx); err != nil {
				b.Fatal(err)
			}
		})
	}
}
