package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/lodeworks/lode/artifact"
	"github.com/lodeworks/lode/ledger"
	"github.com/lodeworks/lode/loop"
	"github.com/lodeworks/lode/provider"
	"github.com/lodeworks/lode/tool"
	"github.com/lodeworks/lode/x/output"
	xtool "github.com/lodeworks/lode/x/tool"
)

// Defaults for a child's limits, used when the option is not given or is 0.
const (
	// DefaultMaxDepth is how many agents may be nested below the top-level
	// loop: 3 allows parent → child → grandchild → great-grandchild.
	DefaultMaxDepth = 3
	// DefaultMaxTurns bounds the turns of one child run.
	DefaultMaxTurns = 10
	// DefaultTimeLimit bounds the wall time of one child run.
	DefaultTimeLimit = 2 * time.Minute
)

// stopGrace is added to a child's time limit to make the tool's timeout,
// so that the child stops on its own limit, with its own message, before
// the parent's handler abandons the call.
const stopGrace = 5 * time.Second

// ErrOption is wrapped by every error New returns.
var ErrOption = errors.New("agent: invalid option")

// Option configures an Agent.
type Option func(*config)

type config struct {
	prov        provider.Provider
	registry    tool.Registry
	filter      xtool.ToolFilter
	handlerOpts []xtool.HandlerOption
	loopOpts    []loop.Option
	system      string
	schema      json.RawMessage
	prompt      func(raw []byte) (string, error)
	store       ledger.Store
	tracer      trace.Tracer
	run         func(ctx context.Context, step *loop.Step, st ledger.State, prov provider.Provider) (any, error)
	decode      func(raw string) (any, error)
	maxDepth    int
	maxTurns    int
	maxTokens   int64
	timeLimit   time.Duration
	widening    bool
	errs        []error
}

func (c *config) fail(format string, a ...any) {
	c.errs = append(c.errs, fmt.Errorf("%w: "+format, append([]any{ErrOption}, a...)...))
}

// WithProvider sets the model the child runs on. It is required.
func WithProvider(p provider.Provider) Option { return func(c *config) { c.prov = p } }

// WithRegistry sets the child's own tools; nil means none. The registry
// may hold the agent itself (see Register): the depth limit ends the
// recursion.
func WithRegistry(r tool.Registry) Option { return func(c *config) { c.registry = r } }

// WithFilter picks the child's tools on each of its turns, as x/tool's
// WithFilteredTools does; nil offers the whole registry. What the filter
// returns is further narrowed to what the parent's caller may use (see
// WithWidening).
func WithFilter(f xtool.ToolFilter) Option { return func(c *config) { c.filter = f } }

// WithHandlerOptions configures the x/tool Handler that runs the child's
// tools (timeouts, budgets, sandboxes, an approver).
func WithHandlerOptions(o ...xtool.HandlerOption) Option {
	return func(c *config) { c.handlerOpts = append(c.handlerOpts, o...) }
}

// WithLoopOptions configures the child's loop.Step: observers, a logger,
// extra handlers or invoke options. The agent's own handler, tool filter,
// tracer and limits are applied after these, so limits belong in
// WithMaxTurns, WithMaxTokens and WithTimeLimit.
func WithLoopOptions(o ...loop.Option) Option {
	return func(c *config) { c.loopOpts = append(c.loopOpts, o...) }
}

// WithSystemPrompt opens every child thread with a system turn; "" means
// none.
func WithSystemPrompt(s string) Option { return func(c *config) { c.system = s } }

// WithInput sets the tool's arguments to the JSON Schema reflected from In
// (see tool.SchemaFor) instead of the default {"task": string}. Arguments
// are checked against the schema before the child starts, then decoded
// into In and turned by prompt into the child's user turn; a nil prompt
// sends the arguments' JSON as it is. An error from prompt is the call's
// error result.
func WithInput[In any](prompt func(In) (string, error)) Option {
	return func(c *config) {
		s, err := tool.SchemaFor[In]()
		if err != nil {
			c.fail("WithInput: %v", err)
			return
		}
		c.schema = s
		c.prompt = func(raw []byte) (string, error) {
			if prompt == nil {
				return string(raw), nil
			}
			var in In
			if err := json.Unmarshal(raw, &in); err != nil {
				return "", fmt.Errorf("the arguments do not fit the input: %w", err)
			}
			return prompt(in)
		}
	}
}

// WithStore keeps every child thread in store, linked to its parent (see
// MetaParentThread); nil keeps them in memory, where they live as long as
// the parent's tool result references them (Outcome.State), or, paused
// for approvals, as long as the Agent, in this process only.
func WithStore(s ledger.Store) Option { return func(c *config) { c.store = s } }

// WithTracer traces the child's runs, turns and tool executions. Its spans
// nest under the parent's execute_tool span because the child runs in that
// span's context; nil traces nothing.
func WithTracer(t trace.Tracer) Option { return func(c *config) { c.tracer = t } }

// WithOutput makes the child's answer typed: the child runs through
// ans (x/output), which asks its model for a T, validates it and lets it
// retry; the tool's result is the answer as JSON and Outcome.Output the T.
// Each try is one run with the agent's limits. A nil ans keeps the answer
// as text.
func WithOutput[T any](ans *output.Answer[T]) Option {
	return func(c *config) {
		if ans == nil {
			c.run, c.decode = nil, nil
			return
		}
		c.decode = func(raw string) (any, error) { return ans.Decode(raw) }
		c.run = func(ctx context.Context, step *loop.Step, st ledger.State, prov provider.Provider) (any, error) {
			return ans.Run(ctx, step, st, prov)
		}
	}
}

// WithMaxDepth refuses to start this agent when n agents are already
// running above it (the top-level loop is depth 0). 0 means
// DefaultMaxDepth; a negative n is an error, since an agent that mounts
// itself must stop somewhere.
func WithMaxDepth(n int) Option { return func(c *config) { c.maxDepth = n } }

// WithMaxTurns bounds the turns of one child run. 0 means
// DefaultMaxTurns; negative means no limit.
func WithMaxTurns(n int) Option { return func(c *config) { c.maxTurns = n } }

// WithMaxTokens bounds the tokens one child run may use, as reported by
// its provider. 0 and negative mean no limit.
func WithMaxTokens(n int64) Option { return func(c *config) { c.maxTokens = n } }

// WithTimeLimit bounds the wall time of one child run. 0 means
// DefaultTimeLimit; negative means no limit of the agent's own, which
// leaves the parent handler's per-call timeout.
func WithTimeLimit(d time.Duration) Option { return func(c *config) { c.timeLimit = d } }

// WithWidening lets the child use every tool its own filter picks, even
// ones the parent's caller may not use. Without it, a tool denied to a
// caller stays denied to every agent below it. It does not lift the
// callers' approval rules: a call that needs a person above needs one
// here.
func WithWidening() Option { return func(c *config) { c.widening = true } }

// Agent is a model, its tools and its limits, ready to be mounted as one
// tool of another agent with Register. It holds configuration, and without
// WithStore the child threads paused for approvals until their parent's
// call resumes them; it is safe for concurrent use.
type Agent struct {
	name, description string
	cfg               config
	step              *loop.Step

	mu   sync.Mutex
	kept map[string]ledger.State // paused in-memory children, by thread ID
}

// defaultSchema is the input of an agent without WithInput.
var defaultSchema = json.RawMessage(`{"type":"object","properties":{"task":{"type":"string","description":"what the agent should do, with everything it needs to know"}},"required":["task"],"additionalProperties":false}`)

// New returns an agent called name (a tool name: ^[a-zA-Z0-9_-]{1,64}$)
// whose description tells the parent model when to call it. Every problem
// with the options is reported at once, each wrapping ErrOption.
func New(name, description string, opts ...Option) (*Agent, error) {
	var c config
	for _, o := range opts {
		if o != nil {
			o(&c)
		}
	}
	if err := tool.ValidateName(name); err != nil {
		c.fail("agent name: %v", err)
	}
	if c.prov == nil {
		c.fail("agent %q: no provider; set one with WithProvider", name)
	}
	if c.maxDepth < 0 {
		c.fail("agent %q: WithMaxDepth(%d): want 0 (default %d) or more", name, c.maxDepth, DefaultMaxDepth)
	}
	if len(c.errs) > 0 {
		return nil, errors.Join(c.errs...)
	}
	if c.maxDepth == 0 {
		c.maxDepth = DefaultMaxDepth
	}
	switch {
	case c.maxTurns == 0:
		c.maxTurns = DefaultMaxTurns
	case c.maxTurns < 0:
		c.maxTurns = 0
	}
	c.maxTokens = max(c.maxTokens, 0)
	switch {
	case c.timeLimit == 0:
		c.timeLimit = DefaultTimeLimit
	case c.timeLimit < 0:
		c.timeLimit = 0
	}
	if c.registry == nil {
		c.registry = tool.NewRegistry()
	}
	if c.schema == nil {
		c.schema = defaultSchema
	}
	a := &Agent{name: name, description: description, cfg: c}
	a.step = a.buildStep()
	return a, nil
}

// Name returns the agent's tool name.
func (a *Agent) Name() string { return a.name }

// Tool describes the agent as a tool: its name, description and input
// schema, and a timeout just past its time limit.
func (a *Agent) Tool() tool.Tool {
	t := tool.Tool{Name: a.name, Description: a.description, Schema: a.cfg.schema}
	if a.cfg.timeLimit > 0 {
		t.Timeout = a.cfg.timeLimit + stopGrace
	}
	return t
}

func (a *Agent) buildStep() *loop.Step {
	c := &a.cfg
	var hopts []xtool.HandlerOption
	if c.tracer != nil {
		hopts = append(hopts, xtool.WithTracer(c.tracer))
	}
	h := xtool.NewHandler(c.registry, append(hopts, c.handlerOpts...)...)
	opts := append([]loop.Option(nil), c.loopOpts...)
	opts = append(opts,
		loop.WithHandlers(scoped{h}),
		loop.WithInvokeOptions(xtool.WithFilteredTools(c.registry, a.filter)),
		loop.WithMaxTurns(c.maxTurns),
		loop.WithMaxTokens(c.maxTokens),
		loop.WithTimeLimit(c.timeLimit),
	)
	if c.tracer != nil {
		opts = append(opts, loop.WithTracer(c.tracer))
	}
	return loop.New(opts...)
}

// Register mounts a as a tool of reg, the registry of its parent. reg is
// also what tells a call which tools its caller was denied: those reg holds
// that the caller's turn did not offer.
func Register(reg tool.Registry, a *Agent) error {
	if reg == nil || a == nil {
		return fmt.Errorf("%w: Register needs a registry and an agent", ErrOption)
	}
	return reg.Register(a.Tool(), func(ctx context.Context, _ tool.Sandbox, args map[string]any) (any, error) {
		return a.call(ctx, reg, args)
	})
}

// scoped runs the child's tool handler with the child's own turn as the
// caller's scope, so that an outer WithOffered (an MCP server's caller)
// does not hide the child's tools from it; the child's filter has already
// narrowed them to what that caller may use.
type scoped struct{ h *xtool.Handler }

func (s scoped) Handle(ctx context.Context, art artifact.Artifact, e loop.Emitter) error {
	if t, ok := loop.CurrentTurn(ctx); ok && t.Request != nil {
		ctx = xtool.WithOffered(ctx, t.Request.Tools)
	}
	return s.h.Handle(ctx, art, e)
}

// Flush blocks until the observers given with WithLoopOptions have
// received every event of the child runs so far, or ctx ends.
func (a *Agent) Flush(ctx context.Context) error { return a.step.Flush(ctx) }
