package temporal

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
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
	xtool "github.com/lodeworks/lode/x/tool"
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

// TurnInput asks for the model turn that follows turn After.
type TurnInput struct {
	Thread string
	// Agent names the child agent whose turn it is; "" is the root.
	Agent string `json:",omitempty"`
	// After is the index of the last turn the workflow knows of; an
	// assistant turn stored after it means the turn already landed (the
	// activity is being retried) and the model is not asked again.
	After int
	// Deadline is when the run's time limit ends: the model's answer
	// still streaming then is cut short. Zero means no limit.
	Deadline time.Time `json:",omitzero"`
}

// CallRef is one tool call of an answer, as the workflow needs it.
type CallRef struct {
	ID, Name   string
	Idempotent bool
	// Timeout bounds one attempt at the call; 0 means
	// RunInput.CallTimeout.
	Timeout time.Duration `json:",omitempty"`
	// Retry is the retry policy of an idempotent call (WithCallPolicy);
	// nil means RunInput.CallAttempts attempts.
	Retry *sdk.RetryPolicy `json:",omitempty"`
	// Child says the call starts a child agent (WithChildAgents).
	Child bool `json:",omitempty"`
}

// TurnResult is a model turn as the workflow keeps it: where it is in the
// thread and the calls it made, never the transcript.
type TurnResult struct {
	At    int
	Calls []CallRef
	// Answer is the turn's text when it made no calls.
	Answer string
	// Paused says that the server paused the answer
	// (artifact.FinishPauseTurn): the next turn carries it on.
	Paused bool `json:",omitempty"`
	// Tokens is what the turn used, as its provider reported it
	// (artifact.Usage), for the run's MaxTokens.
	Tokens int64 `json:",omitempty"`
	// Tripped is the tripwire the thread ends with when a guard stopped
	// the turn (loop.WithGuards): at the user's message, the answer, or
	// one of its calls, before any ran. The run ends with ErrTypeTripped.
	Tripped *artifact.Tripwire `json:",omitempty"`
}

// CallInput names a call of the answer at turn At to run, with the
// decision on it when it waited for approval.
type CallInput struct {
	Thread   string
	Agent    string `json:",omitempty"`
	At       int
	ID       string
	Decision *artifact.Decision
	// Stage keeps the call's result aside, for CommitName to append in
	// the calls' order: the turn's calls run in parallel.
	Stage bool `json:",omitempty"`
	// Deadline is when the run's time limit ends: the call still running
	// then is cancelled, as in a loop run. Zero means no limit.
	Deadline time.Time `json:",omitzero"`
}

// CommitInput appends the staged results of the parallel calls IDs of the
// answer at turn At, in that order; each of Failed, whose attempts failed
// for good and that has no result, gets loop.InterruptedMessage.
type CommitInput struct {
	Thread string
	Agent  string `json:",omitempty"`
	At     int
	IDs    []string
	Failed []string `json:",omitempty"`
}

// CallResult is what became of a call.
type CallResult struct {
	IsError bool
	// Pending is set when the call waits for a person's decision.
	Pending *artifact.Pending
	// Len is the thread's length afterwards.
	Len int
	// Waiting lists, in a commit's result, the failed calls that wait
	// for a decision: they need approval and never ran (see recovered).
	Waiting []artifact.Pending `json:",omitempty"`
	// Tripped is the tripwire stored after the call's result when a
	// guard stopped it (loop.WithGuards): the run ends with
	// ErrTypeTripped.
	Tripped *artifact.Tripwire `json:",omitempty"`
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

// Length is the activity that reads how many turns a thread has.
func (a *Agent) Length(ctx context.Context, thread string) (int, error) {
	defer heartbeat(ctx)()
	st, err := a.load(ctx, thread)
	if err != nil {
		return 0, err
	}
	defer st.Close()
	return st.Len(), nil
}

// Turn is the activity that takes one model turn on the thread: the model
// streams (to the Step's observers), and the answer is appended. A retry
// finds the answer stored and returns it without asking again. Before the
// model is asked, the names of the tools the turn offers are kept under
// MetaOffered, for the calls the answer makes.
func (a *Agent) Turn(ctx context.Context, in TurnInput) (TurnResult, error) {
	defer heartbeat(ctx)()
	a, err := a.at(in.Agent)
	if err != nil {
		return TurnResult{}, err
	}
	st, err := a.load(ctx, in.Thread)
	if err != nil {
		return TurnResult{}, err
	}
	defer st.Close()
	ctx = loop.WithRunIdentity(ctx, st) // its spans, the answer handlers' too, name the run
	// The lease first, as a loop turn takes it: an owner that names this
	// run and turn, so a retry after a worker died takes it over at once.
	lctx, h, err := a.hold(ctx, st, a.modelOwner(ctx, in.After))
	if err != nil {
		return TurnResult{}, err
	}
	defer h.end(ctx)
	if r, ok := a.landed(st.Turns(), in.After); ok {
		return a.guardCalls(ctx, st, r)
	}
	tctx, cancel := withDeadline(lctx, in.Deadline)
	defer cancel()
	if tctx.Err() != nil {
		return TurnResult{}, timeUp(in.Thread, tctx.Err())
	}
	// Last, so that it sees what every other option offered.
	opts := append(a.invoke[:len(a.invoke):len(a.invoke)], provider.OptionFunc(noteOffered))
	_, err = a.turn.Turn(tctx, st, a.prov, opts...)
	if te, ok := errors.AsType[*loop.TripError](err); ok {
		// Stored by the Step (or stored before: the thread ends with it),
		// at the user's message or the answer.
		tw := te.Tripwire()
		return TurnResult{At: st.Len() - 1, Tripped: &tw}, nil
	}
	if err != nil {
		if cause := context.Cause(lctx); cause != nil && errors.Is(cause, ledger.ErrLeased) {
			return TurnResult{}, fmt.Errorf("temporal: turn on thread %s: %w", in.Thread, cause)
		}
		if errors.Is(context.Cause(tctx), errTimeUp) {
			return TurnResult{}, timeUp(in.Thread, err)
		}
		return TurnResult{}, fmt.Errorf("temporal: turn on thread %s: %w", in.Thread, err)
	}
	r, ok := a.landed(st.Turns(), in.After)
	if !ok {
		return TurnResult{}, fmt.Errorf("temporal: turn on thread %s: no answer was stored", in.Thread)
	}
	if len(r.Calls) == 0 && !r.Paused && r.Tripped == nil {
		a.answered(tctx, st, r.At)
	}
	return a.guardCalls(ctx, st, r)
}

// answered gives the answer stored at turn at to the answer handlers.
func (a *Agent) answered(ctx context.Context, st ledger.State, at int) {
	if len(a.answer) == 0 {
		return
	}
	arts := st.Turns()[at].Artifacts
	info := loop.TurnInfo{State: st, Answer: arts}
	for i, art := range arts {
		hctx := loop.WithTurn(ctx, info, i)
		for _, h := range a.answer {
			if err := h.Handle(hctx, art, nil); err != nil && activity.IsActivity(ctx) {
				activity.GetLogger(ctx).Warn("an answer handler failed", "thread", st.ID(), "error", err)
			}
		}
	}
}

// guardCalls asks the call guards about the calls of the answer r before
// any runs, as a loop turn does (loop.Step.CheckCalls): on a trip, the
// tool turn a loop turn stores in their place is appended and r says the
// run stopped. A retry finds that turn after the answer and says the
// same, asking no guard again.
func (a *Agent) guardCalls(ctx context.Context, st *ledger.StoredThread, r TurnResult) (TurnResult, error) {
	if r.Tripped != nil || len(r.Calls) == 0 {
		return r, nil
	}
	turns := st.Turns()
	if r.At+1 < len(turns) {
		if w, ok := tripwireIn(turns[r.At+1].Artifacts); ok {
			r.Tripped = &w
		}
		return r, nil
	}
	stopped, te := a.turn.CheckCalls(ctx, st, turns[r.At].Artifacts)
	if te == nil {
		return r, nil
	}
	if err := storeTrip(st, stopped); err != nil {
		return TurnResult{}, err
	}
	tw := te.Tripwire()
	r.Tripped = &tw
	return r, nil
}

// storeTrip appends a tool turn that holds a tripwire, marking the thread
// first (loop.TrippedKey) as a loop turn does.
func storeTrip(st *ledger.StoredThread, arts []artifact.Artifact) error {
	if err := st.SetMetadata(loop.TrippedKey, "true"); err != nil {
		return fmt.Errorf("temporal: thread %s: mark it stopped by a guard: %w", st.ID(), err)
	}
	if err := st.Append(ledger.RoleTool, arts...); err != nil {
		return fmt.Errorf("temporal: thread %s: store the tripwire: %w", st.ID(), err)
	}
	return nil
}

// tripwireIn finds the tripwire among arts.
func tripwireIn(arts []artifact.Artifact) (artifact.Tripwire, bool) {
	for _, x := range arts {
		if w, ok := x.(artifact.Tripwire); ok {
			return w, true
		}
	}
	return artifact.Tripwire{}, false
}

// errTimeUp is the cause of an activity's context cancelled at the run's
// time limit.
var errTimeUp = errors.New("temporal: the run's time limit passed")

// withDeadline bounds ctx by the run's deadline, when it has one.
func withDeadline(ctx context.Context, deadline time.Time) (context.Context, context.CancelFunc) {
	if deadline.IsZero() {
		return ctx, func() {}
	}
	return context.WithDeadlineCause(ctx, deadline, errTimeUp)
}

// timeUp is the error of a turn the run's time limit cut short: not
// retried, and read by the workflow as the run's limit.
func timeUp(thread string, cause error) error {
	return sdk.NewNonRetryableApplicationError(fmt.Sprintf("temporal: turn on thread %s: the run's time limit passed", thread), ErrTypeTimeLimit, cause)
}

// noteOffered keeps the names of the tools req offers under MetaOffered;
// setting the value the key holds writes nothing, so a run whose turns
// offer the same tools writes it once.
func noteOffered(_ context.Context, st ledger.State, req *provider.Request) error {
	names := make([]string, 0, len(req.Tools))
	for _, t := range req.Tools {
		names = append(names, t.Name)
	}
	b, _ := json.Marshal(names) // strings always encode
	if err := st.SetMetadata(MetaOffered, string(b)); err != nil {
		return fmt.Errorf("temporal: keep the offered tools: %w", err)
	}
	return nil
}

// offeredTools reads MetaOffered: the tools the current turn offered, by
// name, and false when the thread has no record of them (a turn taken
// before this package kept them).
func offeredTools(st *ledger.StoredThread) ([]toolpkg.Tool, bool, error) {
	v, ok := st.Metadata(MetaOffered)
	if !ok || v == "" {
		return nil, false, nil
	}
	var names []string
	if err := json.Unmarshal([]byte(v), &names); err != nil {
		return nil, false, fmt.Errorf("temporal: thread %s: metadata %q holds %q, not a list of tool names: %w", st.ID(), MetaOffered, v, err)
	}
	tools := make([]toolpkg.Tool, len(names))
	for i, n := range names {
		tools[i].Name = n
	}
	return tools, true, nil
}

// landed finds the first assistant turn after index after.
func (a *Agent) landed(turns []ledger.Turn, after int) (TurnResult, bool) {
	for i := max(after+1, 0); i < len(turns); i++ {
		if turns[i].Role != ledger.RoleAssistant {
			continue
		}
		r := TurnResult{At: i}
		seen := map[string]bool{}
		for _, art := range turns[i].Artifacts {
			switch x := art.(type) {
			case artifact.ToolCall:
				if seen[x.ID] {
					continue
				}
				seen[x.ID] = true
				r.Calls = append(r.Calls, a.ref(x))
			case artifact.Text:
				r.Answer += x.Content
			case artifact.Finish:
				r.Paused = x.Reason == artifact.FinishPauseTurn
			case artifact.Usage:
				r.Tokens += x.Total()
			case artifact.Tripwire:
				w := x
				r.Tripped = &w
			}
		}
		if r.Tripped != nil {
			r.Calls, r.Answer = nil, ""
		}
		return r, true
	}
	return TurnResult{}, false
}

func (a *Agent) idempotent(c artifact.ToolCall) bool {
	cc, ok := a.handler.(loop.CallChecker)
	return ok && cc.Idempotent(c)
}

// ref is what the workflow needs to schedule c: whether it may be retried,
// and how, and how long an attempt may take.
func (a *Agent) ref(c artifact.ToolCall) CallRef {
	if _, ok := a.children[c.Name]; ok {
		return CallRef{ID: c.ID, Name: c.Name, Child: true}
	}
	r := CallRef{ID: c.ID, Name: c.Name, Idempotent: a.idempotent(c)}
	p := a.policy[c.Name]
	switch ct, ok := a.handler.(CallTimer); {
	case p.Timeout > 0:
		r.Timeout = p.Timeout
	case ok:
		if d := ct.CallTimeout(c); d > 0 {
			r.Timeout = d + CallGrace
		}
	}
	if r.Idempotent && p.Retry != nil {
		rp := *p.Retry
		r.Retry = &rp
	}
	return r
}

// callState is what the thread says of one call after its answer.
type callState struct {
	call    artifact.ToolCall
	found   bool
	result  *artifact.ToolResult
	decided *artifact.Decision
	pending *artifact.Pending
	// staged is what a parallel call left for CommitName to append.
	staged []artifact.Artifact
	// tripped is the tripwire stored (or staged) with the call's result.
	tripped *artifact.Tripwire
	length  int
}

func readCall(st *ledger.StoredThread, at int, id string) (callState, error) {
	turns := st.Turns()
	cs := callState{length: len(turns)}
	if at < 0 || at >= len(turns) || turns[at].Role != ledger.RoleAssistant {
		return cs, nil
	}
	for _, art := range turns[at].Artifacts {
		if c, ok := art.(artifact.ToolCall); ok && c.ID == id {
			cs.call, cs.found = c, true
			break
		}
	}
	for _, t := range turns[at+1:] {
		if t.Role == ledger.RoleAssistant {
			break
		}
		for _, art := range t.Artifacts {
			switch x := art.(type) {
			case artifact.ToolResult:
				if x.ToolCallID == id && cs.result == nil {
					cs.result = &x
				}
			case artifact.Decision:
				if x.ToolCallID == id {
					cs.decided = &x
				}
			case artifact.Pending:
				if x.ToolCallID == id {
					cs.pending, cs.decided = &x, nil
				}
			case artifact.Tripwire:
				if x.ToolCallID == id {
					cs.tripped = &x
				}
			}
		}
	}
	if cs.result != nil || cs.pending != nil {
		return cs, nil
	}
	if v, ok := st.Metadata(metaStaged + id); ok && v != "" {
		var l artifact.List
		if err := json.Unmarshal([]byte(v), &l); err != nil {
			return cs, fmt.Errorf("temporal: thread %s: the staged result of %s: %w", st.ID(), id, err)
		}
		cs.staged = l
		for _, art := range l {
			switch x := art.(type) {
			case artifact.ToolResult:
				if cs.result == nil {
					cs.result = &x
				}
			case artifact.Pending:
				cs.pending = &x
			case artifact.Tripwire:
				cs.tripped = &x
			}
		}
	}
	return cs, nil
}

// openCall opens, for the agent at path, the thread and the call id of its
// turn at; the caller closes the thread.
func (a *Agent) openCall(ctx context.Context, path, thread string, at int, id string) (*Agent, *ledger.StoredThread, callState, error) {
	a, err := a.at(path)
	if err != nil {
		return nil, nil, callState{}, err
	}
	st, err := a.load(ctx, thread)
	if err != nil {
		return nil, nil, callState{}, err
	}
	cs, err := a.find(st, at, id)
	if err != nil {
		st.Close()
		return nil, nil, callState{}, err
	}
	return a, st, cs, nil
}

// find reads call id of turn at, refusing a call the turn does not hold.
func (a *Agent) find(st *ledger.StoredThread, at int, id string) (callState, error) {
	cs, err := readCall(st, at, id)
	if err == nil && !cs.found {
		err = fmt.Errorf("temporal: thread %s: turn %d has no tool call %s", st.ID(), at, id)
	}
	return cs, err
}

// Call is the activity that runs one tool call through the handler and
// appends what it emits (or, with Stage, keeps it for CommitName). A call
// that already has a result is not run again: a retry after the worker
// died past the append returns that result. With a Decision, the decision
// is recorded first (once), and a denied call gets the denial the model
// reads. The call runs with the tools the turn offered (MetaOffered), so
// x/tool's Handler refuses any other exactly as in a loop turn.
func (a *Agent) Call(ctx context.Context, in CallInput) (CallResult, error) {
	defer heartbeat(ctx)()
	a, st, cs, err := a.openCall(ctx, in.Agent, in.Thread, in.At, in.ID)
	if err != nil {
		return CallResult{}, err
	}
	defer st.Close()
	ctx = loop.WithRunIdentity(ctx, st) // the call's execute_tool span names the run
	if cs.result != nil {
		// A guard that stopped its result stopped the run: the call is
		// not run again, on this worker or any other.
		return CallResult{IsError: cs.result.IsError, Len: cs.length, Tripped: cs.tripped}, nil
	}
	if cs.pending != nil && in.Decision == nil {
		return CallResult{Pending: cs.pending, Len: cs.length}, nil
	}
	if in.Stage && firstAttempt(ctx) {
		// After a guard stopped a result, no call of the answer starts,
		// as in a loop turn. A call retried after its worker died was
		// running when the trip came, and ends, as one running then does
		// in a loop turn: its result is checked like any.
		if te, err := a.siblingTrip(st, in); err != nil || te != nil {
			if err != nil {
				return CallResult{}, err
			}
			r := loop.NotRun(cs.call, te)
			if err := a.keep(ctx, st, in, []artifact.Artifact{r}); err != nil {
				return CallResult{}, err
			}
			return CallResult{IsError: true, Len: st.Len()}, nil
		}
	}
	tools, restricted, err := offeredTools(st)
	if err != nil {
		return CallResult{}, err
	}
	owner, err := a.lease(ctx, st, in.At)
	if err != nil {
		return CallResult{}, err
	}
	if !in.Stage {
		// Parallel calls share the turn's lease; CommitName releases it.
		defer func() { _ = st.ReleaseLease(context.WithoutCancel(ctx), owner) }()
	}

	run := cs.call
	// The handler runs in the turn that made the call, as in a loop turn,
	// and within the run's time limit.
	cctx, cancel := withDeadline(turnContext(ctx, st, in.At, in.ID), in.Deadline)
	defer cancel()
	if restricted {
		cctx = xtool.WithOffered(cctx, tools)
	}
	if in.Decision != nil {
		d := *in.Decision
		d.ToolCallID, d.Name = cs.call.ID, cs.call.Name
		if !d.Approved {
			d.Arguments = ""
		}
		if cs.decided == nil {
			rec := []artifact.Artifact{d}
			if !d.Approved {
				rec = append(rec, artifact.ToolResult{ToolCallID: d.ToolCallID, Name: d.Name, IsError: true, Content: deniedMessage(d)})
			}
			if err := st.Append(ledger.RoleTool, rec...); err != nil {
				return CallResult{}, fmt.Errorf("temporal: thread %s: record decision on %s: %w", in.Thread, in.ID, err)
			}
			if !d.Approved {
				return CallResult{IsError: true, Len: st.Len()}, nil
			}
		} else {
			d = *cs.decided
			if !d.Approved {
				return CallResult{IsError: true, Len: st.Len()}, nil
			}
		}
		if d.Arguments != "" {
			run.Arguments = d.Arguments
		}
		cctx = loop.WithApproval(cctx, d)
	} else if arts, stop, err := a.gateAbove(ctx, st, in.At, cs.call, true); err != nil {
		return CallResult{}, err
	} else if stop {
		return a.ended(ctx, st, in, arts)
	}

	var arts []artifact.Artifact
	if a.handler == nil {
		arts = []artifact.Artifact{artifact.ToolResult{ToolCallID: run.ID, Name: run.Name, IsError: true, Content: "temporal: no handler runs tool calls on this worker"}}
	} else {
		var col collect
		// The turn's other calls write to the thread at the same time: a
		// label the call brings in is written again after a conflict, as
		// its result is, rather than withholding the result.
		cctx = xtool.WithLabelWriter(cctx, func(s ledger.State, l ledger.Label, from string) error {
			if s != ledger.State(st) {
				return ledger.AddLabel(s, l, from)
			}
			return again(ctx, st, func() error { return ledger.AddLabel(st, l, from) })
		})
		herr := a.handler.Handle(cctx, run, &col)
		if herr != nil {
			// Retried by Temporal when the tool is idempotent; otherwise
			// the workflow records the call as interrupted.
			return CallResult{}, fmt.Errorf("temporal: thread %s: call %s: %w", in.Thread, in.ID, herr)
		}
		arts = col.arts
		// The result guards read what the handler emitted before it is
		// kept, as in a loop turn.
		var te *loop.TripError
		if arts, te = a.turn.CheckResults(cctx, st, run, arts); te != nil && !in.Stage {
			if err := st.SetMetadata(loop.TrippedKey, "true"); err != nil {
				return CallResult{}, fmt.Errorf("temporal: thread %s: mark it stopped by a guard: %w", in.Thread, err)
			}
		}
	}
	var out CallResult
	for _, art := range arts {
		switch x := art.(type) {
		case artifact.ToolResult:
			out.IsError = out.IsError || x.IsError
		case artifact.Pending:
			p := x
			out.Pending = &p
		case artifact.Tripwire:
			w := x
			out.Tripped = &w
		}
	}
	if err := a.keep(ctx, st, in, arts); err != nil {
		return CallResult{}, err
	}
	out.Len = st.Len()
	return out, nil
}

// firstAttempt reports whether ctx is the first attempt at its activity
// (or no activity's: a test calling the method).
func firstAttempt(ctx context.Context) bool {
	return !activity.IsActivity(ctx) || activity.GetInfo(ctx).Attempt <= 1
}

// siblingTrip is the trip staged with the result of another call of in's
// answer, if a guard stopped one.
func (a *Agent) siblingTrip(st *ledger.StoredThread, in CallInput) (*loop.TripError, error) {
	turns := st.Turns()
	for _, art := range turns[in.At].Artifacts {
		c, ok := art.(artifact.ToolCall)
		if !ok || c.ID == in.ID {
			continue
		}
		cs, err := readCall(st, in.At, c.ID)
		if err != nil {
			return nil, err
		}
		if cs.tripped != nil {
			return loop.TripErrorOf(*cs.tripped), nil
		}
	}
	return nil, nil
}

// keep appends what a call emitted, or with in.Stage keeps it under the
// call's staging key; the turn's other calls write to the thread at the
// same time, so a change made since st was read is read and tried again.
func (a *Agent) keep(ctx context.Context, st *ledger.StoredThread, in CallInput, arts []artifact.Artifact) error {
	if len(arts) == 0 {
		return nil
	}
	var err error
	if in.Stage {
		b, merr := json.Marshal(artifact.List(arts))
		if merr != nil {
			return fmt.Errorf("temporal: thread %s: call %s: %w", in.Thread, in.ID, merr)
		}
		err = again(ctx, st, func() error { return st.SetMetadata(metaStaged+in.ID, string(b)) })
	} else {
		err = st.Append(ledger.RoleTool, arts...)
	}
	if err != nil {
		return fmt.Errorf("temporal: thread %s: call %s: %w", in.Thread, in.ID, err)
	}
	return nil
}

// conflictRetries bounds how often one write is tried again after the
// turn's other calls changed the thread.
const conflictRetries = 16

// again runs write, and while it fails because the stored thread changed
// since st read it, reloads st and runs it again. A lease another owner
// holds is not such a change.
func again(ctx context.Context, st *ledger.StoredThread, write func() error) error {
	for i := 0; ; i++ {
		err := write()
		var le *ledger.LeaseError
		if err == nil || !errors.Is(err, ledger.ErrConflict) || errors.As(err, &le) || i == conflictRetries {
			return err
		}
		if rerr := st.Reload(ctx); rerr != nil {
			return rerr
		}
	}
}

// Interrupt is the activity that gives a call that failed for good (its
// worker died inside it, it timed out, its attempts ran out) the error
// result loop.InterruptedMessage, unless it has a result already, or
// unless it never ran because it needs a person's approval (see
// recovered): then it gets the Pending record its worker did not live to
// write, and CallResult.Pending says it waits.
func (a *Agent) Interrupt(ctx context.Context, in CallInput) (CallResult, error) {
	defer heartbeat(ctx)()
	a, st, cs, err := a.openCall(ctx, in.Agent, in.Thread, in.At, in.ID)
	if err != nil {
		return CallResult{}, err
	}
	defer st.Close()
	defer a.releaseDead(context.WithoutCancel(ctx), st)
	if cs.result != nil {
		return CallResult{IsError: cs.result.IsError, Len: cs.length, Tripped: cs.tripped}, nil
	}
	if cs.pending != nil && cs.decided == nil {
		// It waits (recorded by the call, or by an earlier attempt of
		// this one); a decision that was sent and never recorded is
		// asked again: the call did not run under it.
		return CallResult{Pending: cs.pending, Len: cs.length}, nil
	}
	art, err := a.recovered(ctx, st, in.At, cs)
	if err != nil {
		return CallResult{}, err
	}
	if err := st.Append(ledger.RoleTool, art); err != nil {
		return CallResult{}, fmt.Errorf("temporal: thread %s: interrupt %s: %w", in.Thread, in.ID, err)
	}
	if p, ok := art.(artifact.Pending); ok {
		return CallResult{Pending: &p, Len: st.Len()}, nil
	}
	return CallResult{IsError: true, Len: st.Len()}, nil
}

func interrupted(c artifact.ToolCall) artifact.ToolResult {
	return artifact.ToolResult{ToolCallID: c.ID, Name: c.Name, IsError: true, Content: loop.InterruptedMessage}
}

// recovered is what a call that ended for good without a result or a
// record gets. A call on which no decision was recorded, and that the
// approval rules covering it send to a person, never ran: a call that
// needs approval runs only under a recorded decision. Its worker died
// after the answer landed and before the Pending record was written, so
// it gets that record now and waits, as it would have; the person is
// asked, never skipped. Any other call may have run, partly or whole,
// and gets loop.InterruptedMessage.
func (a *Agent) recovered(ctx context.Context, st *ledger.StoredThread, at int, cs callState) (artifact.Artifact, error) {
	if cs.decided == nil {
		p, err := a.asks(ctx, st, at, cs.call)
		if err != nil {
			return nil, err
		}
		if p != nil {
			return *p, nil
		}
	}
	return interrupted(cs.call), nil
}

// asks returns the Pending record of call, made at turn at of st, when
// the approval rules that cover it (a's x/tool Handler's, and those of
// every caller above a child agent) leave it to a person; nil otherwise.
func (a *Agent) asks(ctx context.Context, st *ledger.StoredThread, at int, call artifact.ToolCall) (*artifact.Pending, error) {
	if h, ok := a.handler.(*xtool.Handler); ok {
		reason, err := h.GateBelow(turnContext(ctx, st, at, call.ID), toolpkg.Tool{Name: call.Name}, call)
		if errors.Is(err, xtool.ErrAwaitingApproval) {
			return &artifact.Pending{ToolCallID: call.ID, Name: call.Name, Arguments: call.Arguments, Reason: reason}, nil
		}
	}
	arts, stop, err := a.gateAbove(ctx, st, at, call, false)
	if err != nil || !stop {
		return nil, err
	}
	for _, art := range arts {
		if p, ok := art.(artifact.Pending); ok {
			return &p, nil
		}
	}
	return nil, nil
}

// Commit is the activity that ends a turn's calls run together: it
// appends their staged results as one tool turn, in the calls' order, as
// a loop turn does; each call of in.Failed without a result gets what
// recovered gives it (loop.InterruptedMessage, or the Pending record of a
// call that needs approval and never ran, listed in CallResult.Waiting).
// It then clears the staging keys and releases the turn's lease. The
// turn is one append at the version the thread was read at, so a commit
// run again, or racing another, appends nothing twice: the store's
// compare-and-swap decides.
func (a *Agent) Commit(ctx context.Context, in CommitInput) (CallResult, error) {
	defer heartbeat(ctx)()
	a, err := a.at(in.Agent)
	if err != nil {
		return CallResult{}, err
	}
	st, err := a.load(ctx, in.Thread)
	if err != nil {
		return CallResult{}, err
	}
	defer st.Close()
	// Each call's part of the tool turn; a call the workflow did not start
	// (a guard stopped an earlier one's result) has none, and gets "not
	// run" once the trip is known.
	parts := make([][]artifact.Artifact, len(in.IDs))
	idle := map[int]artifact.ToolCall{}
	var stop *artifact.Tripwire
	for i, id := range in.IDs {
		cs, err := a.find(st, in.At, id)
		if err != nil {
			return CallResult{}, err
		}
		switch {
		case cs.staged != nil:
			parts[i] = cs.staged
			if stop == nil {
				stop = cs.tripped
			}
		case cs.result != nil || cs.pending != nil:
			// appended by an earlier attempt
		case slices.Contains(in.Failed, id):
			art, err := a.recovered(ctx, st, in.At, cs)
			if err != nil {
				return CallResult{}, err
			}
			parts[i] = []artifact.Artifact{art}
		default:
			idle[i] = cs.call
		}
	}
	if stop != nil {
		for i, c := range idle {
			parts[i] = []artifact.Artifact{loop.NotRun(c, loop.TripErrorOf(*stop))}
		}
	}
	var arts []artifact.Artifact
	for _, p := range parts {
		arts = append(arts, p...)
	}
	if len(arts) > 0 {
		var trip *loop.TripError
		arts, trip = oneTrip(arts)
		if trip != nil {
			if err := st.SetMetadata(loop.TrippedKey, "true"); err != nil {
				return CallResult{}, fmt.Errorf("temporal: thread %s: mark it stopped by a guard: %w", in.Thread, err)
			}
		}
		if err := st.Append(ledger.RoleTool, arts...); err != nil {
			return CallResult{}, fmt.Errorf("temporal: thread %s: commit the results of turn %d: %w", in.Thread, in.At, err)
		}
	}
	var out CallResult
	for _, id := range in.IDs {
		if cs, err := a.find(st, in.At, id); err == nil && cs.tripped != nil {
			out.Tripped = cs.tripped
			break
		}
	}
	for _, id := range in.Failed {
		if cs, err := a.find(st, in.At, id); err == nil && cs.result == nil && cs.pending != nil && cs.decided == nil {
			out.Waiting = append(out.Waiting, *cs.pending)
		}
	}
	for _, id := range in.IDs {
		if v, ok := st.Metadata(metaStaged + id); ok && v != "" {
			if err := st.SetMetadata(metaStaged+id, ""); err != nil {
				return CallResult{}, fmt.Errorf("temporal: thread %s: clear the staged result of %s: %w", in.Thread, id, err)
			}
		}
	}
	if l, err := st.Lease(); err == nil && l.Owner == a.turnOwner(ctx, in.At) {
		_ = st.ReleaseLease(ctx, l.Owner)
	}
	out.Len = st.Len()
	return out, nil
}

// oneTrip is the tool turn of an answer's calls run together when a guard
// stopped the result of one or more: the first tripwire, in the calls'
// order, is kept after its result and the others are dropped, and a call
// left waiting for approval is not run (it would run on a decision), as
// in a loop turn.
func oneTrip(arts []artifact.Artifact) ([]artifact.Artifact, *loop.TripError) {
	i := slices.IndexFunc(arts, func(x artifact.Artifact) bool { return x.Kind() == artifact.KindTripwire })
	if i < 0 {
		return arts, nil
	}
	te := loop.TripErrorOf(arts[i].(artifact.Tripwire))
	out := make([]artifact.Artifact, 0, len(arts))
	for j, x := range arts {
		switch y := x.(type) {
		case artifact.Tripwire:
			if j != i {
				continue
			}
		case artifact.Pending:
			x = loop.NotRun(artifact.ToolCall{ID: y.ToolCallID, Name: y.Name}, te)
		}
		out = append(out, x)
	}
	return out, te
}

// collect keeps the tool turns a handler emits.
type collect struct{ arts []artifact.Artifact }

func (c *collect) Emit(_ context.Context, ev loop.Event) {
	switch tc := ev.(type) {
	case loop.TurnCompleteEvent:
		if tc.Role == ledger.RoleTool {
			c.arts = append(c.arts, tc.Artifacts...)
		}
	case *loop.TurnCompleteEvent:
		if tc != nil && tc.Role == ledger.RoleTool {
			c.arts = append(c.arts, tc.Artifacts...)
		}
	}
}

// deniedMessage is what the model reads of a denied call.
func deniedMessage(d artifact.Decision) string {
	msg := fmt.Sprintf("the call to %s was denied by the person approving tool calls; it did not run", d.Name)
	if d.Reason != "" {
		msg += ". Their reason: " + d.Reason
	}
	return msg
}
