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
	"time"

	"github.com/lodeworks/lode/artifact"
	"github.com/lodeworks/lode/ledger"
	"github.com/lodeworks/lode/loop"
	toolpkg "github.com/lodeworks/lode/tool"
	"github.com/lodeworks/lode/x/agent"
	"github.com/lodeworks/lode/x/auth"
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
	// Stage keeps what the call ends with here (refused, denied,
	// waiting) aside, for CommitName, as CallInput.Stage does.
	Stage bool `json:",omitempty"`
}

// ChildStart is the child run to wait for: its thread and agent, and its
// limits of turns, tokens and time (the agent's WithMaxTurns,
// WithMaxTokens, WithTimeLimit). Child is "" when the call ended, or
// waits, without a child (Result says how: refused, denied, waiting for
// approval).
type ChildStart struct {
	Child     string        `json:",omitempty"`
	Agent     string        `json:",omitempty"`
	MaxTurns  int           `json:",omitempty"`
	MaxTokens int64         `json:",omitempty"`
	TimeLimit time.Duration `json:",omitempty"`
	Result    CallResult
}

// ChildEndInput turns the end of the child run on thread Child into the
// result of the call ID; Failure is why the child workflow failed.
// MaxTurns is set when it ran out of its turns; Limit, with what it Used
// of its Max, when it stopped at its tokens or time.
type ChildEndInput struct {
	Thread   string
	Agent    string `json:",omitempty"`
	At       int
	ID       string
	Child    string
	Failure  string     `json:",omitempty"`
	MaxTurns int        `json:",omitempty"`
	Limit    loop.Limit `json:",omitempty"`
	Used     int64      `json:",omitempty"`
	Max      int64      `json:",omitempty"`
	// Tripped is set when a guard of the child stopped it
	// (ErrTypeTripped): the caller's model reads which, where and why,
	// in x/agent's words.
	Tripped *artifact.Tripwire `json:",omitempty"`
	// Stage keeps the call's result aside, for CommitName to append with
	// the other calls of its answer, as CallInput.Stage does.
	Stage bool `json:",omitempty"`
}

// ChildThreadID is the ID of the child thread the call callID of thread
// starts: derived from both, so that an activity run again finds it.
func ChildThreadID(thread, callID string) string {
	sum := sha256.Sum256([]byte(thread + "\x00" + callID))
	return "child-" + hex.EncodeToString(sum[:12])
}

// Child is the activity that starts a child agent's run for a call: the
// call is first checked as the caller's handler checks any call (the
// tools its turn offered, its Gate), then gated by the caller's approval
// rules (it waits, or is denied, as any call), then the child thread is created with x/agent's
// metadata, the system prompt and the task, and linked from the caller's
// thread (agent.MetaChildPrefix). Run again, it finds the thread.
func (a *Agent) Child(ctx context.Context, in ChildInput) (ChildStart, error) {
	defer heartbeat(ctx)()
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
		return ca.started(id), nil
	}
	if cs.pending != nil && in.Decision == nil {
		return ChildStart{Result: CallResult{Pending: cs.pending, Len: cs.length}}, nil
	}
	call := cs.call
	end := func(arts ...artifact.Artifact) (ChildStart, error) {
		r, err := pa.ended(ctx, st, CallInput{Thread: in.Thread, ID: in.ID, Stage: in.Stage}, arts)
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
	} else if msg, err := pa.admit(ctx, st, in.At, call); err != nil {
		return ChildStart{}, err
	} else if msg != "" {
		return end(artifact.ToolResult{ToolCallID: call.ID, Name: call.Name, IsError: true, Content: msg})
	} else if arts, stop, err := pa.gateCall(ctx, st, in.At, ca.spec.Tool, call); err != nil {
		return ChildStart{}, err
	} else if stop {
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
		agent.MetaSession:      st.ID(),
	}
	// The child's spans name the session of the outermost run.
	if v, ok := st.Metadata(agent.MetaSession); ok && v != "" {
		meta[agent.MetaSession] = v
	}
	// The caller's identity goes down with the task, as the door wrote
	// it, so that x/policy's roles and tenant limits bind in the child.
	for _, k := range []string{auth.UserKey, auth.TenantKey, auth.RolesKey} {
		if v, ok := st.Metadata(k); ok {
			meta[k] = v
		}
	}
	// So do the flow labels the caller's context took in, as in x/agent.
	for _, l := range ledger.Labels(st) {
		meta[ledger.LabelKeyPrefix+string(l)], _ = ledger.HasLabel(st, l)
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
	return ca.started(id), nil
}

// started is the child run of ca on thread id, with its limits.
func (ca *Agent) started(id string) ChildStart {
	return ChildStart{Child: id, Agent: ca.path, MaxTurns: ca.spec.MaxTurns, MaxTokens: ca.spec.MaxTokens, TimeLimit: ca.spec.TimeLimit}
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

// admit asks a's x/tool Handler, as its Handle would before it runs call,
// made at turn at of st, whether the turn offered the call's tool and its
// Gate lets the call go on (x/policy's rules and limits); it returns the
// refusal the model reads, or "".
func (a *Agent) admit(ctx context.Context, st *ledger.StoredThread, at int, call artifact.ToolCall) (string, error) {
	h, ok := a.handler.(*xtool.Handler)
	if !ok {
		return "", nil
	}
	tools, restricted, err := offeredTools(st)
	if err != nil {
		return "", err
	}
	cctx := turnContext(ctx, st, at, call.ID)
	if restricted {
		cctx = xtool.WithOffered(cctx, tools)
	}
	return h.Admit(cctx, call), nil
}

// gateCall asks the approval rules that cover call, made by a's model at
// turn at of st: a's own handler's (for the call to a child agent, whose
// tool t is) and those of every caller above a. It returns what the call
// ends with when it may not run now: a Pending record, or the refusal.
func (a *Agent) gateCall(ctx context.Context, st *ledger.StoredThread, at int, t toolpkg.Tool, call artifact.ToolCall) ([]artifact.Artifact, bool, error) {
	if h, ok := a.handler.(*xtool.Handler); ok {
		if reason, err := h.GateBelow(turnContext(ctx, st, at, call.ID), t, call); err != nil {
			return gated(call, reason, err, false), true, nil
		}
	}
	return a.gateAbove(ctx, st, at, call, false)
}

// caller is one caller above a child agent, as the ledger links it: its
// agent, its thread, and the turn and ID of the call the child runs
// below; st is nil when the link is missing (a thread created by hand).
type caller struct {
	g  *Agent
	st *ledger.StoredThread
	at int
	id string
}

// callers loads the callers above a, whose thread is st, nearest first,
// from the links x/agent's metadata keeps (agent.MetaParentThread,
// agent.MetaParentCall); close them with closeCallers.
func (a *Agent) callers(ctx context.Context, st *ledger.StoredThread) ([]caller, error) {
	var out []caller
	cur := st
	for g := a.parent; g != nil; g = g.parent {
		c := caller{g: g}
		if cur != nil {
			thread, _ := cur.Metadata(agent.MetaParentThread)
			id, _ := cur.Metadata(agent.MetaParentCall)
			if thread != "" && id != "" {
				pst, err := a.load(ctx, thread)
				if err != nil {
					closeCallers(out)
					return nil, err
				}
				c.st, c.at, c.id = pst, answerOf(pst, id), id
			}
		}
		out = append(out, c)
		cur = c.st
	}
	return out, nil
}

func closeCallers(cs []caller) {
	for _, c := range cs {
		if c.st != nil {
			c.st.Close()
		}
	}
}

// answerOf is the index of the assistant turn of st that holds the call
// id, searched from the end, where the call being run is; -1 when none.
func answerOf(st *ledger.StoredThread, id string) int {
	turns := st.Turns()
	for i := len(turns) - 1; i >= 0; i-- {
		if turns[i].Role != ledger.RoleAssistant {
			continue
		}
		for _, art := range turns[i].Artifacts {
			if c, ok := art.(artifact.ToolCall); ok && c.ID == id {
				return i
			}
		}
	}
	return -1
}

// turnContext is ctx marked, as a loop turn marks a handler's, with the
// turn at of st and the call id of its answer, so that a rule reading
// loop.CurrentTurn reads the turn that made the call; ctx itself when st
// holds no such turn.
func turnContext(ctx context.Context, st *ledger.StoredThread, at int, id string) context.Context {
	if st == nil {
		return ctx
	}
	turns := st.Turns()
	if at < 0 || at >= len(turns) {
		return ctx
	}
	answer := turns[at].Artifacts
	for i, art := range answer {
		if c, ok := art.(artifact.ToolCall); ok && c.ID == id {
			return loop.WithTurn(ctx, loop.TurnInfo{State: st, Answer: answer}, i)
		}
	}
	return ctx
}

// callsBefore counts the tool calls st's model made in its run (since the
// last user message) before the call id of turn at, each with the calls
// made below it (xtool.RecordedBelow), as x/policy counts a run's calls;
// an at past the thread's end counts them all.
func callsBefore(st ledger.State, at int, id string) int {
	turns := st.Turns()
	n := 0
	count := func(arts []artifact.Artifact, stop string) {
		for _, art := range arts {
			c, ok := art.(artifact.ToolCall)
			if !ok {
				continue
			}
			if stop != "" && c.ID == stop {
				return
			}
			n += 1 + xtool.RecordedBelow(st, c.ID)
		}
	}
	if at >= len(turns) {
		at = len(turns)
	} else if at >= 0 {
		count(turns[at].Artifacts, id)
	}
	for i := at - 1; i >= 0; i-- {
		switch turns[i].Role {
		case ledger.RoleUser:
			return n
		case ledger.RoleAssistant:
			count(turns[i].Artifacts, "")
		}
	}
	return n
}

// gateAbove asks every caller above a child agent about a call its model
// made at turn at of st, nearest first, as x/tool's Handler asks them for
// a child run inside its call, each in the context of its own call's
// turn: with limits, the call first counts toward each caller's calls
// (xtool.Handler.LimitBelow), and one past a caller's limit is refused;
// then a call that needs a person's approval above waits, one refused
// above is refused.
func (a *Agent) gateAbove(ctx context.Context, st *ledger.StoredThread, at int, call artifact.ToolCall, limits bool) ([]artifact.Artifact, bool, error) {
	if a.parent == nil {
		return nil, false, nil
	}
	cs, err := a.callers(ctx, st)
	if err != nil {
		return nil, false, err
	}
	defer closeCallers(cs)
	t, source := toolpkg.Tool{Name: call.Name}, toolpkg.LocalOwner
	if b, ok := a.own.Lookup(call.Name); ok {
		t, source = b.Tool, b.Source
	}
	if limits {
		// n is how many calls were made below the caller's call, this one
		// included: those of the run below it, before this one.
		n := callsBefore(st, at, call.ID) + 1
		for _, c := range cs {
			if c.st == nil {
				break
			}
			if h, ok := c.g.handler.(*xtool.Handler); ok {
				if msg := h.LimitBelow(turnContext(ctx, c.st, c.at, c.id), t, source, call, n); msg != "" {
					return []artifact.Artifact{artifact.ToolResult{ToolCallID: call.ID, Name: call.Name, IsError: true, Content: msg}}, true, nil
				}
			}
			n += callsBefore(c.st, c.at, c.id) + 1
		}
	}
	for _, c := range cs {
		h, ok := c.g.handler.(*xtool.Handler)
		if !ok {
			continue
		}
		if reason, err := h.GateBelow(turnContext(ctx, c.st, c.at, c.id), t, call); err != nil {
			return gated(call, reason, err, true), true, nil
		}
	}
	return nil, false, nil
}

// gated is what a call a gate stopped ends with.
func gated(call artifact.ToolCall, reason string, err error, above bool) []artifact.Artifact {
	if errors.Is(err, xtool.ErrAwaitingApproval) {
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
	defer heartbeat(ctx)()
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
	// The child's calls count toward the caller's run from here on, as
	// x/tool's Handler keeps them when a child run inside a call ends.
	if err := again(ctx, st, func() error { return xtool.RecordBelow(st, in.ID, callsBefore(cst, cst.Len(), "")) }); err != nil {
		return CallResult{}, fmt.Errorf("temporal: thread %s: call %s: keep the calls made below it: %w", in.Thread, in.ID, err)
	}
	// What the child took in comes back to its caller, however it ended,
	// as in x/agent: the child's answer may carry what it read.
	for _, l := range ledger.Labels(cst) {
		if err := again(ctx, st, func() error { return ledger.AddLabel(st, l, cs.call.Name) }); err != nil {
			return CallResult{}, fmt.Errorf("temporal: thread %s: call %s: bring back the child's labels: %w", in.Thread, in.ID, err)
		}
	}
	var failure error
	switch {
	case in.Tripped != nil:
		failure = loop.TripErrorOf(*in.Tripped)
	case in.Limit != "":
		failure = &loop.LimitError{Limit: in.Limit, Used: in.Used, Max: in.Max}
	case in.MaxTurns > 0:
		failure = &loop.LimitError{Limit: loop.LimitTurns, Max: int64(in.MaxTurns)}
	case in.Failure != "":
		failure = errors.New(in.Failure)
	}
	content, isError := ca.child.Answer(ctx, cst, failure)
	return pa.ended(ctx, st, CallInput{Thread: in.Thread, ID: in.ID, Stage: in.Stage},
		[]artifact.Artifact{artifact.ToolResult{ToolCallID: cs.call.ID, Name: cs.call.Name, IsError: isError, Content: content}})
}
