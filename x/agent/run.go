package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/lodeworks/lode/artifact"
	"github.com/lodeworks/lode/internal/runspan"
	"github.com/lodeworks/lode/ledger"
	"github.com/lodeworks/lode/loop"
	"github.com/lodeworks/lode/tool"
	"github.com/lodeworks/lode/x/auth"
	"github.com/lodeworks/lode/x/output"
	xtool "github.com/lodeworks/lode/x/tool"
)

// Metadata keys of a child thread, linking it to where it was started.
const (
	// MetaAgent names the agent that ran the thread.
	MetaAgent = "lode.agent.name"
	// MetaDepth is the child's depth, from 1 for an agent called by the
	// top-level loop.
	MetaDepth = "lode.agent.depth"
	// MetaParentThread is the ID of the thread whose tool call started
	// the child; absent when the call came from outside a loop.
	MetaParentThread = "lode.agent.parent_thread"
	// MetaSession is the thread of the outermost run, whose session the
	// child's spans name (session.id) in any process, whenever it runs.
	MetaSession = "lode.session"
	// MetaParentCall is the ID of that tool call.
	MetaParentCall = "lode.agent.parent_call"
)

// MetaAwaiting, on a paused child thread, is the JSON list of its call
// IDs that its parent's pause listed: approving the parent's call approves
// exactly these.
const MetaAwaiting = "lode.agent.awaiting"

// MetaDenied keeps, on a child thread, the JSON list of tool names denied
// to it, so that a resume, whose turn carries no offer, denies them again
// (and an engine that runs the child apart, see Spec).
const MetaDenied = "lode.agent.denied"

// MetaChildPrefix, followed by a tool call ID, is the parent thread's
// metadata key naming the child thread that call started, so a reader of
// the parent finds the child without listing the store.
const MetaChildPrefix = "lode.agent.child."

// Errors an Outcome carries, for errors.Is.
var (
	// ErrDepth: the agent was not started, as agents were already nested
	// as deep as its WithMaxDepth allows.
	ErrDepth = errors.New("agent: depth limit reached")
	// ErrNoAnswer: the child's last turn holds no text.
	ErrNoAnswer = errors.New("agent: the child gave no answer")
	// ErrNotKept: the paused child of an agent without WithStore lives in
	// the memory of the process that paused it, and this is not it (or it
	// was resumed already).
	ErrNotKept = errors.New("agent: the paused child is not kept in this process")
)

// Outcome is one child run, as the parent's observers see it: it is the
// Value of the call's tool.Result (artifact.ToolResult.Value, which the
// ledger does not keep). Use OutcomeOf to read it.
type Outcome struct {
	// Agent is the child's name and Depth its depth (see MetaDepth).
	Agent string
	Depth int
	// Thread is the child thread's ID, "" when it was never created.
	Thread string
	// State is the child thread itself; a stored one is closed.
	State ledger.State
	// Answer is the text of the child's last turn, or the typed answer
	// as JSON (see WithOutput).
	Answer string
	// Output is the typed answer (a T) when the agent has WithOutput.
	Output any
	// Err is why the child failed; nil when it answered. It wraps
	// ErrDepth, a *loop.LimitError, a *loop.ProviderError, the store's
	// error or x/output's *InvalidError (see WithOutput).
	Err error
}

// OutcomeOf returns the Outcome carried by a tool result an agent
// produced, as observers receive it.
func OutcomeOf(res artifact.ToolResult) (*Outcome, bool) {
	var v any
	switch r := res.Value.(type) {
	case tool.Result:
		v = r.Value
	case *tool.Result:
		if r != nil {
			v = r.Value
		}
	}
	o, ok := v.(*Outcome)
	return o, ok
}

type depthKey struct{}

// Depth returns how many agents are running above ctx: 0 in the top-level
// loop, 1 inside a child it called.
func Depth(ctx context.Context) int {
	d, _ := ctx.Value(depthKey{}).(int)
	return d
}

type deniedKey struct{}

// denied returns the tool names a caller above ctx may not use.
func denied(ctx context.Context) map[string]struct{} {
	d, _ := ctx.Value(deniedKey{}).(map[string]struct{})
	return d
}

// filter is the child's per-turn tool filter: its own, then without every
// name denied above it.
func (a *Agent) filter(ctx context.Context, st ledger.State, tools []tool.Tool) []tool.Tool {
	if a.cfg.filter != nil {
		tools = a.cfg.filter(ctx, st, tools)
	}
	deny := denied(ctx)
	if len(deny) == 0 {
		return tools
	}
	out := make([]tool.Tool, 0, len(tools))
	for _, t := range tools {
		if _, no := deny[t.Name]; !no {
			out = append(out, t)
		}
	}
	return out
}

// deniedBelow is what a child started under ctx may not use: what was
// denied above, plus every tool of parent that the caller's turn did not
// offer. Tools are matched by name.
func (a *Agent) deniedBelow(ctx context.Context, parent tool.Registry) map[string]struct{} {
	if a.cfg.widening {
		return nil
	}
	above := denied(ctx)
	offered, restricted := xtool.Offered(ctx)
	if !restricted {
		return above
	}
	ok := make(map[string]struct{}, len(offered))
	for _, t := range offered {
		ok[t.Name] = struct{}{}
	}
	var out map[string]struct{}
	for _, t := range parent.Tools() {
		if _, yes := ok[t.Name]; yes {
			continue
		}
		if out == nil {
			out = make(map[string]struct{}, len(above)+4)
			for n := range above {
				out[n] = struct{}{}
			}
		}
		out[t.Name] = struct{}{}
	}
	if out == nil {
		return above
	}
	return out
}

// call runs the child for one tool call. Its only Go error is an
// *xtool.PendingError, when the child paused for approvals: the parent's
// call then pauses too. Any other failure is an error result the parent
// model reads, and the Outcome carries the error for the application.
func (a *Agent) call(ctx context.Context, parent tool.Registry, args map[string]any) (tool.Result, error) {
	depth := Depth(ctx) + 1
	out := &Outcome{Agent: a.name, Depth: depth}
	if depth > a.cfg.maxDepth {
		out.Err = fmt.Errorf("%w: agent %q would run at depth %d, past its limit of %d", ErrDepth, a.name, depth, a.cfg.maxDepth)
		return a.failed(out, fmt.Sprintf("the agent %s was not started: agents are already nested %d deep here, the most allowed. Do this part yourself, with the tools you have.", a.name, depth-1)), nil
	}
	raw, _ := json.Marshal(args) // validated arguments: plain JSON values
	task, err := a.task(raw, args)
	if err != nil {
		out.Err = err
		return a.failed(out, fmt.Sprintf("the agent %s was not started: %v", a.name, err)), nil
	}

	meta := map[string]string{MetaAgent: a.name, MetaDepth: strconv.Itoa(depth)}
	var parentState ledger.State
	var callID string
	if t, ok := loop.CurrentTurn(ctx); ok {
		parentState = t.State
		if i, ok := loop.ArtifactIndex(ctx); ok && i >= 0 && i < len(t.Answer) {
			if c, ok := t.Answer[i].(artifact.ToolCall); ok {
				callID = c.ID
			}
		}
	}
	if parentState != nil {
		meta[MetaParentThread] = parentState.ID()
		meta[MetaSession] = sessionOf(ctx, parentState)
		// The child acts for its caller: it carries the caller's user,
		// tenant and roles, from the parent thread (never from the
		// model's arguments), so that the caller's limits bind it.
		for k, v := range auth.Of(parentState).Metadata() {
			if v != "" {
				meta[k] = v
			}
		}
		// What the caller's context took in binds the child too: its
		// labels start as the caller's.
		for _, l := range ledger.Labels(parentState) {
			meta[ledger.LabelKeyPrefix+string(l)], _ = ledger.HasLabel(parentState, l)
		}
	}
	if callID != "" {
		meta[MetaParentCall] = callID
	}
	if d, ok := loop.Approved(ctx); ok && d.Approved && callID != "" && d.ToolCallID == callID && parentState != nil {
		if childID, ok := parentState.Metadata(MetaChildPrefix + callID); ok && childID != "" {
			if d.Arguments == "" {
				return a.resume(ctx, parent, out, childID, d)
			}
			// Edited arguments are a new task: the paused run is closed
			// and a fresh child starts with what the person wrote.
			a.abandon(ctx, childID, "the person approving edited the task and started a new run with it")
		}
	}
	deny := a.deniedBelow(ctx, parent)
	if len(deny) > 0 {
		names, _ := json.Marshal(slices.Sorted(maps.Keys(deny)))
		meta[MetaDenied] = string(names)
	}
	st, closeFn, err := a.open(ctx, meta)
	if err != nil {
		out.Err = err
		return a.failed(out, fmt.Sprintf("the agent %s could not start: its thread could not be created. Try again later, or do this part yourself.", a.name)), nil
	}
	defer closeFn()
	out.Thread, out.State = st.ID(), st
	trace.SpanFromContext(ctx).SetAttributes(
		attribute.String("lode.agent.thread.id", st.ID()),
		attribute.Int("lode.agent.depth", depth),
	)
	if parentState != nil && callID != "" {
		// Best effort: the child's own metadata already holds the link.
		_ = parentState.SetMetadata(MetaChildPrefix+callID, st.ID())
	}
	if a.cfg.system != "" {
		if err := st.Append(ledger.RoleSystem, artifact.Text{Content: a.cfg.system}); err != nil {
			out.Err = err
			return a.failed(out, fmt.Sprintf("the agent %s could not start: its thread could not be written.", a.name)), nil
		}
	}
	if err := st.Append(ledger.RoleUser, artifact.Text{Content: task}); err != nil {
		out.Err = err
		return a.failed(out, fmt.Sprintf("the agent %s could not start: its thread could not be written.", a.name)), nil
	}

	resumable := parentState != nil && callID != ""
	cctx := childContext(ctx, depth, deny)
	if a.cfg.run != nil {
		v, err := a.cfg.run(cctx, a.step, st, a.cfg.prov)
		return a.typed(ctx, out, st, v, err, resumable)
	}
	_, err = a.step.Run(cctx, st, a.cfg.prov)
	return a.finish(ctx, out, st, err, resumable)
}

// childContext is the context a child runs in: one agent deeper, with
// the tools it may not use, and without the decision its caller's call
// may run under, which is about that call alone: a child call that
// happens to share its ID must not run under it.
func childContext(ctx context.Context, depth int, deny map[string]struct{}) context.Context {
	ctx = context.WithValue(ctx, depthKey{}, depth)
	ctx = context.WithValue(ctx, deniedKey{}, deny)
	return loop.WithApproval(ctx, artifact.Decision{})
}

// finish turns the end of a child's run into the call's result;
// resumable says whether a pause can be resumed: the call was made in a
// loop turn, whose thread keeps the link to the child.
func (a *Agent) finish(ctx context.Context, out *Outcome, st ledger.State, err error, resumable bool) (tool.Result, error) {
	if r, ok := a.carryLabels(ctx, out, st); !ok {
		return r, nil
	}
	if pe := (*loop.PendingError)(nil); errors.As(err, &pe) {
		return a.pause(ctx, out, st, pe, resumable)
	}
	if err != nil {
		out.Err = err
		return a.failed(out, a.runFailure(err)), nil
	}
	if a.cfg.decode != nil {
		v, err := a.cfg.decode(lastText(st))
		return a.typed(ctx, out, st, v, err, resumable)
	}
	out.Answer = lastText(st)
	if out.Answer == "" {
		out.Err = ErrNoAnswer
		return a.failed(out, fmt.Sprintf("the agent %s finished without a text answer. Ask it again more precisely, or do this part yourself.", a.name)), nil
	}
	return tool.Result{Content: out.Answer, Value: out}, nil
}

// carryLabels brings the child's labels back to its caller's thread when
// its run ends, however it ended: a child that read a web page makes its
// caller's context untrusted, since its answer may carry the page's
// words. (x/tool labels the callers' threads as each call below them
// runs; this covers what the child's tools added for themselves.) A label
// that cannot be recorded withholds the answer, which ok false reports
// with the failed result.
func (a *Agent) carryLabels(ctx context.Context, out *Outcome, st ledger.State) (tool.Result, bool) {
	if _, ok := xtool.Caller(ctx); !ok {
		return tool.Result{}, true
	}
	for _, l := range ledger.Labels(st) {
		if err := xtool.AddLabel(ctx, l); err != nil {
			out.Err = err
			return a.failed(out, fmt.Sprintf("the agent %s finished, but its answer is withheld: the conversation could not record what it read. Try again later.", a.name)), false
		}
	}
	return tool.Result{}, true
}

// typed turns the end of a typed child's run into the call's result.
func (a *Agent) typed(ctx context.Context, out *Outcome, st ledger.State, v any, err error, resumable bool) (tool.Result, error) {
	if r, ok := a.carryLabels(ctx, out, st); !ok {
		return r, nil
	}
	if pe := (*loop.PendingError)(nil); errors.As(err, &pe) {
		return a.pause(ctx, out, st, pe, resumable)
	}
	if err != nil {
		out.Err = err
		if ie := (*output.InvalidError)(nil); errors.As(err, &ie) {
			return a.failed(out, fmt.Sprintf("the agent %s gave no valid answer in %d attempt(s): %v. Give it a clearer task, or do this part yourself.", a.name, ie.Attempts, ie.Err)), nil
		}
		return a.failed(out, a.runFailure(err)), nil
	}
	text, err := json.Marshal(v)
	if err != nil {
		out.Err = err
		return a.failed(out, fmt.Sprintf("the agent %s gave an answer that cannot be shown: %v", a.name, err)), nil
	}
	out.Answer, out.Output = string(text), v
	return tool.Result{Content: out.Answer, Value: out}, nil
}

// pause reports the child's pending calls as the parent call's own: it
// notes on the child which calls the parent's pause lists (an approval of
// the parent's call approves exactly those) and keeps an in-memory child
// for the resume. A pause nothing can resume (a call from outside a loop
// turn, such as an MCP request) fails closed: the child's calls are
// denied and the call fails.
func (a *Agent) pause(ctx context.Context, out *Outcome, st ledger.State, pe *loop.PendingError, resumable bool) (tool.Result, error) {
	out.Err = pe
	if !resumable {
		a.settle(ctx, st, "the agent was called where no one can approve its calls")
		return a.failed(out, fmt.Sprintf("the agent %s stopped: %d of its calls need a person's approval, which cannot be asked for here; they did not run. Do this part another way.", a.name, len(pe.Calls))), nil
	}
	ids := make([]string, len(pe.Calls))
	for i, c := range pe.Calls {
		ids[i] = c.ToolCallID
	}
	raw, _ := json.Marshal(ids)
	if err := st.SetMetadata(MetaAwaiting, string(raw)); err != nil {
		out.Err = fmt.Errorf("agent: agent %q: note the calls waiting for approval: %w", a.name, err)
		return a.failed(out, fmt.Sprintf("the agent %s paused for approvals but its thread could not be written. Try again later, or do this part yourself.", a.name)), nil
	}
	if a.cfg.store == nil {
		a.keep(st)
	}
	var sb strings.Builder
	fmt.Fprintf(&sb, "the agent %s waits for approval of %d call(s):", a.name, len(pe.Calls))
	for i, c := range pe.Calls {
		if i > 0 {
			sb.WriteByte(';')
		}
		fmt.Fprintf(&sb, " %s %s", c.Name, clip(c.Arguments, maxQuotedArgs))
		if c.Reason != "" {
			fmt.Fprintf(&sb, " (%s)", c.Reason)
		}
	}
	return tool.Result{}, &xtool.PendingError{Reason: sb.String()}
}

// resume continues the child paused under the parent's call, which now
// runs approved: the child calls the parent's pause listed are approved
// (by whoever approved the parent's), calls it made since wait again.
func (a *Agent) resume(ctx context.Context, parent tool.Registry, out *Outcome, childID string, d artifact.Decision) (tool.Result, error) {
	st, closeFn, err := a.reopen(ctx, childID)
	if err != nil {
		out.Err = err
		return a.failed(out, fmt.Sprintf("the agent %s could not continue: its paused run is not available (%v). Start it again with the task, or do this part yourself.", a.name, err)), nil
	}
	defer closeFn()
	out.Thread, out.State = st.ID(), st
	pending := loop.Pending(st)
	if len(pending) == 0 {
		if lastText(st) != "" {
			// Resumed before: this is the parent's call run again. The
			// child's answer stands and nothing of it runs twice.
			return a.finish(ctx, out, st, nil, true)
		}
		// Resumed before and stopped midway: the loop words (or, for an
		// idempotent tool, reruns) what was interrupted, and goes on.
		_, err = a.step.Resume(childContext(ctx, out.Depth, a.deniedOn(ctx, parent, st)), st, a.cfg.prov, nil)
		return a.finish(ctx, out, st, err, true)
	}
	listed := awaiting(st)
	var ds []artifact.Decision
	for _, p := range pending {
		if slices.Contains(listed, p.ToolCallID) {
			dec := loop.Approve(p.ToolCallID)
			dec.By = d.By
			ds = append(ds, dec)
		}
	}
	_, err = a.step.Resume(childContext(ctx, out.Depth, a.deniedOn(ctx, parent, st)), st, a.cfg.prov, ds)
	if errors.Is(err, ledger.ErrConflict) {
		out.Err = err
		return a.failed(out, fmt.Sprintf("the agent %s is being continued by another resumer; its calls run once, there.", a.name)), nil
	}
	return a.finish(ctx, out, st, err, true)
}

// deniedOn is what a resumed child may not use: what its caller may not
// use now, and what was denied to it when it started, which a resume,
// whose turn carries no offer, cannot tell again.
func (a *Agent) deniedOn(ctx context.Context, parent tool.Registry, st ledger.State) map[string]struct{} {
	deny := a.deniedBelow(ctx, parent)
	v, ok := st.Metadata(MetaDenied)
	if !ok {
		return deny
	}
	var names []string
	_ = json.Unmarshal([]byte(v), &names)
	if len(names) == 0 {
		return deny
	}
	out := make(map[string]struct{}, len(deny)+len(names))
	for n := range deny {
		out[n] = struct{}{}
	}
	for _, n := range names {
		out[n] = struct{}{}
	}
	return out
}

// abandon settles a paused child that will not be resumed.
func (a *Agent) abandon(ctx context.Context, childID, reason string) {
	st, closeFn, err := a.reopen(ctx, childID)
	if err != nil {
		return
	}
	defer closeFn()
	a.settle(ctx, st, reason)
}

// settle denies the pending calls of st, so that it does not stay paused;
// best effort (on a stored thread, a concurrent resumer wins).
func (a *Agent) settle(_ context.Context, st ledger.State, reason string) {
	var version int64
	vs, isStored := st.(*ledger.StoredThread)
	if isStored {
		version = vs.Version()
	}
	var record []artifact.Artifact
	for _, p := range loop.Pending(st) {
		d := loop.Deny(p.ToolCallID, reason)
		d.Name = p.Name
		record = append(record, d, artifact.ToolResult{ToolCallID: p.ToolCallID, Name: p.Name, IsError: true,
			Content: fmt.Sprintf("the call to %s was not run: %s", p.Name, reason)})
	}
	if len(record) == 0 {
		return
	}
	if isStored {
		_ = vs.AppendAt(version, ledger.RoleTool, record...)
		return
	}
	_ = st.Append(ledger.RoleTool, record...)
}

// awaiting is what the child's last pause listed for the parent.
func awaiting(st ledger.State) []string {
	v, _ := st.Metadata(MetaAwaiting)
	var ids []string
	_ = json.Unmarshal([]byte(v), &ids)
	return ids
}

// keep holds an in-memory child that paused, for the resume of its
// parent's call in this process.
func (a *Agent) keep(st ledger.State) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.kept == nil {
		a.kept = make(map[string]ledger.State)
	}
	a.kept[st.ID()] = st
}

// reopen finds a child thread again: loaded from the store, or taken from
// the paused children this Agent keeps in memory (taken, so that of two
// resumers in this process one gets it).
func (a *Agent) reopen(ctx context.Context, id string) (ledger.State, func(), error) {
	if a.cfg.store != nil {
		st, err := a.cfg.store.Load(ctx, id)
		if err != nil {
			return nil, nil, fmt.Errorf("agent: agent %q: load the child thread %s: %w", a.name, id, err)
		}
		return st, func() { _ = st.Close() }, nil
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	st, ok := a.kept[id]
	if !ok {
		return nil, nil, fmt.Errorf("agent: agent %q: %w: %s", a.name, ErrNotKept, id)
	}
	delete(a.kept, id)
	return st, func() {}, nil
}

// maxQuotedArgs bounds what a pause's reason quotes of each call's
// arguments.
const maxQuotedArgs = 300

// clip cuts s after limit bytes, on a rune boundary, saying how long it
// was.
func clip(s string, limit int) string {
	if len(s) <= limit {
		return s
	}
	i := limit
	for i > 0 && !utf8.RuneStart(s[i]) {
		i--
	}
	return fmt.Sprintf("%s… (%d bytes)", s[:i], len(s))
}

func (a *Agent) failed(out *Outcome, msg string) tool.Result {
	return tool.Result{Content: msg, IsError: true, Value: out}
}

// task is the child's user turn.
func (a *Agent) task(raw []byte, args map[string]any) (string, error) {
	if a.cfg.prompt != nil {
		return a.cfg.prompt(raw)
	}
	s, _ := args["task"].(string)
	if strings.TrimSpace(s) == "" {
		return "", errors.New(`"task" is empty; say what the agent should do`)
	}
	return s, nil
}

// open creates the child thread: in the store when there is one.
func (a *Agent) open(ctx context.Context, meta map[string]string) (ledger.State, func(), error) {
	if a.cfg.store == nil {
		return ledger.NewThread(ledger.WithMetadata(meta)), func() {}, nil
	}
	st, err := a.cfg.store.Create(ctx, ledger.WithMetadata(meta))
	if err != nil {
		return nil, nil, fmt.Errorf("agent: agent %q: create the child thread: %w", a.name, err)
	}
	return st, func() { _ = st.Close() }, nil
}

// runFailure words a failed child run for the parent model.
func (a *Agent) runFailure(err error) string {
	var le *loop.LimitError
	if errors.As(err, &le) {
		var what string
		switch le.Limit {
		case loop.LimitTurns:
			what = fmt.Sprintf("it used all %d of its turns", le.Max)
		case loop.LimitTokens:
			what = fmt.Sprintf("it used %d tokens, past its limit of %d", le.Used, le.Max)
		case loop.LimitTime:
			what = fmt.Sprintf("it ran out of its %s time limit", a.cfg.timeLimit)
		default:
			what = le.Error()
		}
		return fmt.Sprintf("the agent %s stopped before finishing: %s. Give it a smaller task, or do the rest yourself.", a.name, what)
	}
	if te, ok := errors.AsType[*loop.TripError](err); ok {
		return fmt.Sprintf("the agent %s was stopped by its guard %q at %s: %s. Do not give it the same task again.", a.name, te.Guard, tripPlace(te), te.Reason)
	}
	return fmt.Sprintf("the agent %s failed: %v. Try again later, or do this part yourself.", a.name, err)
}

// tripPlace says where a child's guard stopped it, for the parent model.
func tripPlace(te *loop.TripError) string {
	switch te.At {
	case artifact.AtInput:
		return "its task"
	case artifact.AtCall:
		return "one of its tool calls"
	case artifact.AtResult:
		return "a tool result it was about to read"
	case artifact.AtOutput:
		return "its answer"
	}
	return "a step"
}

// lastText is the text of the thread's last turn.
func lastText(st ledger.State) string {
	turns := st.Turns()
	if len(turns) == 0 || turns[len(turns)-1].Role != ledger.RoleAssistant {
		return ""
	}
	var b strings.Builder
	for _, a := range turns[len(turns)-1].Artifacts {
		if t, ok := a.(artifact.Text); ok {
			b.WriteString(t.Content)
		}
	}
	return b.String()
}

// sessionOf is the session a child of parent belongs to: the run's, as
// the context says it, or as parent's metadata keeps it, or parent itself.
func sessionOf(ctx context.Context, parent ledger.State) string {
	if id, ok := runspan.From(ctx); ok && id.Session != "" {
		return id.Session
	}
	if v, ok := parent.Metadata(MetaSession); ok && v != "" {
		return v
	}
	return parent.ID()
}
