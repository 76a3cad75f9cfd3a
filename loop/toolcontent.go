package loop

import (
	"context"

	"github.com/lodeworks/lode/artifact"
	"github.com/lodeworks/lode/capture"
	"github.com/lodeworks/lode/ledger"
)

// ToolContentEvent is the content of one tool call, posted to observers
// when capture is on (WithCapture, or capture.With on the run's context)
// once the call's handlers returned and the result guards judged it. Its
// Arguments and Result are the JSON texts x/tool's "execute_tool" span
// carries as gen_ai.tool.call.arguments and gen_ai.tool.call.result,
// secrets scrubbed and bounded the same way, so that an application can
// send a call's content where its spans do not go.
//
// A call a guard stopped before it ran gets none: its arguments are not
// exported. A call waiting for approval gets one when it runs (Resume).
type ToolContentEvent struct {
	// ToolCallID and Name are the call's, as the model wrote them.
	ToolCallID string
	Name       string
	// Arguments is gen_ai.tool.call.arguments.
	Arguments string
	// Result is gen_ai.tool.call.result; empty when Withheld.
	Result string
	// IsError says the result the model reads reports a failure, as a
	// withheld one does.
	IsError bool
	// Withheld says a result guard stopped this answer's results, so the
	// span records none and Result is empty.
	Withheld bool
}

// EventName returns "tool_content".
func (ToolContentEvent) EventName() string { return "tool_content" }

// notifyToolContent posts a ToolContentEvent for each result of c's call
// that the sealed collector c holds; pass is the result guards' verdict,
// the one the call's span was given.
func (s *Step) notifyToolContent(ctx context.Context, c *collector, pass bool) {
	cc := capture.From(ctx)
	if !cc.On || len(s.observers) == 0 {
		return
	}
	call := c.call
	c.mu.Lock()
	turns := c.turns
	c.mu.Unlock()
	var args string
	for _, tc := range turns {
		if tc.Role != ledger.RoleTool {
			continue
		}
		for _, a := range tc.Artifacts {
			r, ok := a.(artifact.ToolResult)
			if !ok || r.ToolCallID != call.ID {
				continue
			}
			if args == "" {
				args = cc.Attr(capture.Arguments(call.Arguments))
			}
			ev := ToolContentEvent{ToolCallID: call.ID, Name: call.Name, Arguments: args, IsError: r.IsError, Withheld: !pass}
			if pass {
				ev.Result = cc.Attr(r.Content)
			}
			s.notify(ctx, ev)
		}
	}
}
