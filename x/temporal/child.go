package temporal

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"

	"github.com/lodeworks/lode/artifact"
	"github.com/lodeworks/lode/ledger"
	"github.com/lodeworks/lode/loop"
	toolpkg "github.com/lodeworks/lode/tool"
	"github.com/lodeworks/lode/x/agent"
	xtool "github.com/lodeworks/lode/x/tool"
)

// Names of the activities that start and end a child agent's run.
const (
	ChildName    = "lode.Child"
	ChildEndName = "lode.ChildEnd"
)

// ChildPendingSignal carries, from a child workflow to its parent, the
// calls that wait for a decision in the child (and below it), so that the
// parent's PendingQuery lists them; a DecideSignal the parent receives
// while a child runs goes to the child.
const ChildPendingSignal = "lode.child-pending"

// ChildPending is what ChildPendingSignal carries: every call that waits
// in the run of Thread, and below it; empty when none waits any more.
type ChildPending struct {
	Thread  string
	Pending []artifact.Pending
}

// ChildInput starts the child run of the call ID of the answer at turn
// At, or finds the one started already; Decision is the decision on the
// call, when it waited for approval.
type ChildInput struct {
	Thread   string
	Agent    string `json:",omitempty"`
	At       int
	ID       string
	Decision *artifact.Decision `json:",omitempty"`
}

// ChildStart is the child run to wait for: its thread and agent, and its
// limit of turns. Child is "" when the call ended, or waits, without a
// child (Result says how: refused, denied, waiting for approval).
type ChildStart struct {
	Child    string `json:",omitempty"`
	Agent    string `json:",omitempty"`
	MaxTurns int    `json:",omitempty"`
	Result   CallResult
}

// ChildEndInput turns the end of the child run on thread Child into the
// result of the call ID; Failure is why the child workflow failed, and
// MaxTurns is set when it ran out of its turns.
type ChildEndInput struct {
	Thread   string
	Agent    string `json:",omitempty"`
	At       int
	ID       string
	Child    string
	Failure  string `json:",omitempty"`
	MaxTurns int    `json:",omitempty"`
}

// ChildThreadID is the ID of the child thread the call callID of thread
// starts: derived from both, so that an activity run again finds it.
func ChildThreadID(thread, callID string) string {
	sum := sha256.Sum256([]byte(thread + "\x00" + callID))
	return "child-" + hex.EncodeToString(sum[:12])
}

// Child is the activity that starts a child agent's run for a call: the
// call is first gated by the caller's approval rules (it waits, or is
// denied, as any call), then the child thread is created with x/agent's
// metadata, the system prompt and the task, and linked from the caller's
// thread (agent.MetaChildPrefix). Run again, it finds the thread.
func (a *Agent) Child(ctx context.Context, in ChildInput) (ChildStart, error) {
	pa, st, cs, err := a.openCall(ctx, in.Agent, in.Thread, in.At, in.ID)
	if err != nil {
		return ChildStart{}, err
	}
	defer st.Close()
	ca, ok := pa.children[cs.call.Name]
	if !ok {
		return ChildStart{}, fmt.Errorf("temporal: thread %s: call %s: %s is no child agent on this worker", in.Thread, in.ID, cs.call.Name)
	}
	if cs.result != nil {
		return ChildStart{Result: CallResult{IsError: cs.result.IsError, Len: cs.length}}, nil
	}
	if id, ok := st.Metadata(agent.MetaChildPrefix + in.ID); ok && id != "" {
		return ChildStart{Child: id, Agent: ca.path, MaxTurns: ca.spec.MaxTurns}, nil
	}
	if cs.pending != nil && in.Decision == nil {
		return ChildStart{Result: CallResult{Pending: cs.pending, Len: cs.length}}, nil
	}
	call := cs.call
	end := func(arts ...artifact.Artifact) (ChildStart, error) {
		r, err := pa.ended(ctx, st, CallInput{Thread: in.Thread, ID: in.ID}, arts)
		return ChildStart{Result: r}, err
	}
	if in.Decision != nil {
		d := *in.Decision
		d.ToolCallID, d.Name = call.ID, call.Name
		if !d.Approved {
			d.Arguments = ""
		}
		if cs.decided != nil {
			d = *cs.decided
		} else {
			rec := []artifact.Artifact{d}
			if !d.Approved {
				rec = append(rec, artifact.ToolResult{ToolCallID: d.ToolCallID, Name: d.Name, IsError: true, Content: deniedMessage(d)})
			}
			if err := st.Append(ledger.RoleTool, rec...); err != nil {
				return ChildStart{}, fmt.Errorf("temporal: thread %s: record decision on %s: %w", in.Thread, in.ID, err)
			}
		}
		if !d.Approved {
			return ChildStart{Result: CallResult{IsError: true, Len: st.Len()}}, nil
		}
		if d.Arguments != "" {
			call.Arguments = d.Arguments
		}
	} else if arts, stop := pa.gateCall(ctx, ca.spec.Tool, call); stop {
		return end(arts...)
	}

	depth := 1
	if v, ok := st.Metadata(agent.MetaDepth); ok {
		if n, err := strconv.Atoi(v); err == nil {
			depth = n + 1
		}
	}
	name := ca.spec.Name
	if depth > ca.spec.MaxDepth {
		return end(artifact.ToolResult{ToolCallID: call.ID, Name: call.Name, IsError: true,
			Content: fmt.Sprintf("the agent %s was not started: agents are already nested %d deep here, the most allowed. Do this part yourself, with the tools you have.", name, depth-1)})
	}
	task, err := ca.child.Task(call.Arguments)
	if err != nil {
		return end(artifact.ToolResult{ToolCallID: call.ID, Name: call.Name, IsError: true,
			Content: fmt.Sprintf("the agent %s was not started: %v", name, err)})
	}
	meta := map[string]string{
		agent.MetaAgent:        name,
		agent.MetaDepth:        strconv.Itoa(depth),
		agent.MetaParentThread: st.ID(),
		agent.MetaParentCall:   call.ID,
	}
	deny, err := deniedBelow(st, ca.callerReg)
	if err != nil {
		return ChildStart{}, err
	}
	if len(deny) > 0 {
		b, _ := json.Marshal(deny) // strings always encode
		meta[agent.MetaDenied] = string(b)
	}
	var turns []ledger.Turn
	if ca.spec.System != "" {
		turns = append(turns, ledger.Turn{Role: ledger.RoleSystem, Artifacts: []artifact.Artifact{artifact.Text{Content: ca.spec.System}}})
	}
	turns = append(turns, ledger.Turn{Role: ledger.RoleUser, Artifacts: []artifact.Artifact{artifact.Text{Content: task}}})
	id := ChildThreadID(st.ID(), call.ID)
	cst, err := a.store.Create(ctx, ledger.WithID(id), ledger.WithMetadata(meta), ledger.WithTurns(turns...))
	switch {
	case err == nil:
		cst.Close()
	case errors.Is(err, ledger.ErrConflict): // created by an attempt that died before the link
	default:
		return ChildStart{}, fmt.Errorf("temporal: thread %s: call %s: create the child thread: %w", in.Thread, in.ID, err)
	}
	if err := again(ctx, st, func() error { return st.SetMetadata(agent.MetaChildPrefix+call.ID, id) }); err != nil {
		return ChildStart{}, fmt.Errorf("temporal: thread %s: call %s: link the child thread: %w", in.Thread, in.ID, err)
	}
	return ChildStart{Child: id, Agent: ca.path, MaxTurns: ca.spec.MaxTurns}, nil
}

// deniedBelow is what a child of the thread st may not use, as x/agent
// reckons it: what was denied to st itself, and every tool of reg that
// st's turn did not offer.
func deniedBelow(st *ledger.StoredThread, reg toolpkg.Registry) ([]string, error) {
	deny := map[string]struct{}{}
	if v, ok := st.Metadata(agent.MetaDenied); ok && v != "" {
		var names []string
		if err := json.Unmarshal([]byte(v), &names); err != nil {
			return nil, fmt.Errorf("temporal: thread %s: metadata %q holds %q, not a list of tool names: %w", st.ID(), agent.MetaDenied, v, err)
		}
		for _, n := range names {
			deny[n] = struct{}{}
		}
	}
	offered, restricted, err := offeredTools(st)
	if err != nil {
		return nil, err
	}
	if restricted {
		for _, t := range reg.Tools() {
			if !slices.ContainsFunc(offered, func(o toolpkg.Tool) bool { return o.Name == t.Name }) {
				deny[t.Name] = struct{}{}
			}
		}
	}
	return slices.Sorted(maps.Keys(deny)), nil
}

// gateCall asks the approval rules that cover call, made by a's model: a's
// own handler's (for the call to a child agent, whose tool t is) and
// those of every caller above a. It returns what the call ends with when
// it may not run now: a Pending record, or the refusal.
func (a *Agent) gateCall(ctx context.Context, t toolpkg.Tool, call artifact.ToolCall) ([]artifact.Artifact, bool) {
	if h, ok := a.handler.(*xtool.Handler); ok {
		if reason, err := h.GateBelow(ctx, t, call); err != nil {
			return gated(call, reason, err, false), true
		}
	}
	return a.gateAbove(ctx, call)
}

// gateAbove asks the approval rules of every caller above a child agent
// about a call its model made, nearest first, as x/tool's Handler asks
// them for a child run inside its call: a call that needs a person's
// approval above waits, one refused above is refused.
func (a *Agent) gateAbove(ctx context.Context, call artifact.ToolCall) ([]artifact.Artifact, bool) {
	if a.parent == nil {
		return nil, false
	}
	t := toolpkg.Tool{Name: call.Name}
	if b, ok := a.own.Lookup(call.Name); ok {
		t = b.Tool
	}
	for g := a.parent; g != nil; g = g.parent {
		h, ok := g.handler.(*xtool.Handler)
		if !ok {
			continue
		}
		if reason, err := h.GateBelow(ctx, t, call); err != nil {
			return gated(call, reason, err, true), true
		}
	}
	return nil, false
}

// gated is what a call a gate stopped ends with.
func gated(call artifact.ToolCall, reason string, err error, above bool) []artifact.Artifact {
	if errors.Is(err, xtool.ErrPending) {
		if above {
			reason = "for the caller: " + reason
		}
		return []artifact.Artifact{artifact.Pending{ToolCallID: call.ID, Name: call.Name, Arguments: call.Arguments, Reason: reason}}
	}
	return []artifact.Artifact{artifact.ToolResult{ToolCallID: call.ID, Name: call.Name, IsError: true,
		Content: fmt.Sprintf("the call to %s was not approved: %v", call.Name, err)}}
}

// ended keeps what a call ended with and says what became of it.
func (a *Agent) ended(ctx context.Context, st *ledger.StoredThread, in CallInput, arts []artifact.Artifact) (CallResult, error) {
	var out CallResult
	for _, art := range arts {
		switch x := art.(type) {
		case artifact.ToolResult:
			out.IsError = out.IsError || x.IsError
		case artifact.Pending:
			p := x
			out.Pending = &p
		}
	}
	if err := a.keep(ctx, st, in, arts); err != nil {
		return CallResult{}, err
	}
	out.Len = st.Len()
	return out, nil
}

// ChildEnd is the activity that gives the call that started a child run
// its result: the child's answer, or its failure, worded as x/agent words
// them. Run again, it appends nothing twice.
func (a *Agent) ChildEnd(ctx context.Context, in ChildEndInput) (CallResult, error) {
	pa, st, cs, err := a.openCall(ctx, in.Agent, in.Thread, in.At, in.ID)
	if err != nil {
		return CallResult{}, err
	}
	defer st.Close()
	if cs.result != nil {
		return CallResult{IsError: cs.result.IsError, Len: cs.length}, nil
	}
	ca, ok := pa.children[cs.call.Name]
	if !ok {
		return CallResult{}, fmt.Errorf("temporal: thread %s: call %s: %s is no child agent on this worker", in.Thread, in.ID, cs.call.Name)
	}
	cst, err := a.load(ctx, in.Child)
	if err != nil {
		return CallResult{}, err
	}
	defer cst.Close()
	var failure error
	switch {
	case in.MaxTurns > 0:
		failure = &loop.LimitError{Limit: loop.LimitTurns, Max: int64(in.MaxTurns)}
	case in.Failure != "":
		failure = errors.New(in.Failure)
	}
	content, isError := ca.child.Answer(ctx, cst, failure)
	return pa.ended(ctx, st, CallInput{Thread: in.Thread, ID: in.ID},
		[]artifact.Artifact{artifact.ToolResult{ToolCallID: cs.call.ID, Name: cs.call.Name, IsError: isError, Content: content}})
}
