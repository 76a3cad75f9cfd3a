package temporal

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"go.temporal.io/sdk/activity"
	sdk "go.temporal.io/sdk/temporal"

	"github.com/lodeworks/lode/artifact"
	"github.com/lodeworks/lode/ledger"
	"github.com/lodeworks/lode/loop"
	"github.com/lodeworks/lode/provider"
	toolpkg "github.com/lodeworks/lode/tool"
	"github.com/lodeworks/lode/x/agent"
)

// Names under which a worker registers the workflow and its activities.
const (
	WorkflowName  = "lode.Run"
	LengthName    = "lode.Length"
	TurnName      = "lode.Turn"
	CallName      = "lode.Call"
	InterruptName = "lode.Interrupt"
	CommitName    = "lode.Commit"
)

// MetaOffered is the thread's metadata key under which the turn activity
// keeps the names of the tools the current turn offered (a JSON list),
// written before the model is asked and only when the set changed: the
// call activities read it to refuse a call to a tool the turn did not
// offer, so Temporal's history carries no tool list.
const MetaOffered = "lode.temporal.offered"

// metaStaged, followed by a call ID, keeps the result of one of a turn's
// parallel calls until CommitName appends them all in the calls' order.
const metaStaged = "lode.temporal.staged."

// CallGrace is added to a handler's CallTimeout to make a call's activity
// timeout, so that the handler stops the call with its own timeout result
// before Temporal abandons the attempt.
const CallGrace = 10 * time.Second

// CallTimer is a handler that says how long it lets a call run; x/tool's
// Handler does (the tool's Timeout, else its own). The workflow bounds
// each attempt at a call by it, plus CallGrace.
type CallTimer interface {
	CallTimeout(call artifact.ToolCall) time.Duration
}

// CallPolicy is how the workflow runs the calls to one tool (see
// WithCallPolicy).
type CallPolicy struct {
	// Timeout bounds one attempt (the activity's StartToCloseTimeout); 0
	// means the handler's CallTimeout plus CallGrace, else
	// RunInput.CallTimeout.
	Timeout time.Duration
	// Retry is the retry policy of the calls of an idempotent tool; nil,
	// or a MaximumAttempts of 0, means RunInput.CallAttempts attempts. A
	// tool that is not idempotent is attempted once whatever Retry says:
	// a second attempt could do its effect twice.
	Retry *sdk.RetryPolicy
}

// DefaultHeartbeatTimeout is how long Temporal waits for a heartbeat of
// a running activity before it takes its worker for dead and retries the
// activity elsewhere (or, for a call that may not run twice, records it
// as interrupted); RunInput.HeartbeatTimeout overrides it. Every activity
// heartbeats every fifth of it (DefaultHeartbeat), from a goroutine of
// its own, so a live activity misses four beats before it is taken for
// dead, even on a loaded machine; NewWorker lets the SDK send them that
// often (worker.Options.MaxHeartbeatThrottleInterval).
const DefaultHeartbeatTimeout = 5 * time.Second

// DefaultHeartbeat is how often a running activity heartbeats when its
// heartbeat timeout is DefaultHeartbeatTimeout.
const DefaultHeartbeat = DefaultHeartbeatTimeout / 5

// Agent holds what the activities need on every worker: the store that
// keeps the threads, the model, the handler that runs tool calls and the
// loop's options. It holds configuration only, so one Agent serves every
// run a worker is given.
type Agent struct {
	store   ledger.Store
	prov    provider.Provider
	handler loop.Handler
	turn    *loop.Step // takes model turns: no handlers
	invoke  []provider.InvokeOption
	owner   string
	policy  map[string]CallPolicy
	answer  []loop.Handler

	// path names the agent in the tree of children: "" for the root,
	// then the child agents' names, "/" between them.
	path     string
	parent   *Agent
	children map[string]*Agent
	// child is the x/agent Agent this one runs, and callerReg the
	// registry it was registered in; nil at the root.
	child     *agent.Agent
	callerReg toolpkg.Registry
	own       toolpkg.Registry
	spec      agent.Spec
}

// Option configures an Agent.
type Option func(*config)

type config struct {
	handler  loop.Handler
	answer   []loop.Handler
	loopOpts []loop.Option
	invoke   []provider.InvokeOption
	owner    string
	policy   map[string]CallPolicy
	children []children
}

type children struct {
	reg    toolpkg.Registry
	agents []*agent.Agent
}

// WithHandler sets the handler that runs tool calls (x/tool's Handler);
// a CallChecker handler also says which calls are idempotent, and so may
// be retried. Without one, a model's tool calls get an error result.
func WithHandler(h loop.Handler) Option { return func(c *config) { c.handler = h } }

// WithAnswerHandlers gives h each artifact of a run's last answer (one
// that calls no tool), once the turn activity has stored it, in a context
// loop.CurrentTurn and loop.ArtifactIndex read, as a loop's handlers are;
// memory.Extractor is one. They run after the answer is stored and never
// fail the turn: an error is logged. A retried activity that finds the
// answer stored does not run them again. loop.Charge counts nothing there
// (the activity is no loop turn), and what they emit reaches no observer.
func WithAnswerHandlers(h ...loop.Handler) Option {
	return func(c *config) {
		for _, x := range h {
			if x != nil {
				c.answer = append(c.answer, x)
			}
		}
	}
}

// WithLoopOptions configures the loop.Step that takes each model turn:
// observers (which see the stream inside the activity), a tracer, the
// lease. Give no handlers here: tool calls run in activities of their
// own, through WithHandler's, and a handler here would run them inside
// the model turn's.
func WithLoopOptions(o ...loop.Option) Option {
	return func(c *config) { c.loopOpts = append(c.loopOpts, o...) }
}

// WithInvokeOptions are resolved on every model turn, as loop.Step.Turn's.
func WithInvokeOptions(o ...provider.InvokeOption) Option {
	return func(c *config) { c.invoke = append(c.invoke, o...) }
}

// WithLeaseOwner prefixes the owner of the leases the activities take, as
// loop.WithLeaseOwner does. Empty means "temporal".
func WithLeaseOwner(prefix string) Option { return func(c *config) { c.owner = prefix } }

// WithCallPolicy sets how the calls to the tool name are run: their
// timeout and, when the tool is idempotent, their retry policy. A later
// policy for the same name replaces an earlier one.
func WithCallPolicy(name string, p CallPolicy) Option {
	return func(c *config) {
		if c.policy == nil {
			c.policy = map[string]CallPolicy{}
		}
		c.policy[name] = p
	}
}

// WithChildAgents runs the calls to agents, x/agent Agents registered in
// reg with agent.Register, as child workflows: the child's loop on a
// thread of its own, each of its turns and calls an activity, its answer
// the call's result (see the package doc). reg is the registry the
// parent's handler runs, which tells, as in x/agent, which tools a child
// may not use: those of reg that the parent's turn did not offer.
func WithChildAgents(reg toolpkg.Registry, agents ...*agent.Agent) Option {
	return func(c *config) { c.children = append(c.children, children{reg: reg, agents: agents}) }
}

// New returns an Agent over store and prov.
func New(store ledger.Store, prov provider.Provider, opts ...Option) (*Agent, error) {
	var c config
	for _, o := range opts {
		o(&c)
	}
	var errs []error
	if store == nil {
		errs = append(errs, errors.New("temporal: no ledger.Store given"))
	}
	if prov == nil {
		errs = append(errs, errors.New("temporal: no provider given"))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	if c.owner == "" {
		c.owner = "temporal"
	}
	// The turn activity takes the thread's lease itself, as an owner that
	// names the run (see take), so the Step takes none.
	stepOpts := append(append([]loop.Option{}, c.loopOpts...), loop.WithLease(-1))
	a := &Agent{store: store, prov: prov, handler: c.handler, turn: loop.New(stepOpts...), invoke: c.invoke, owner: c.owner, policy: c.policy, answer: c.answer}
	for _, ch := range c.children {
		for _, x := range ch.agents {
			if x == nil || ch.reg == nil {
				errs = append(errs, errors.New("temporal: WithChildAgents needs a registry and agents"))
				continue
			}
			a.adopt(ch.reg, x, c)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return a, nil
}

// adopt makes x a child of a: calls to it run as child workflows. The
// child's own children run inside its calls, as x/agent runs them.
func (a *Agent) adopt(reg toolpkg.Registry, x *agent.Agent, c config) {
	spec := x.Spec()
	stepOpts := append(append([]loop.Option{}, spec.LoopOptions...), loop.WithLease(-1))
	if a.children == nil {
		a.children = map[string]*Agent{}
	}
	path := spec.Name
	if a.path != "" {
		path = a.path + "/" + spec.Name
	}
	a.children[spec.Name] = &Agent{
		store: a.store, prov: spec.Provider, handler: spec.Handler, turn: loop.New(stepOpts...),
		invoke: spec.InvokeOptions, owner: a.owner, policy: a.policy,
		path: path, parent: a, child: x, callerReg: reg, own: spec.Registry, spec: spec,
	}
}

// at finds the agent path names.
func (a *Agent) at(path string) (*Agent, error) {
	cur := a
	for name := range strings.SplitSeq(path, "/") {
		if name == "" {
			continue
		}
		next, ok := cur.children[name]
		if !ok {
			return nil, fmt.Errorf("temporal: no child agent %q on this worker", path)
		}
		cur = next
	}
	return cur, nil
}

// load opens a thread for one activity, closing it when done.
func (a *Agent) load(ctx context.Context, id string) (*ledger.StoredThread, error) {
	st, err := a.store.Load(ctx, id)
	if err != nil {
		return nil, fmt.Errorf("temporal: thread %s: %w", id, err)
	}
	return st, nil
}

// heartbeat records a heartbeat at once and then every fifth of the
// activity's heartbeat timeout (DefaultHeartbeat without one) until stop
// is called, so that Temporal tells a live activity from a worker that
// died within seconds. Every activity calls it first.
func heartbeat(ctx context.Context) (stop func()) {
	if !activity.IsActivity(ctx) {
		return func() {}
	}
	every := DefaultHeartbeat
	if d := activity.GetInfo(ctx).HeartbeatTimeout; d > 0 {
		every = d / 5
	}
	done := make(chan struct{})
	go func() {
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-ctx.Done():
				return
			case <-t.C:
				activity.RecordHeartbeat(ctx)
			}
		}
	}()
	return func() { close(done) }
}
