package tool

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/lodeworks/lode/artifact"
	"github.com/lodeworks/lode/loop"
	toolpkg "github.com/lodeworks/lode/tool"
)

// ErrNoApprover is why a call that needs approval is refused by a
// Handler that has no Approver to ask.
var ErrNoApprover = errors.New("xtool: the call needs a person's approval and this handler has no approver to ask (xtool.WithApprover); it did not run")

// ErrAwaitingApproval is what an Approver returns when a person must
// decide later: the Handler records the call as an artifact.Pending in the
// ledger instead of running it, and loop.Run pauses with a
// *loop.PendingError.
//
// It is not loop.ErrPaused, though x/tool could take that one: this one
// says that one call waits, and only a Handler reads it (it never leaves
// the Handler as an error); loop.ErrPaused says that a run paused, and is
// what callers of Run and Resume check. Were they one value, an Approver's
// or a tool's error about a single call would read as a paused run to code
// that checks a run's outcome, and the other way round.
var ErrAwaitingApproval = errors.New("xtool: the call waits for approval")

// ErrPending is ErrAwaitingApproval.
//
// Deprecated: use ErrAwaitingApproval, whose name says what it means.
var ErrPending = ErrAwaitingApproval

// PendingError is what a tool returns when its call cannot finish until a
// person approves something it started (x/agent returns one when its
// child's run paused): the Handler records the call as an
// artifact.Pending with Reason, as it does for the calls it gates itself,
// and loop.Run pauses. Resuming approves the call, and the tool runs again
// under loop.Approved to carry the decision down.
type PendingError struct {
	// Reason is shown to the person deciding; "" gives a generic one.
	Reason string
}

func (e *PendingError) Error() string {
	if e.Reason == "" {
		return ErrAwaitingApproval.Error()
	}
	return ErrAwaitingApproval.Error() + ": " + e.Reason
}

// Unwrap returns ErrAwaitingApproval.
func (e *PendingError) Unwrap() error { return ErrAwaitingApproval }

// PauseForDecision is an Approver that leaves every call to a person: each
// call that needs approval is recorded as pending and pauses the run until
// loop.Step.Resume brings the decision.
func PauseForDecision(context.Context, toolpkg.Tool, artifact.ToolCall) error {
	return ErrAwaitingApproval
}

// AskLater is PauseForDecision.
//
// Deprecated: use PauseForDecision, whose name says what it does.
func AskLater(ctx context.Context, t toolpkg.Tool, call artifact.ToolCall) error {
	return PauseForDecision(ctx, t, call)
}

// ApprovalRule selects calls that need approval beyond those to
// destructive tools, and says why (the reason is kept with a pending call
// and shown to the person deciding). It must be safe for concurrent use.
type ApprovalRule func(ctx context.Context, t toolpkg.Tool, call artifact.ToolCall) (reason string, ask bool)

// WithApprovalRule adds a rule; a call needs approval when its tool is
// destructive or any rule asks. A nil rule is skipped. Without an Approver
// (WithApprover), a call a rule selects is refused with an error result:
// it never runs unapproved.
func WithApprovalRule(r ApprovalRule) HandlerOption {
	return func(h *Handler) {
		if r != nil {
			h.approval.rules = append(h.approval.rules, r)
		}
	}
}

// WithApprovalFor makes every call to the named tools, and to every tool
// of the named sources (packs, MCP servers, as mounted), need approval, as
// the approve: list of lode.yaml does. Without an Approver such calls are
// refused.
func WithApprovalFor(names ...string) HandlerOption {
	return func(h *Handler) { h.approval.names = append(h.approval.names, names...) }
}

type approvalRules struct {
	names []string
	rules []ApprovalRule
}

// needsApproval reports whether call must be approved before it runs, and
// why.
//
// Without an Approver, a destructive hint asks nothing, since MCP marks
// every tool destructive that does not say otherwise; but a call that
// WithApprovalFor or a rule selects is asked for all the same, and
// approve then refuses it: the configuration asked for a person, and a
// handler with no one to ask fails closed.
func (h *Handler) needsApproval(ctx context.Context, b *toolpkg.Binding, call artifact.ToolCall) (reason string, ask bool) {
	if h.approver == nil && len(h.approval.names) == 0 && len(h.approval.rules) == 0 {
		return "", false
	}
	if b.Tool.Hints.Destructive && h.approver != nil {
		return "the tool is marked destructive", true
	}
	switch {
	case slices.Contains(h.approval.names, b.Tool.Name):
		return fmt.Sprintf("the configuration requires approval for %s", b.Tool.Name), true
	case b.Source != toolpkg.LocalOwner && slices.Contains(h.approval.names, b.Source):
		return fmt.Sprintf("the configuration requires approval for the tools of %s", b.Source), true
	}
	for _, r := range h.approval.rules {
		if reason, ask := h.askRule(ctx, r, b.Tool, call); ask {
			return reason, true
		}
	}
	return "", false
}

// gateKey asks a tool call's context for the callCtx of the nearest call
// above it whose handler gates calls (an approver, a Gate).
type gateKey struct{}

// gateCall asks every approval gate that covers call: this handler's own
// approver when ask, then those of the handlers running the calls this one
// is made under (an agent's child runs inside its parent's call), nearest
// first, each with its own rules evaluated in its own call's context, so
// that a rule reading the caller (x/policy's roles) reads the caller's
// thread. Above, a tool is matched by name: the upper handler's tool of
// that name when its registry holds one, else the tool being called, and
// a destructive hint on either asks. A refusal by any gate refuses the
// call; otherwise a gate that defers makes it pending, with the first
// deferring gate's reason.
func (h *Handler) gateCall(ctx context.Context, above *callCtx, ask bool, reason string, b *toolpkg.Binding, call artifact.ToolCall) (string, error) {
	var pending string
	deferred := false
	if ask {
		err := h.approve(ctx, b.Tool, call)
		switch {
		case errors.Is(err, ErrAwaitingApproval):
			pending, deferred = reason, true
		case err != nil:
			return "", err
		}
	}
	for g := above; g != nil; g, _ = g.parent.Value(gateKey{}).(*callCtx) {
		gb := b
		if ub, ok := g.gate.registry.Lookup(call.Name); ok {
			gb = ub
		}
		r, ask := g.gate.needsApproval(g, gb, call)
		if !ask && gb != b && b.Tool.Hints.Destructive && g.gate.approver != nil {
			r, ask = "the tool is marked destructive", true
		}
		if !ask {
			continue
		}
		err := g.gate.approve(g, gb.Tool, call)
		switch {
		case errors.Is(err, ErrAwaitingApproval):
			if !deferred {
				pending, deferred = "for the caller: "+r, true
			}
		case err != nil:
			return "", err
		}
	}
	if deferred {
		return pending, ErrAwaitingApproval
	}
	return "", nil
}

// askRule runs an application's rule; one that panics asks for approval,
// since failing closed is the safe side of a gate.
func (h *Handler) askRule(ctx context.Context, r ApprovalRule, t toolpkg.Tool, call artifact.ToolCall) (reason string, ask bool) {
	defer func() {
		if p := recover(); p != nil {
			h.log().ErrorContext(ctx, "lode: approval rule panicked", "tool", t.Name, "panic", p)
			reason, ask = fmt.Sprintf("the approval rule failed (%v)", p), true
		}
	}()
	reason, ask = r(ctx, t, call)
	if ask && reason == "" {
		reason = "the application requires approval"
	}
	return reason, ask
}

// pendingResult is the outcome of a call that waits for approval: Handle
// emits the Pending record, and Execute, whose callers cannot wait,
// returns the error result.
func pendingResult(call artifact.ToolCall, reason string, remote bool, t *toolpkg.Tool) (artifact.ToolResult, outcome) {
	p := &artifact.Pending{ToolCallID: call.ID, Name: call.Name, Arguments: call.Arguments, Reason: reason}
	return artifact.ToolResult{ToolCallID: call.ID, Name: call.Name, IsError: true,
			Content: fmt.Sprintf("the call to %s waits for a person's approval (%s) and did not run", call.Name, reason)},
		outcome{remote: remote, tool: t, pending: p}
}

// CheckCall reports why call could not run as sent: an unknown tool, or
// arguments that are not JSON or break the tool's schema (an
// *tool.ArgumentsError). loop.Step.Resume uses it to refuse edited
// arguments before it records anything.
func (h *Handler) CheckCall(_ context.Context, call artifact.ToolCall) error {
	b, found := h.registry.Lookup(call.Name)
	if !found {
		return fmt.Errorf("xtool: unknown tool %s", quoteName(call.Name))
	}
	sb := h.sandbox
	if s, ok := h.sandboxes[b.Tool.Name]; ok {
		sb = s
		if sb == nil {
			sb = toolpkg.NoSandbox()
		}
	}
	if _, err := b.Prepare(sb, call.Arguments); err != nil {
		return err
	}
	return nil
}

// Idempotent reports whether call's tool says running it twice is
// harmless (tool.Hints.Idempotent), which lets Resume run again an approved
// call whose run was interrupted.
func (h *Handler) Idempotent(call artifact.ToolCall) bool {
	b, found := h.registry.Lookup(call.Name)
	return found && b.Tool.Hints.Idempotent
}

var _ loop.CallChecker = (*Handler)(nil)

// approvalAttrs says on the span that a call paused, or who approved it.
func approvalAttrs(span trace.Span, o outcome) {
	switch {
	case o.pending != nil:
		span.SetAttributes(attribute.String("lode.approval", "pending"),
			attribute.String("lode.approval.reason", attrText(o.pending.Reason)))
	case o.approved != nil:
		span.SetAttributes(attribute.String("lode.approval", "approved"),
			attribute.String("lode.approval.by", attrText(o.approved.By)),
			attribute.Bool("lode.approval.edited", o.approved.Arguments != ""))
	}
}
