package agent

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/lodeworks/lode/ledger"
	"github.com/lodeworks/lode/loop"
	"github.com/lodeworks/lode/provider"
	"github.com/lodeworks/lode/tool"
	xtool "github.com/lodeworks/lode/x/tool"
)

// Spec is an agent as an engine that runs its loop apart needs it:
// x/temporal runs a child as a workflow of its own, each of its turns and
// calls an activity, where Register's tool runs the child inside the
// parent's call. The engine creates the child thread (with the metadata
// of "Threads" in the package doc, MetaDenied among them), takes turns
// with Provider and InvokeOptions, runs calls with Handler, and words the
// end of the run with Answer.
type Spec struct {
	Name string
	// Tool is the agent as its parent's model sees it.
	Tool tool.Tool
	// Provider is the child's model.
	Provider provider.Provider
	// Registry holds the child's own tools and Handler runs them, with
	// the agent's handler options.
	Registry tool.Registry
	Handler  *xtool.Handler
	// InvokeOptions offer the child's tools on each of its turns: its
	// filter, without the names the child thread's MetaDenied lists.
	InvokeOptions []provider.InvokeOption
	// LoopOptions are the agent's WithLoopOptions.
	LoopOptions []loop.Option
	// System is the system prompt; "" means none.
	System string
	// MaxDepth and MaxTurns are the agent's limits (MaxTurns 0: none).
	MaxDepth, MaxTurns int
	// MaxTokens and TimeLimit bound one run of the child as
	// WithMaxTokens and WithTimeLimit do; 0 means none.
	MaxTokens int64
	TimeLimit time.Duration
}

// Spec returns the agent as an engine that runs it apart needs it.
func (a *Agent) Spec() Spec {
	c := &a.cfg
	var hopts []xtool.HandlerOption
	if c.tracer != nil {
		hopts = append(hopts, xtool.WithTracer(c.tracer))
	}
	return Spec{
		Name:          a.name,
		Tool:          a.Tool(),
		Provider:      c.prov,
		Registry:      c.registry,
		Handler:       xtool.NewHandler(c.registry, append(hopts, c.handlerOpts...)...),
		InvokeOptions: []provider.InvokeOption{xtool.WithFilteredTools(c.registry, a.threadFilter)},
		LoopOptions:   append([]loop.Option(nil), c.loopOpts...),
		System:        c.system,
		MaxDepth:      c.maxDepth,
		MaxTurns:      c.maxTurns,
		MaxTokens:     c.maxTokens,
		TimeLimit:     c.timeLimit,
	}
}

// threadFilter is the filter of a child run apart, whose context carries
// no denials: they are read from its thread.
func (a *Agent) threadFilter(ctx context.Context, st ledger.State, tools []tool.Tool) []tool.Tool {
	if v, ok := st.Metadata(MetaDenied); ok && v != "" {
		var names []string
		if json.Unmarshal([]byte(v), &names) == nil && len(names) > 0 {
			deny := make(map[string]struct{}, len(names))
			for _, n := range names {
				deny[n] = struct{}{}
			}
			ctx = context.WithValue(ctx, deniedKey{}, deny)
		}
	}
	return a.filter(ctx, st, tools)
}

// Task is the child's user turn for a call with arguments, checked
// against the agent's input schema as its Handler checks them; the error
// is what the parent's model reads.
func (a *Agent) Task(arguments string) (string, error) {
	var task string
	reg := tool.NewRegistry()
	if err := reg.Register(a.Tool(), func(_ context.Context, _ tool.Sandbox, args map[string]any) (any, error) {
		raw, _ := json.Marshal(args) // validated arguments: plain JSON values
		var err error
		task, err = a.task(raw, args)
		return nil, err
	}); err != nil {
		return "", err
	}
	b, _ := reg.Lookup(a.name)
	run, err := b.Prepare(tool.NoSandbox(), arguments)
	if err != nil {
		return "", err
	}
	if _, err := run(context.Background()); err != nil {
		return "", err
	}
	return task, nil
}

// Answer words the end of a child's run on st, as Register's tool does:
// its answer (typed, with WithOutput) or, when err is set or there is no
// answer, a failure the parent's model can act on. A *loop.LimitError
// (turns, tokens, time) is worded as such.
func (a *Agent) Answer(ctx context.Context, st ledger.State, err error) (content string, isError bool) {
	out := &Outcome{Agent: a.name, Thread: st.ID(), State: st}
	if pe := (*loop.PendingError)(nil); errors.As(err, &pe) {
		err = errors.New("agent: the child paused for approvals where no one can resume it")
	}
	res, _ := a.finish(ctx, out, st, err, false)
	return res.Content, res.IsError
}
