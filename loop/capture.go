package loop

import (
	"context"

	"github.com/lodeworks/lode/artifact"
	"github.com/lodeworks/lode/capture"
	"github.com/lodeworks/lode/provider"
)

// WithCapture records the conversation's content on the spans of every
// turn: each adapter's "chat" span (gen_ai.input.messages,
// gen_ai.output.messages, gen_ai.system_instructions) and x/tool's
// "execute_tool" spans (gen_ai.tool.call.arguments and .result), and
// posts the same to the observers: a ContentEvent for each answer, a
// ToolContentEvent for each tool call. A Config that is not On leaves
// the choice to the context (capture.With). Content a guard stops (an
// answer, a tool's result) is never recorded: with guards at those
// checkpoints, a span's content waits for their verdict.
func WithCapture(c capture.Config) Option {
	if c.On {
		c = capture.From(capture.With(context.Background(), c))
	}
	return func(s *Step) { s.capture = c }
}

// ContentEvent is the content of one answer, posted to observers when
// capture is on and the answer passed the output guards. Its fields are
// the JSON texts the turn's "chat" span carries, secrets scrubbed and
// bounded the same way, so that an application can send them where its
// spans do not go.
type ContentEvent struct {
	// SystemInstructions is gen_ai.system_instructions; empty when the
	// request had none.
	SystemInstructions string
	// InputMessages is gen_ai.input.messages.
	InputMessages string
	// OutputMessages is gen_ai.output.messages.
	OutputMessages string
}

// EventName returns "content".
func (ContentEvent) EventName() string { return "content" }

// capturing is ctx with the turn's capture Config, and the Hold the turn
// releases once the answer passed: in ctx when an output guard must judge
// the answer first, so that the chat spans wait for it; a Hold of its own
// otherwise, which only says capture is on. nil when capture is off.
func (s *Step) capturing(ctx context.Context) (context.Context, *capture.Hold) {
	if s.capture.On {
		ctx = capture.With(ctx, s.capture)
	} else if !capture.From(ctx).On {
		return ctx, nil
	}
	if s.g != nil && len(s.g.output) > 0 {
		return capture.WithHold(ctx)
	}
	return ctx, &capture.Hold{}
}

// contentEvent is what the observers are told of an answer that passed.
func contentEvent(ctx context.Context, req *provider.Request, arts []artifact.Artifact) ContentEvent {
	cc := capture.From(ctx)
	system, msgs := capture.Input(req.Turns)
	if msgs == nil {
		msgs = []capture.Message{}
	}
	ev := ContentEvent{
		InputMessages:  cc.Attr(msgs),
		OutputMessages: cc.Attr([]capture.Message{capture.Output(arts)}),
	}
	if len(system) > 0 {
		ev.SystemInstructions = cc.Attr(system)
	}
	return ev
}

// handleCall is handleOne for a tool call. With capture on and result
// guards (trip not nil), the call's span records its result only once
// they passed it: what they stop is never exported.
// The observers get the call's content once its span has it, the guards'
// verdict included.
func (s *Step) handleCall(ctx context.Context, i int, a artifact.Artifact, c *collector, trip *tripped) error {
	if !capture.From(ctx).On {
		return s.handleOne(ctx, i, a, c)
	}
	if trip == nil {
		err := s.handleOne(ctx, i, a, c)
		s.notifyToolContent(ctx, c, true)
		return err
	}
	ctx, hold := capture.WithHold(ctx)
	err := s.handleOne(ctx, i, a, c)
	pass := trip.get() == nil
	hold.Release(pass)
	s.notifyToolContent(ctx, c, pass)
	return err
}
