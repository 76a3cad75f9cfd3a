package a2a

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"slices"
	"strings"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2asrv"

	"github.com/lodeworks/lode/artifact"
	"github.com/lodeworks/lode/ledger"
	"github.com/lodeworks/lode/loop"
	"github.com/lodeworks/lode/provider"
	"github.com/lodeworks/lode/x/auth"
)

// AnswerArtifact is the ID of the artifact a task's answer streams into.
const AnswerArtifact = "answer"

// PendingCall is one call waiting for a decision, as the data part of an
// input-required status message lists it under "pending".
type PendingCall struct {
	ID        string `json:"id"`
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
	Reason    string `json:"reason,omitempty"`
}

// Decision is one answer to a PendingCall, as the caller sends it in a
// data part {"decisions": [...]}. Approve is required; Arguments, on an
// approval, replace the model's (JSON text, or a JSON object); Reason, on
// a denial, is what the model reads.
type Decision struct {
	ID        string          `json:"id"`
	Approve   *bool           `json:"approve"`
	Reason    string          `json:"reason,omitempty"`
	Arguments json.RawMessage `json:"arguments,omitempty"`
}

// invalid is an A2A invalid-params error with a message for the caller.
func invalid(format string, args ...any) error {
	return a2a.NewError(a2a.ErrInvalidParams, fmt.Sprintf(format, args...))
}

// methodKey holds the method a turn was asked by, for the executor,
// whose context the SDK gives no CallContext.
type methodKey struct{}

// interceptor names the caller for the SDK and refuses, before anything
// is stored, a message the context or task cannot take.
type interceptor struct{ s *Server }

func (in interceptor) Before(ctx context.Context, cc *a2asrv.CallContext, req *a2asrv.Request) (context.Context, any, error) {
	who, _ := ctx.Value(whoKey{}).(auth.Identity)
	cc.User = &a2asrv.User{Name: who.User, Authenticated: in.s.cfg.authn != nil,
		Attributes: map[string]any{"tenant": who.Tenant, "roles": strings.Join(who.Roles, ",")}}
	if m, ok := req.Payload.(*a2a.SendMessageRequest); ok {
		if err := in.s.admit(ctx, who, m); err != nil {
			return ctx, nil, err
		}
	}
	return context.WithValue(ctx, methodKey{}, cc.Method()), nil, nil
}

func (interceptor) After(context.Context, *a2asrv.CallContext, *a2asrv.Response) error { return nil }

// admit checks a message against the context and task it names: a new
// task needs text on a context that is the caller's and idle; an answer
// to an input-required task must decide its waiting calls.
func (s *Server) admit(ctx context.Context, who auth.Identity, req *a2a.SendMessageRequest) error {
	m := req.Message
	if m == nil {
		return invalid("a2a: the request has no message")
	}
	if req.Config != nil && req.Config.PushConfig != nil && s.pushes == nil {
		return a2a.NewError(a2a.ErrPushNotificationNotSupported, "a2a: this agent sends no push notifications (its card says so)")
	}
	if m.TaskID != "" {
		stored, err := s.tasks.Get(ctx, m.TaskID)
		if err != nil {
			return err // not found, or another caller's
		}
		t := stored.Task
		if m.ContextID != "" && m.ContextID != t.ContextID {
			return invalid("a2a: task %s belongs to context %s, not %.80q", t.ID, t.ContextID, m.ContextID)
		}
		if t.Status.State.Terminal() {
			return invalid("a2a: task %s has ended (%s): send a new message on context %s, with no taskId", t.ID, t.Status.State, t.ContextID)
		}
		if t.Status.State != a2a.TaskStateInputRequired {
			return invalid("a2a: task %s is %s and takes no message until it waits for input: a decision it was waiting for has been applied already", t.ID, t.Status.State)
		}
		tid, err := contextThread(t.ContextID)
		if err != nil {
			return err
		}
		st, err := s.openContext(ctx, tid, who, false)
		if err != nil {
			return err
		}
		defer st.Close()
		_, err = decisionsOf(m, loop.Pending(st), who.User)
		return err
	}
	if text := textOf(m); strings.TrimSpace(text) == "" {
		return invalid("a2a: the message has no text part and no data part: send what the agent should do")
	}
	if m.ContextID == "" {
		return nil // a new context
	}
	tid, err := contextThread(m.ContextID)
	if err != nil {
		return err
	}
	s.mu.Lock()
	running, busy := s.busy[tid]
	s.mu.Unlock()
	if busy {
		return invalid("a2a: task %s is running on context %s: wait for it to end (or cancel it) before sending the next message", running, m.ContextID)
	}
	st, err := s.openContext(ctx, tid, who, true)
	if err != nil {
		if errors.Is(err, ledger.ErrNotFound) {
			return nil
		}
		return err
	}
	defer st.Close()
	if calls := loop.Pending(st); len(calls) > 0 {
		waiting, _ := st.Metadata(WaitingKey)
		if t, err := s.tasks.Get(ctx, a2a.TaskID(waiting)); err == nil && !t.Task.Status.State.Terminal() {
			// A caller that answers on the context rather than on the
			// task (ADK's remote agents do) answers the task waiting.
			if _, err := decisionsOf(m, calls, who.User); err == nil {
				m.TaskID = t.Task.ID
				return nil
			}
			return invalid("a2a: task %s on context %s waits for decisions on %s: answer it (taskId %s) before sending a new message", waiting, m.ContextID, pendingNames(calls), waiting)
		}
	}
	return nil
}

// openContext opens the thread tid for who: a thread of another user is
// not found. With existing, a missing thread is ledger.ErrNotFound rather
// than made.
func (s *Server) openContext(ctx context.Context, tid string, who auth.Identity, existing bool) (*ledger.StoredThread, error) {
	st, err := s.store.Load(ctx, tid)
	if errors.Is(err, ledger.ErrNotFound) && !existing {
		st, err = s.store.Create(ctx, ledger.WithID(tid), ledger.WithMetadata(who.Metadata()))
		if errors.Is(err, ledger.ErrConflict) {
			st, err = s.store.Load(ctx, tid)
		}
	}
	if err != nil {
		return nil, err
	}
	if owner, _ := st.Metadata(auth.UserKey); owner != who.User {
		st.Close()
		return nil, a2a.NewError(a2a.ErrTaskNotFound, fmt.Sprintf("a2a: context %s not found", strings.TrimPrefix(tid, ContextPrefix)))
	}
	return st, nil
}

func pendingNames(calls []artifact.Pending) string {
	parts := make([]string, len(calls))
	for i, c := range calls {
		parts[i] = fmt.Sprintf("%s (%s)", c.Name, c.ToolCallID)
	}
	return strings.Join(parts, ", ")
}

// textOf joins a message's text parts, and its data parts as JSON, one a
// line: what the model is sent.
func textOf(m *a2a.Message) string {
	var b strings.Builder
	for _, p := range m.Parts {
		if p == nil {
			continue
		}
		var s string
		switch c := p.Content.(type) {
		case a2a.Text:
			s = string(c)
		case a2a.Data:
			if j, err := json.Marshal(c.Value); err == nil {
				s = string(j)
			}
		case a2a.URL:
			s = string(c)
		}
		if s == "" {
			continue
		}
		if b.Len() > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(s)
	}
	return b.String()
}

// decisionsOf reads the decisions of an answer to an input-required task:
// a data part {"decisions": [...]}, or a text "approve" or "deny" for
// every waiting call. Each must name a call in pending, once.
func decisionsOf(m *a2a.Message, pending []artifact.Pending, by string) ([]artifact.Decision, error) {
	if len(pending) == 0 {
		return nil, invalid("a2a: no call of this task waits for a decision: its decisions were applied already")
	}
	want := `answer with a data part {"decisions": [{"id": CALL, "approve": true|false, "reason": TEXT}]} or the text "approve" or "deny"`
	var ds []Decision
	found := false
	for _, p := range m.Parts {
		if p == nil {
			continue
		}
		if d, ok := p.Content.(a2a.Data); ok {
			raw, err := json.Marshal(d.Value)
			if err != nil {
				return nil, invalid("a2a: the data part cannot be read: %s", want)
			}
			var body struct {
				Decisions []Decision `json:"decisions"`
			}
			dec := json.NewDecoder(strings.NewReader(string(raw)))
			dec.DisallowUnknownFields()
			if err := dec.Decode(&body); err != nil || len(body.Decisions) == 0 {
				return nil, invalid("a2a: the data part holds no decisions: %s", want)
			}
			ds = append(ds, body.Decisions...)
			found = true
		}
	}
	if !found {
		text := strings.ToLower(strings.TrimSpace(textOf(m)))
		verb, reason, _ := strings.Cut(text, ":")
		var approve bool
		switch strings.TrimSpace(verb) {
		case "approve", "approved", "yes":
			approve = true
		case "deny", "denied", "no", "reject":
		default:
			return nil, invalid("a2a: %d tool call(s) wait for a decision (%s): %s", len(pending), pendingNames(pending), want)
		}
		out := make([]artifact.Decision, len(pending))
		for i, p := range pending {
			out[i] = artifact.Decision{ToolCallID: p.ToolCallID, Name: p.Name, Approved: approve, Reason: strings.TrimSpace(reason), By: by}
		}
		return out, nil
	}
	waiting := make(map[string]artifact.Pending, len(pending))
	for _, p := range pending {
		waiting[p.ToolCallID] = p
	}
	seen := map[string]bool{}
	out := make([]artifact.Decision, 0, len(ds))
	for _, d := range ds {
		p, ok := waiting[d.ID]
		if !ok {
			return nil, invalid("a2a: call %.80q does not wait for a decision (waiting: %s)", d.ID, pendingNames(pending))
		}
		if seen[d.ID] {
			return nil, invalid("a2a: call %s is decided twice in one answer", d.ID)
		}
		seen[d.ID] = true
		if d.Approve == nil {
			return nil, invalid("a2a: the decision on call %s has no \"approve\": true or false", d.ID)
		}
		ad := artifact.Decision{ToolCallID: d.ID, Name: p.Name, Approved: *d.Approve, Reason: d.Reason, By: by}
		if len(d.Arguments) > 0 && string(d.Arguments) != "null" {
			if !*d.Approve {
				return nil, invalid("a2a: the decision on call %s denies it and gives arguments: arguments go with an approval", d.ID)
			}
			var s string
			if json.Unmarshal(d.Arguments, &s) == nil {
				ad.Arguments = s
			} else {
				ad.Arguments = string(d.Arguments)
			}
		}
		out = append(out, ad)
	}
	return out, nil
}

// executor runs a task's turn on its context's thread.
type executor struct{ s *Server }

func (x executor) Execute(ctx context.Context, ec *a2asrv.ExecutorContext) iter.Seq2[a2a.Event, error] {
	return func(yield func(a2a.Event, error) bool) {
		x.s.execute(ctx, ec, yield)
	}
}

func (s *Server) execute(ctx context.Context, ec *a2asrv.ExecutorContext, yield func(a2a.Event, error) bool) {
	who, _ := ctx.Value(whoKey{}).(auth.Identity)
	tid, err := contextThread(ec.ContextID)
	if err != nil {
		yield(nil, err)
		return
	}
	// The turn is the server's, not the request's: a dropped connection
	// does not stop it.
	runCtx, cancel := context.WithCancelCause(context.WithValue(s.base, methodKey{}, ctx.Value(methodKey{})))
	defer cancel(nil)
	tr := &turn{cancel: cancel, done: make(chan struct{})}
	defer close(tr.done)
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		yield(nil, errClosing)
		return
	}
	if other, busy := s.busy[tid]; busy {
		s.mu.Unlock()
		yield(nil, invalid("a2a: task %s is running on context %s: wait for it to end", other, ec.ContextID))
		return
	}
	s.busy[tid] = ec.TaskID
	s.running[ec.TaskID] = tr
	s.wg.Add(1)
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		delete(s.busy, tid)
		delete(s.running, ec.TaskID)
		s.mu.Unlock()
		s.wg.Done()
	}()

	st, err := s.openContext(ctx, tid, who, false)
	if err != nil {
		yield(nil, err)
		return
	}
	defer st.Close()
	if ec.StoredTask == nil {
		if !yield(a2a.NewSubmittedTask(ec, ec.Message), nil) {
			return
		}
	}
	var run func(context.Context, *loop.Step) error
	if ec.StoredTask != nil && ec.StoredTask.Status.State == a2a.TaskStateInputRequired {
		ds, err := decisionsOf(ec.Message, loop.Pending(st), who.User)
		if err != nil {
			// Checked on admission; another answer got in first.
			yield(s.waiting(ec, st, err.Error()), nil)
			return
		}
		run = func(ctx context.Context, step *loop.Step) error {
			_, err := step.Resume(ctx, st, s.prov, ds)
			return err
		}
	} else {
		if err := s.settleAbandoned(ctx, st); err != nil {
			yield(nil, err)
			return
		}
		for k, v := range who.Metadata() {
			if err := st.SetMetadata(k, v); err != nil {
				yield(nil, err)
				return
			}
		}
		if err := st.Append(ledger.RoleUser, artifact.Text{Content: textOf(ec.Message)}); err != nil {
			yield(nil, err)
			return
		}
		run = func(ctx context.Context, step *loop.Step) error {
			_, err := step.Run(ctx, st, s.prov)
			return err
		}
	}
	if !yield(a2a.NewStatusUpdateEvent(ec, a2a.TaskStateWorking, nil), nil) {
		return
	}
	s.runTurn(runCtx, cancel, ec, st, run, yield)
}

// runTurn runs the turn, streaming its text as the answer artifact, and
// ends the task as the turn ended.
func (s *Server) runTurn(ctx context.Context, cancel context.CancelCauseFunc, ec *a2asrv.ExecutorContext, st *ledger.StoredThread, run func(context.Context, *loop.Step) error, yield func(a2a.Event, error) bool) {
	started := false
	if ec.StoredTask != nil {
		for _, a := range ec.StoredTask.Artifacts {
			if a.ID == AnswerArtifact {
				started = true
			}
		}
	}
	events := make(chan a2a.Event, 64)
	// A caller of SendMessage reads the task once it ends: it gets the
	// answer as one part, where a stream gets it chunk by chunk.
	whole := ctx.Value(methodKey{}) == "SendMessage"
	obs := &observer{ec: ec, events: events, started: started, ctx: ctx, whole: whole, model: modelOf(s.prov)}
	if ec.StoredTask != nil {
		// The task's earlier turns (before it waited for input) count.
		obs.usage = usageIn(ec.StoredTask.Metadata)
	}
	opts := append(s.cfg.loop[:len(s.cfg.loop):len(s.cfg.loop)], loop.WithObserver(obs), loop.WithLease(-1))
	step := loop.New(opts...)
	var err error
	go func() {
		defer close(events)
		err = run(ctx, step)
		_ = step.Flush(context.WithoutCancel(ctx))
	}()
	alive := true
	for ev := range events {
		if alive && !yield(ev, nil) {
			// The SDK has settled the task (a cancel, a conflict it
			// resolved): the turn has no one to report to.
			alive = false
			cancel(errCanceled)
		}
	}
	if !alive {
		return
	}
	cause := context.Cause(ctx)
	if cause == nil && s.base.Err() == nil {
		if ev := obs.flush(); ev != nil && !yield(ev, nil) {
			return
		}
	}
	switch {
	case errors.Is(cause, errCanceled), s.base.Err() != nil:
		// Cancel writes the canceled state; a closing server writes
		// nothing, so that Recover finishes the task from the store.
		return
	case err == nil:
		_ = st.SetMetadata(WaitingKey, "")
		yield(obs.withUsage(a2a.NewStatusUpdateEvent(ec, a2a.TaskStateCompleted, nil)), nil)
	case errors.Is(err, loop.ErrPaused):
		if e := st.SetMetadata(WaitingKey, string(ec.TaskID)); e != nil {
			yield(obs.withUsage(s.failed(ec, e)), nil)
			return
		}
		yield(obs.withUsage(s.waiting(ec, st, "")), nil)
	default:
		if _, refused := errors.AsType[*loop.DecisionError](err); refused && len(loop.Pending(st)) > 0 {
			yield(obs.withUsage(s.waiting(ec, st, err.Error())), nil)
			return
		}
		s.cfg.logger.WarnContext(ctx, "lode: a2a turn failed", "thread", st.ID(), "task", ec.TaskID, "err", err)
		yield(obs.withUsage(s.failed(ec, err)), nil)
	}
}

// modelOf is the model prov names, or "".
func modelOf(prov provider.Provider) string {
	switch p := prov.(type) {
	case interface{ Model() string }:
		return p.Model()
	case interface{ Models() []string }:
		if ms := p.Models(); len(ms) > 0 {
			return ms[0]
		}
	}
	return ""
}

// usageIn reads the usage a task's metadata holds under MetaUsage, or nil.
func usageIn(meta map[string]any) *artifact.Usage {
	v, ok := meta[MetaUsage]
	if !ok {
		return nil
	}
	raw, err := json.Marshal(v)
	if err != nil {
		return nil
	}
	var u artifact.Usage
	if json.Unmarshal(raw, &u) != nil {
		return nil
	}
	return &u
}

// addUsage adds one answer's usage to the task's. Answers by different
// models are reported under both names joined, which no price list
// knows: a caller with a cost limit stops rather than price them as one.
func (o *observer) addUsage(u artifact.Usage) {
	if u.Model == "" {
		u.Model = o.model
	}
	if o.usage == nil {
		o.usage = &artifact.Usage{Model: u.Model}
	}
	t := o.usage
	t.InputTokens += u.InputTokens
	t.OutputTokens += u.OutputTokens
	t.CachedInputTokens += u.CachedInputTokens
	t.CacheWriteTokens += u.CacheWriteTokens
	t.ReasoningTokens += u.ReasoningTokens
	if u.Model != "" && !slices.Contains(strings.Split(t.Model, ","), u.Model) {
		if t.Model == "" {
			t.Model = u.Model
		} else {
			t.Model += "," + u.Model
		}
	}
}

// withUsage puts the task's usage so far on ev's metadata under
// MetaUsage, where a lode caller reads it; the SDK copies it onto the
// task, so that a SendMessage caller finds it there.
func (o *observer) withUsage(ev *a2a.TaskStatusUpdateEvent) *a2a.TaskStatusUpdateEvent {
	if o.usage == nil {
		return ev
	}
	u := *o.usage
	u.CostUSD, u.Priced = 0, false // the caller prices it by its own list
	// Plain maps: the SDK copies events with gob.
	var m map[string]any
	if raw, err := json.Marshal(u); err == nil && json.Unmarshal(raw, &m) == nil {
		ev.Metadata = map[string]any{MetaUsage: m}
	}
	return ev
}

func (s *Server) failed(ec a2a.TaskInfoProvider, err error) *a2a.TaskStatusUpdateEvent {
	msg := a2a.NewMessageForTask(a2a.MessageRoleAgent, ec, a2a.NewTextPart(err.Error()))
	return a2a.NewStatusUpdateEvent(ec, a2a.TaskStateFailed, msg)
}

// waiting is the input-required status: the calls waiting for a decision
// as text and as a data part {"pending": [...]}; note says why an answer
// was refused.
func (s *Server) waiting(ec a2a.TaskInfoProvider, st ledger.State, note string) *a2a.TaskStatusUpdateEvent {
	calls := loop.Pending(st)
	pending := make([]PendingCall, len(calls))
	var b strings.Builder
	if note != "" {
		b.WriteString(note + "\n")
	}
	fmt.Fprintf(&b, "%d tool call(s) wait for approval:", len(calls))
	for i, c := range calls {
		pending[i] = PendingCall{ID: c.ToolCallID, Name: c.Name, Arguments: c.Arguments, Reason: c.Reason}
		fmt.Fprintf(&b, "\n- %s %s (id %s)", c.Name, c.Arguments, c.ToolCallID)
		if c.Reason != "" {
			b.WriteString(": " + c.Reason)
		}
	}
	b.WriteString("\nAnswer on this task with a data part {\"decisions\": [{\"id\": ID, \"approve\": true|false, \"reason\": TEXT}]} or the text approve or deny.")
	// Plain maps and slices: the SDK copies events with gob, which
	// knows no type of ours.
	var data any
	if raw, err := json.Marshal(map[string]any{"pending": pending}); err == nil {
		_ = json.Unmarshal(raw, &data)
	}
	msg := a2a.NewMessageForTask(a2a.MessageRoleAgent, ec, a2a.NewTextPart(b.String()), a2a.NewDataPart(data))
	return a2a.NewStatusUpdateEvent(ec, a2a.TaskStateInputRequired, msg)
}

// cancelledReason is what a call denied by a cancel records as the reason.
const cancelledReason = "the task was cancelled before a decision"

// denyWaiting denies, through loop.Step.Resume, the calls a task waiting
// for input left pending, as it is cancelled: the context's thread then
// holds the decisions and their results at once, and the next message on
// it starts clean. Resume runs on a context already ended, so that it
// records the decisions and invokes no model.
func (s *Server) denyWaiting(ctx context.Context, ec *a2asrv.ExecutorContext) error {
	tid, err := contextThread(ec.ContextID)
	if err != nil {
		return err
	}
	st, err := s.store.Load(ctx, tid)
	if err != nil {
		return err
	}
	defer st.Close()
	if waiting, _ := st.Metadata(WaitingKey); waiting != string(ec.TaskID) {
		return nil // the calls are another task's, or settled
	}
	calls := loop.Pending(st)
	ds := make([]artifact.Decision, len(calls))
	for i, c := range calls {
		ds[i] = loop.Deny(c.ToolCallID, cancelledReason)
		ds[i].By = "a2a"
	}
	if len(ds) > 0 {
		done, stop := context.WithCancel(context.WithoutCancel(ctx))
		stop()
		_, err = loop.New(loop.WithLease(-1)).Resume(done, st, s.prov, ds)
		if left := loop.Pending(st); len(left) > 0 {
			return fmt.Errorf("a2a: %s still wait: %w", pendingNames(left), err)
		}
	}
	return st.SetMetadata(WaitingKey, "")
}

// settleAbandoned denies the calls of a task that ended while they waited
// (the caller cancelled it), so that the context can take a new message.
func (s *Server) settleAbandoned(ctx context.Context, st *ledger.StoredThread) error {
	calls := loop.Pending(st)
	if len(calls) == 0 {
		return nil
	}
	waiting, _ := st.Metadata(WaitingKey)
	if t, err := s.tasks.Get(ctx, a2a.TaskID(waiting)); err == nil && !t.Task.Status.State.Terminal() {
		return invalid("a2a: task %s waits for decisions on %s", waiting, pendingNames(calls))
	}
	arts := make([]artifact.Artifact, 0, 2*len(calls))
	for _, c := range calls {
		d := artifact.Decision{ToolCallID: c.ToolCallID, Name: c.Name, Reason: cancelledReason, By: "a2a"}
		arts = append(arts, d, artifact.ToolResult{ToolCallID: c.ToolCallID, Name: c.Name, IsError: true,
			Content: fmt.Sprintf("the call to %s did not run: its task was cancelled before anyone decided on it", c.Name)})
	}
	if err := st.Append(ledger.RoleTool, arts...); err != nil {
		return err
	}
	return st.SetMetadata(WaitingKey, "")
}

func (x executor) Cancel(ctx context.Context, ec *a2asrv.ExecutorContext) iter.Seq2[a2a.Event, error] {
	return func(yield func(a2a.Event, error) bool) {
		s := x.s
		s.mu.Lock()
		tr := s.running[ec.TaskID]
		s.mu.Unlock()
		if tr != nil {
			tr.cancel(errCanceled)
			select {
			case <-tr.done:
			case <-ctx.Done():
			}
		} else if ec.StoredTask != nil && ec.StoredTask.Status.State == a2a.TaskStateInputRequired {
			if err := s.denyWaiting(ctx, ec); err != nil {
				// The next message on the context denies them instead
				// (settleAbandoned); the task is cancelled either way.
				s.cfg.logger.WarnContext(ctx, "lode: a2a cancel left calls waiting", "task", ec.TaskID, "err", err)
			}
		}
		yield(a2a.NewStatusUpdateEvent(ec, a2a.TaskStateCanceled, nil), nil)
	}
}

// observer turns the loop's events into the task's artifact updates.
type observer struct {
	// whole keeps the text for flush rather than sending chunks.
	whole   bool
	text    strings.Builder
	ctx     context.Context
	ec      *a2asrv.ExecutorContext
	events  chan<- a2a.Event
	started bool
	deltas  bool // this answer streamed text
	// model names answers whose usage names none: the provider's.
	model string
	// usage is what the task's answers cost so far, or nil.
	usage *artifact.Usage
}

func (o *observer) chunk(text string) {
	if text == "" {
		return
	}
	if o.whole {
		o.text.WriteString(text)
		return
	}
	select {
	case o.events <- o.part(text):
	case <-o.ctx.Done():
	}
}

// flush is the text kept for a caller of SendMessage as one artifact
// update, or nil; called once the turn's events are all in.
func (o *observer) flush() a2a.Event {
	if !o.whole || o.text.Len() == 0 {
		return nil
	}
	ev := o.part(o.text.String())
	ev.LastChunk = true
	return ev
}

func (o *observer) part(text string) *a2a.TaskArtifactUpdateEvent {
	ev := &a2a.TaskArtifactUpdateEvent{
		TaskID: o.ec.TaskID, ContextID: o.ec.ContextID, Append: o.started,
		Artifact: &a2a.Artifact{ID: AnswerArtifact, Name: AnswerArtifact, Parts: a2a.ContentParts{a2a.NewTextPart(text)}},
	}
	o.started = true
	return ev
}

func (o *observer) Emit(_ context.Context, ev loop.Event) {
	switch ev := ev.(type) {
	case loop.DeltaEvent:
		if d, ok := ev.Delta.(artifact.TextDelta); ok {
			o.deltas = true
			o.chunk(d.Content)
		}
	case loop.TurnCompleteEvent:
		if ev.Role != ledger.RoleAssistant {
			return
		}
		for _, a := range ev.Artifacts {
			if u, ok := a.(artifact.Usage); ok {
				o.addUsage(u)
			}
		}
		if !o.deltas {
			for _, a := range ev.Artifacts {
				if t, ok := a.(artifact.Text); ok {
					o.chunk(t.Content)
				}
			}
		}
		o.deltas = false
	}
}
