package tool

import (
	"context"
	"time"

	"github.com/lodeworks/lode/artifact"
	toolpkg "github.com/lodeworks/lode/tool"
)

// CallTimeout returns how long the handler lets call run: its tool's
// Timeout, else the handler's (WithTimeout, DefaultTimeout). An engine
// that runs each call apart, such as x/temporal's activities, bounds the
// attempt by it, a little past, so that the handler's own timeout result
// is what the model reads.
func (h *Handler) CallTimeout(call artifact.ToolCall) time.Duration {
	if b, found := h.registry.Lookup(call.Name); found && b.Tool.Timeout > 0 {
		return b.Tool.Timeout
	}
	return h.timeout
}

// GateBelow asks this handler's approval rules about call, made below one
// of its calls by an agent's child that an engine runs apart (x/temporal
// runs it as a workflow of its own, so the chain of contexts through
// which a child's handler finds its caller's gate is cut): t is the
// child's tool, matched here by name as for a child run inside the call.
// It returns nil when the call may run as far as this handler is
// concerned; the reason and an error wrapping ErrAwaitingApproval when a person
// must decide; any other error (ErrDenied among them) refuses the call.
// A handler without an approver never asks.
func (h *Handler) GateBelow(ctx context.Context, t toolpkg.Tool, call artifact.ToolCall) (string, error) {
	b := &toolpkg.Binding{Tool: t, Source: toolpkg.LocalOwner}
	gb := b
	if ub, ok := h.registry.Lookup(call.Name); ok {
		gb = ub
	}
	reason, ask := h.needsApproval(ctx, gb, call)
	if !ask && gb != b && t.Hints.Destructive && h.approver != nil {
		reason, ask = "the tool is marked destructive", true
	}
	if !ask {
		return "", nil
	}
	if err := h.approve(ctx, gb.Tool, call); err != nil {
		return reason, err
	}
	return "", nil
}

// Admit asks this handler's execution checks about call, one of its own
// calls that an engine runs apart from Handle (x/temporal runs a call to
// an agent's child as a workflow of its own): the tools the turn offered
// and the Gate (its limits among them, read in ctx's turn). It returns
// "" when the call may go on, else the text the model reads of the
// refusal, in the very words Handle uses; what comes after (arguments,
// approvals) is the engine's to ask.
func (h *Handler) Admit(ctx context.Context, call artifact.ToolCall) string {
	tools, restricted := offered(ctx)
	if restricted && !offers(tools, call.Name) {
		return unknownTool(ctx, call.Name, tools)
	}
	b, found := h.registry.Lookup(call.Name)
	var v Verdict
	if found {
		v = h.ask(ctx, b, call)
	}
	if !found || v.Hide {
		if !restricted {
			tools = h.visible(ctx, h.registry.Tools())
		}
		return unknownTool(ctx, call.Name, tools)
	}
	return v.Refuse
}
