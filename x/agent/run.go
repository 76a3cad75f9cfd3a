package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/lodeworks/lode/artifact"
	"github.com/lodeworks/lode/ledger"
	"github.com/lodeworks/lode/loop"
	"github.com/lodeworks/lode/tool"
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
	// MetaParentCall is the ID of that tool call.
	MetaParentCall = "lode.agent.parent_call"
)

// MetaChildPrefix, followed by a tool call ID, is the parent thread's
// metadata key naming the child thread that call started, so a reader of
// the parent finds the child without listing the store.
const MetaChildPrefix = "lode.agent.child."

// Errors an Outcome carries, for errors.Is.
var (
	// ErrDepth: the agent was not started, as agents were already nested
	// as deep as its WithMaxDepth allows.
	ErrDepth = errors.New("x/agent: depth limit reached")
	// ErrNoAnswer: the child's last turn holds no text.
	ErrNoAnswer = errors.New("x/agent: the child gave no answer")
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

// call runs the child for one tool call. It never returns a Go error: the
// child's failure is an error result the parent model reads, and the
// Outcome carries the error for the application.
func (a *Agent) call(ctx context.Context, parent tool.Registry, args map[string]any) tool.Result {
	depth := Depth(ctx) + 1
	out := &Outcome{Agent: a.name, Depth: depth}
	if depth > a.cfg.maxDepth {
		out.Err = fmt.Errorf("%w: agent %q would run at depth %d, past its limit of %d", ErrDepth, a.name, depth, a.cfg.maxDepth)
		return a.failed(out, fmt.Sprintf("the agent %s was not started: agents are already nested %d deep here, the most allowed. Do this part yourself, with the tools you have.", a.name, depth-1))
	}
	raw, _ := json.Marshal(args) // validated arguments: plain JSON values
	task, err := a.task(raw, args)
	if err != nil {
		out.Err = err
		return a.failed(out, fmt.Sprintf("the agent %s was not started: %v", a.name, err))
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
	}
	if callID != "" {
		meta[MetaParentCall] = callID
	}
	st, closeFn, err := a.open(ctx, meta)
	if err != nil {
		out.Err = err
		return a.failed(out, fmt.Sprintf("the agent %s could not start: its thread could not be created. Try again later, or do this part yourself.", a.name))
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
			return a.failed(out, fmt.Sprintf("the agent %s could not start: its thread could not be written.", a.name))
		}
	}
	if err := st.Append(ledger.RoleUser, artifact.Text{Content: task}); err != nil {
		out.Err = err
		return a.failed(out, fmt.Sprintf("the agent %s could not start: its thread could not be written.", a.name))
	}

	cctx := context.WithValue(ctx, depthKey{}, depth)
	cctx = context.WithValue(cctx, deniedKey{}, a.deniedBelow(ctx, parent))
	if a.cfg.run != nil {
		v, err := a.cfg.run(cctx, a.step, st, a.cfg.prov)
		if err != nil {
			out.Err = err
			if ie := (*output.InvalidError)(nil); errors.As(err, &ie) {
				return a.failed(out, fmt.Sprintf("the agent %s gave no valid answer in %d attempt(s): %v. Give it a clearer task, or do this part yourself.", a.name, ie.Attempts, ie.Err))
			}
			return a.failed(out, a.runFailure(err))
		}
		text, err := json.Marshal(v)
		if err != nil {
			out.Err = err
			return a.failed(out, fmt.Sprintf("the agent %s gave an answer that cannot be shown: %v", a.name, err))
		}
		out.Answer, out.Output = string(text), v
		return tool.Result{Content: out.Answer, Value: out}
	}
	if _, err := a.step.Run(cctx, st, a.cfg.prov); err != nil {
		out.Err = err
		return a.failed(out, a.runFailure(err))
	}
	out.Answer = lastText(st)
	if out.Answer == "" {
		out.Err = ErrNoAnswer
		return a.failed(out, fmt.Sprintf("the agent %s finished without a text answer. Ask it again more precisely, or do this part yourself.", a.name))
	}
	return tool.Result{Content: out.Answer, Value: out}
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
		return nil, nil, fmt.Errorf("x/agent: agent %q: create the child thread: %w", a.name, err)
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
	return fmt.Sprintf("the agent %s failed: %v. Try again later, or do this part yourself.", a.name, err)
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
