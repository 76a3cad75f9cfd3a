package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"

	"github.com/lodeworks/lode/artifact"
	"github.com/lodeworks/lode/ledger"
	"github.com/lodeworks/lode/loop"
	"github.com/lodeworks/lode/provider"
	"github.com/lodeworks/lode/x/policy"
)

// Temporal runs lode's loop on a Temporal cluster: lode worker, lode run
// and lode resume hand their work to it when --temporal HOST:PORT is given.
// The root module's lode has none, as that module never requires the
// Temporal SDK; x/temporal/cmd/lode passes one to Main with WithTemporal.
type Temporal interface {
	// Worker runs a's agent for the runs Temporal gives it on
	// a.TaskQueue, until ctx ends.
	Worker(ctx context.Context, a *Agent) error
	// Run starts the run of the stored thread, its prompt appended, and
	// waits for it: nil when the model answered, a *loop.PendingError
	// when calls wait for approval. Each turn that lands meanwhile goes
	// to a.Show.
	Run(ctx context.Context, a *Agent, thread string) error
	// Resume sends the decisions ds to the paused run of thread and waits
	// as Run does.
	Resume(ctx context.Context, a *Agent, thread string, ds []artifact.Decision) error
}

// Agent is what lode.yaml and the flags configure, as a Temporal needs it.
type Agent struct {
	// Address (HOST:PORT, --temporal), Namespace (temporal.namespace in
	// lode.yaml, --temporal-namespace) and TaskQueue (temporal.task_queue,
	// --temporal-task-queue) say where the runs go; the last two are
	// never empty.
	Address, Namespace, TaskQueue string
	// Store keeps the threads (store: in lode.yaml, or --store); every
	// worker and every lode run shares it.
	Store ledger.Store
	// MaxTurns bounds one run (max_turns, --max-turns).
	MaxTurns int
	// Show prints a turn as lode run prints it.
	Show loop.Emitter
	// Log takes a Temporal's reports, one line each (stderr).
	Log io.Writer

	// The rest is set for Worker only: Run and Resume mount no tools and
	// build no model.

	// Provider is the model, with lode.yaml's history policy.
	Provider provider.Provider
	// Handler runs tool calls as lode run's does: approvals, the
	// policy's gate, tracing.
	Handler loop.Handler
	// Loop configures the loop.Step that takes model turns (observers,
	// tracer, lease, costs, guards: those check the calls and results
	// too); it has no handler that runs tools.
	Loop []loop.Option
	// Invoke is resolved on every model turn: the offered tools, the
	// system prompt.
	Invoke []provider.InvokeOption
	// Answer are given a run's last answer once it is stored: memory
	// extraction (memory: extract: true in lode.yaml).
	Answer []loop.Handler
}

// Option configures Main and Run.
type Option func(*env)

// WithTemporal gives lode worker, run and resume t for --temporal.
func WithTemporal(t Temporal) Option { return func(e *env) { e.temporal = t } }

// Defaults of the temporal: section of lode.yaml.
const (
	DefaultTemporalNamespace = "default"
	DefaultTemporalTaskQueue = "lode"
)

// TemporalConfig is the temporal: section: where lode worker, run and
// resume --temporal find their runs. The address is --temporal's only.
type TemporalConfig struct {
	// Namespace is the Temporal namespace; empty means
	// DefaultTemporalNamespace.
	Namespace string `yaml:"namespace"`
	// TaskQueue is the queue the workers poll; empty means
	// DefaultTemporalTaskQueue.
	TaskQueue string `yaml:"task_queue"`
}

// noTemporal is what a build without Temporal says to --temporal.
const noTemporal = "--temporal: this build of lode has no Temporal; install the one that has it: go install github.com/lodeworks/lode/x/temporal/cmd/lode@latest"

// temporalFlags are --temporal and the flags that go with it.
type temporalFlags struct {
	address, namespace, taskQueue string
}

func (t *temporalFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&t.address, "temporal", "", "HOST:PORT of a Temporal frontend: the run goes to Temporal's workers (lode worker --temporal) instead of this process; needs --store (or store: in lode.yaml)")
	fs.StringVar(&t.namespace, "temporal-namespace", "", "the Temporal namespace; empty means temporal.namespace in lode.yaml, or "+DefaultTemporalNamespace)
	fs.StringVar(&t.taskQueue, "temporal-task-queue", "", "the task queue of lode's workers; empty means temporal.task_queue in lode.yaml, or "+DefaultTemporalTaskQueue)
}

// check says whether --temporal was given, refusing its companions without
// it and --temporal in a build without Temporal.
func (t *temporalFlags) check(e env) (bool, error) {
	if t.address == "" {
		if t.namespace != "" || t.taskQueue != "" {
			return false, usageError{"--temporal-namespace and --temporal-task-queue need --temporal HOST:PORT"}
		}
		return false, nil
	}
	if e.temporal == nil {
		return false, errors.New(noTemporal)
	}
	return true, nil
}

// words are the flags again, for a lode resume command printed after a
// pause.
func (t *temporalFlags) words() []string {
	if t.address == "" {
		return nil
	}
	w := []string{"--temporal", t.address}
	if t.namespace != "" {
		w = append(w, "--temporal-namespace", t.namespace)
	}
	if t.taskQueue != "" {
		w = append(w, "--temporal-task-queue", t.taskQueue)
	}
	return w
}

// agent is the Agent of cfg with the flags over it, its store opened at
// dir; the caller closes the store.
func (t *temporalFlags) agent(e env, cfg *Config, dir string, show loop.Emitter) (*Agent, ledger.Store, error) {
	if dir == "" {
		return nil, nil, usageError{"--temporal needs the ledger every worker shares: --store DIR, or store: in lode.yaml"}
	}
	s, err := openStore(context.Background(), dir)
	if err != nil {
		return nil, nil, err
	}
	a := &Agent{Address: t.address, Namespace: t.namespace, TaskQueue: t.taskQueue, Store: s,
		MaxTurns: cfg.MaxTurns, Show: show, Log: e.stderr}
	if a.Namespace == "" {
		a.Namespace = cfg.Temporal.Namespace
	}
	if a.Namespace == "" {
		a.Namespace = DefaultTemporalNamespace
	}
	if a.TaskQueue == "" {
		a.TaskQueue = cfg.Temporal.TaskQueue
	}
	if a.TaskQueue == "" {
		a.TaskQueue = DefaultTemporalTaskQueue
	}
	return a, s, nil
}

// runOnTemporal is lode run --temporal: the prompt goes on a new stored
// thread, and the run on Temporal's workers; the turns are printed as they
// land.
func runOnTemporal(ctx context.Context, e env, o *options, tf *temporalFlags, threadID, prompt string) error {
	cfg, err := o.load(e)
	if err != nil {
		return err
	}
	dir := o.store
	if dir == "" {
		dir = cfg.Store
	}
	pr := &printer{out: e.stdout, info: e.stderr, perTurn: o.trace}
	a, s, err := tf.agent(e, cfg, dir, pr)
	if err != nil {
		return err
	}
	defer s.Close()
	st, err := temporalThread(ctx, s, dir, threadID, o)
	if err != nil {
		return err
	}
	// Roles travel with the thread, as lode run's do, so that the
	// worker's policy decides for this caller.
	if o.role != "" {
		if err := st.SetMetadata(policy.RolesKey, o.role); err != nil {
			st.Close()
			return err
		}
	}
	err = st.Append(ledger.RoleUser, artifact.Text{Content: prompt})
	id := st.ID()
	st.Close()
	if err != nil {
		return err
	}
	ctx, stop := interruptible(ctx, e)
	defer stop()
	err = e.temporal.Run(ctx, a, id)
	return temporalEnded(e, pr, o, dir, tf, id, err)
}

// temporalThread is a new thread in the workers' store, made with the
// caller's identity, or the stored thread --thread names when it waits for
// nothing and the caller's tenant is its own.
func temporalThread(ctx context.Context, s ledger.Store, dir, id string, o *options) (*ledger.StoredThread, error) {
	if id == "" {
		return s.Create(ctx, ledger.WithMetadata(newThreadMeta(o.identity())))
	}
	if err := ledger.CheckID(id); err != nil {
		return nil, usageError{fmt.Sprintf("--thread %q is not a thread ID: %v", id, err)}
	}
	st, err := s.Load(ctx, id)
	if errors.Is(err, ledger.ErrNotFound) {
		return nil, fmt.Errorf("thread %s is not in %s: lode threads --store %s lists the stored threads", id, storeName(dir), shellQuote(storeName(dir)))
	}
	if err != nil {
		return nil, err
	}
	if err := checkTenant(st, o.tenant); err != nil {
		st.Close()
		return nil, err
	}
	if n := len(loop.Pending(st)); n > 0 {
		st.Close()
		return nil, fmt.Errorf("thread %s has %s waiting for approval: decide %s with lode resume --temporal first", id, plural(n, "call"), agree(n, "it", "them"))
	}
	return st, nil
}

// resumeOnTemporal is lode resume --temporal with decisions: each one is
// checked against what waits in the thread, then sent to its run.
func resumeOnTemporal(ctx context.Context, e env, o *options, tf *temporalFlags, cfg *Config, dir string, st ledger.State, ds []artifact.Decision) error {
	waiting := map[string]bool{}
	for _, p := range loop.Pending(st) {
		waiting[p.ToolCallID] = true
	}
	for _, d := range ds {
		if !waiting[d.ToolCallID] {
			return fmt.Errorf("thread %s has no call %s waiting for approval (lode resume --store %s %s lists those that wait)", st.ID(), d.ToolCallID, shellQuote(storeName(dir)), st.ID())
		}
	}
	pr := &printer{out: e.stdout, info: e.stderr, perTurn: o.trace}
	a, s, err := tf.agent(e, cfg, dir, pr)
	if err != nil {
		return err
	}
	defer s.Close()
	ctx, stop := interruptible(ctx, e)
	defer stop()
	err = e.temporal.Resume(ctx, a, st.ID(), ds)
	return temporalEnded(e, pr, o, dir, tf, st.ID(), err)
}

// temporalEnded reports how a run on Temporal ended, as lode run reports
// one in process.
func temporalEnded(e env, pr *printer, o *options, dir string, tf *temporalFlags, thread string, err error) error {
	pr.endLine()
	pr.summary()
	var pe *loop.PendingError
	switch {
	case errors.As(err, &pe):
		rc := o.resumeCmd(dir)
		rc.extra = tf.words()
		return pausedError(e.stderr, pe, rc)
	case errors.Is(err, context.Canceled):
		fmt.Fprintf(e.stderr, "lode: thread %s: the run goes on in Temporal; this command stopped waiting for it\n", thread)
	}
	return err
}

// workerOnTemporal is lode worker --temporal: it serves lode.yaml's agent
// to Temporal until a signal stops it.
func workerOnTemporal(ctx context.Context, e env, o *recoverOptions, tf *temporalFlags, rest []string) error {
	if len(rest) > 0 {
		return usageError{fmt.Sprintf("lode worker takes no arguments, got %q", rest)}
	}
	if o.every != 0 || o.approvalExpiry != 0 {
		return usageError{"--every and --approval-expiry apply to recovering the runs of a store; with --temporal, Temporal gives the worker its runs"}
	}
	cfg, err := o.load(e)
	if err != nil {
		return err
	}
	if o.store == "" && cfg.Store == "" {
		return usageError{"--temporal needs the ledger every worker shares: --store DIR, or store: in lode.yaml"}
	}
	ag, err := newAgent(ctx, e, &o.options)
	if err != nil {
		return err
	}
	defer ag.close()
	a, s, err := tf.agent(e, ag.cfg, ag.store, ag.printer)
	if err != nil {
		return err
	}
	defer s.Close()
	a.Provider, a.Handler, a.Loop, a.Invoke = ag.prov, ag.handler, ag.loopOpts, ag.invoke
	a.Answer = ag.answer
	ctx, stop := interruptible(ctx, e)
	defer stop()
	err = e.temporal.Worker(ctx, a)
	if ctx.Err() != nil && (err == nil || errors.Is(err, context.Canceled)) {
		fmt.Fprintln(e.stderr, "lode worker: stopped")
		return nil
	}
	return err
}
