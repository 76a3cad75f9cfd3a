package a2a

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"strings"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/lodeworks/lode/artifact"
	"github.com/lodeworks/lode/loop"
	"github.com/lodeworks/lode/tool"
	"github.com/lodeworks/lode/x/auth"
	xtool "github.com/lodeworks/lode/x/tool"
)

// The metadata keys lode writes on a task it sends, and reads on what
// comes back.
const (
	// MetaSkill names the skill the task is for (A2A has no field for it).
	MetaSkill = "lode/skill"
	// MetaCaller holds the caller's identity, from its thread (never from
	// the model's arguments): an object with user, tenant and roles. It
	// tells the remote agent whom the task is for; the remote agent's
	// own door decides what that caller may do.
	MetaCaller = "lode/caller"
	// MetaUsage, on a task, status update, artifact update or message
	// from the remote agent, is the model usage the task cost so far, as
	// artifact.Usage's JSON; the last one reported counts toward the
	// caller's run (loop.Charge), so its cost limit binds remote work.
	MetaUsage = "lode/usage"
	// metaADKUsage is where adk-go's adka2a puts the usage of each model
	// call (Gemini's usage metadata), on the artifact update it made.
	metaADKUsage = "adk_usage_metadata"
)

// cancelWait bounds the cancel request sent after a call gave up.
const cancelWait = 10 * time.Second

// maxResubscribe bounds how often a broken stream is picked up again.
const maxResubscribe = 3

// Answer is one call's outcome, the Value of its tool.Result.
type Answer struct {
	// Agent and Skill say whom was asked.
	Agent, Skill string
	// TaskID and ContextID name the remote task, when the agent made one.
	TaskID, ContextID string
	// State is the task's last state ("TASK_STATE_COMPLETED",
	// "TASK_STATE_INPUT_REQUIRED", ...); empty when the agent answered
	// with a message and no task.
	State string
	// Text is the answer as the model sees it, cut to WithMaxResult.
	Text string
	// Cut says the answer was longer than WithMaxResult.
	Cut bool
	// Usage is what the remote agent reported it spent (MetaUsage).
	Usage *artifact.Usage
}

// Call sends the task in args to the skill called name as a remote task,
// streamed when the card says the agent streams, and waits for its end,
// WithTimeout at most. A task the agent fails, rejects or cancels, one
// that needs authentication, and a timeout are error results; a question
// back (input-required) is a result saying what the agent asks and how to
// answer it; an ended ctx cancels the remote task and is an error.
func (r *Remote) Call(ctx context.Context, name string, args map[string]any) (any, error) {
	skill, ok := r.skills[name]
	if !ok {
		return nil, fmt.Errorf("a2a: the agent %q has no skill %q", r.name, name)
	}
	task, _ := args["task"].(string)
	if strings.TrimSpace(task) == "" {
		return tool.Result{IsError: true, Content: "task is empty: say what the agent should do."}, nil
	}
	taskID, _ := args["task_id"].(string)
	contextID, _ := args["context_id"].(string)

	msg := a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart(task))
	msg.ID = r.messageID(ctx)
	msg.TaskID = a2a.TaskID(taskID)
	msg.ContextID = contextID
	req := &a2a.SendMessageRequest{Message: msg, Metadata: map[string]any{MetaSkill: skill.ID}}
	if caller := callerMeta(ctx); caller != nil {
		req.Metadata[MetaCaller] = caller
	}

	tctx, cancel := context.WithTimeout(ctx, r.cfg.timeout)
	defer cancel()
	c := collector{}
	var err error
	if r.stream {
		err = c.drain(r.client.SendStreamingMessage(tctx, req))
		// A stream that broke, or ended, before its task did (a dropped
		// connection, a proxy's timeout) is picked up again with
		// SubscribeToTask, a few times at most.
		for range maxResubscribe {
			if tctx.Err() != nil || errors.Is(err, ErrTooLarge) || c.taskID == "" || c.settled() {
				break
			}
			// When picking up fails too, what ended the stream is
			// what the call reports.
			if c.drain(r.client.SubscribeToTask(tctx, &a2a.SubscribeToTaskRequest{ID: c.taskID})) != nil {
				break
			}
			err = nil
		}
	} else {
		err = r.sendAndPoll(tctx, req, &c)
	}
	ans := &Answer{Agent: r.name, Skill: skill.ID, TaskID: string(c.taskID), ContextID: c.contextID}
	if c.state != a2a.TaskStateUnspecified {
		ans.State = string(c.state)
	}
	if u := c.spent(); u != nil {
		if u.Model == "" {
			// A usage that names no model would be priced as the
			// caller's own provider's, or not at all: named for what it
			// is, no price list knows it, so a cost limit stops the run
			// (loop.ErrUnpriced) and the error says why.
			u.Model = UnnamedModel(r.name)
		}
		charged := loop.Charge(ctx, nil, "a2a "+r.name, *u)
		ans.Usage = &charged
	}

	switch {
	case ctx.Err() != nil:
		r.cancelTask(ctx, &c)
		return nil, fmt.Errorf("a2a: %s: the call was stopped: %w", r.name, context.Cause(ctx))
	case tctx.Err() != nil:
		r.cancelTask(ctx, &c)
		return r.result(ans, true, fmt.Sprintf("The agent %s did not finish within %s; its task was cancelled. Ask for less at once, or do this part yourself.", r.name, r.cfg.timeout)), nil
	case errors.Is(err, ErrTooLarge):
		r.cancelTask(ctx, &c)
		return r.result(ans, true, fmt.Sprintf("The agent %s sent more than %d bytes; its answer was refused. Ask it for a shorter answer.", r.name, r.transpt.maxBody)), nil
	case err != nil:
		return nil, fmt.Errorf("a2a: %s: %w", r.name, err)
	}

	text := c.text()
	switch c.state {
	case a2a.TaskStateInputRequired:
		ask := text
		if ask == "" {
			ask = "(it did not say what)"
		}
		return r.result(ans, false, fmt.Sprintf("The agent %s needs more before it can go on; it asks:\n%s\n\nTo answer, call %s__%s again with the answer as task, task_id %q and context_id %q.",
			r.name, r.cut(ans, ask), r.name, name, c.taskID, c.contextID)), nil
	case a2a.TaskStateAuthRequired:
		return r.result(ans, true, fmt.Sprintf("The agent %s needs authentication that lode cannot give in a call: %s", r.name, r.cut(ans, text))), nil
	case a2a.TaskStateFailed, a2a.TaskStateRejected, a2a.TaskStateCanceled:
		what := map[a2a.TaskState]string{a2a.TaskStateFailed: "failed", a2a.TaskStateRejected: "rejected the task", a2a.TaskStateCanceled: "cancelled the task"}[c.state]
		if text == "" {
			text = "(no reason given)"
		}
		return r.result(ans, true, fmt.Sprintf("The agent %s %s: %s", r.name, what, r.cut(ans, text))), nil
	case a2a.TaskStateCompleted:
	case a2a.TaskStateUnspecified:
		if !c.message {
			return r.result(ans, true, fmt.Sprintf("The agent %s sent no answer.", r.name)), nil
		}
	default:
		return r.result(ans, true, fmt.Sprintf("The agent %s stopped answering before its task ended (it was %s).", r.name, strings.ToLower(strings.TrimPrefix(string(c.state), "TASK_STATE_")))), nil
	}
	if text == "" {
		return r.result(ans, true, fmt.Sprintf("The agent %s finished without a text answer.", r.name)), nil
	}
	return r.result(ans, false, r.cut(ans, text)), nil
}

// Polling bounds of a call to an agent that does not stream: the first
// GetTask after pollFirst, each next one twice as late, pollMax at most.
const (
	pollFirst = 50 * time.Millisecond
	pollMax   = 2 * time.Second
)

// sendAndPoll sends req asking the agent to answer at once with the task
// it made (A2A 1.0's returnImmediately; 0.3's blocking: false), then
// reads the task with GetTask until it settles, so that the call knows
// the task's ID from the start and a cancelled turn or a timeout can
// cancel it. An agent that ignores the flag answers when the task ends,
// as a blocking call. An answer to a task waiting for input is sent
// blocking: the task's ID is known already. GetTask failing maxResubscribe times in a row ends
// the polling with the task unsettled.
func (r *Remote) sendAndPoll(ctx context.Context, req *a2a.SendMessageRequest, c *collector) error {
	if req.Message.TaskID != "" {
		// An answer to a task that asked for input: its ID is known, and
		// an agent returning at once may return it as it was, still
		// asking. The call waits for the answer instead.
		c.ids(req.Message.TaskID, req.Message.ContextID)
	} else {
		req.Config = &a2a.SendMessageConfig{ReturnImmediately: true}
	}
	res, err := r.client.SendMessage(ctx, req)
	if err != nil {
		return err
	}
	c.add(res)
	wait, failed := pollFirst, 0
	timer := time.NewTimer(wait)
	defer timer.Stop()
	for c.taskID != "" && !c.settled() {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-timer.C:
		}
		t, err := r.client.GetTask(ctx, &a2a.GetTaskRequest{ID: c.taskID})
		if err == nil {
			c.add(t)
			failed = 0
		} else if failed++; failed == maxResubscribe {
			// As a stream that cannot be picked up: the call says the
			// agent stopped answering before its task ended.
			return nil
		}
		wait = min(2*wait, pollMax)
		timer.Reset(wait)
	}
	return nil
}

func (r *Remote) result(ans *Answer, isErr bool, content string) tool.Result {
	ans.Text = content
	return tool.Result{Content: content, Value: ans, IsError: isErr}
}

// UnnamedModel is the model name a remote agent's usage is charged under
// when it names none: no price list knows it, so with a cost limit
// (loop.WithMaxCost) the caller's run stops after the turn with an error
// matching loop.ErrUnpriced that quotes it, unless the Pricer prices it.
func UnnamedModel(agent string) string {
	return "a2a agent " + agent + " (its usage names no model)"
}

// cut bounds text to WithMaxResult, keeping its head, with a marker.
func (r *Remote) cut(ans *Answer, text string) string {
	if len(text) <= r.cfg.maxResult {
		return text
	}
	ans.Cut = true
	return bound(text, r.cfg.maxResult) + fmt.Sprintf("\n[a2a: the answer was cut to %d of its %d bytes]", r.cfg.maxResult, len(text))
}

// cancelTask asks the agent to cancel the call's task, if it made one
// that has not ended, on a context of its own: the call's has ended.
func (r *Remote) cancelTask(ctx context.Context, c *collector) {
	if c.taskID == "" || c.state.Terminal() {
		return
	}
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cancelWait)
	defer cancel()
	_, _ = r.client.CancelTask(cctx, &a2a.CancelTaskRequest{ID: c.taskID})
}

// messageID names a message after the tool call that sends it, so that a
// recorded session replays; outside a loop turn it is random.
func (r *Remote) messageID(ctx context.Context) string {
	n := r.msgSeq.Add(1)
	if t, ok := loop.CurrentTurn(ctx); ok {
		if i, ok := loop.ArtifactIndex(ctx); ok && i >= 0 && i < len(t.Answer) {
			if call, ok := t.Answer[i].(artifact.ToolCall); ok && call.ID != "" {
				return fmt.Sprintf("lode-%s-%d", call.ID, n)
			}
		}
	}
	return a2a.NewMessageID()
}

// callerMeta is the caller's identity from its thread, or nil.
func callerMeta(ctx context.Context) map[string]any {
	st, ok := xtool.Caller(ctx)
	if !ok {
		return nil
	}
	id := auth.Of(st)
	m := map[string]any{}
	if id.User != "" {
		m["user"] = id.User
	}
	if id.Tenant != "" {
		m["tenant"] = id.Tenant
	}
	if len(id.Roles) > 0 {
		m["roles"] = id.Roles
	}
	if len(m) == 0 {
		return nil
	}
	return m
}

// collector folds the events of one call into its outcome.
type collector struct {
	taskID    a2a.TaskID
	contextID string
	state     a2a.TaskState
	status    string // the text of the last status message
	reply     string // the text of a message answer
	message   bool
	order     []a2a.ArtifactID
	artifacts map[a2a.ArtifactID]*strings.Builder
	usage     *artifact.Usage
	// adk adds up the usage adk-go reported per model call.
	adk *artifact.Usage
}

// spent is what the task cost: what the agent reported under MetaUsage,
// else what adk-go reported call by call, else nil.
func (c *collector) spent() *artifact.Usage {
	if c.usage != nil {
		return c.usage
	}
	return c.adk
}

func (c *collector) add(ev a2a.Event) {
	if ev == nil {
		return
	}
	c.readUsage(ev.Meta())
	switch e := ev.(type) {
	case *a2a.Message:
		c.message = true
		c.ids(e.TaskID, e.ContextID)
		c.reply = partsText(e.Parts)
	case *a2a.Task:
		c.ids(e.ID, e.ContextID)
		c.setStatus(e.Status)
		c.order, c.artifacts = nil, nil
		for _, a := range e.Artifacts {
			if a != nil {
				c.readUsage(a.Metadata)
				c.artifact(a, false)
			}
		}
	case *a2a.TaskStatusUpdateEvent:
		c.ids(e.TaskID, e.ContextID)
		c.setStatus(e.Status)
	case *a2a.TaskArtifactUpdateEvent:
		c.ids(e.TaskID, e.ContextID)
		c.readADKUsage(e.Metadata)
		if e.Artifact != nil {
			c.readUsage(e.Artifact.Metadata)
			c.artifact(e.Artifact, e.Append)
		}
	}
}

// drain adds the events of a stream until it ends, and returns the error
// that ended it.
func (c *collector) drain(events iter.Seq2[a2a.Event, error]) error {
	for ev, err := range events {
		if err != nil {
			return err
		}
		c.add(ev)
	}
	return nil
}

// settled says the task reached a state the call ends on: a final one,
// or one that waits for the caller; an answer with no task too.
func (c *collector) settled() bool {
	return c.message || c.state.Terminal() || c.state == a2a.TaskStateInputRequired || c.state == a2a.TaskStateAuthRequired
}

func (c *collector) ids(task a2a.TaskID, ctxID string) {
	if task != "" {
		c.taskID = task
	}
	if ctxID != "" {
		c.contextID = ctxID
	}
}

func (c *collector) setStatus(s a2a.TaskStatus) {
	c.state = s.State
	if s.Message != nil {
		c.readUsage(s.Message.Metadata)
		c.status = partsText(s.Message.Parts)
	}
}

func (c *collector) artifact(a *a2a.Artifact, appendTo bool) {
	if c.artifacts == nil {
		c.artifacts = map[a2a.ArtifactID]*strings.Builder{}
	}
	b, ok := c.artifacts[a.ID]
	if !ok {
		b = &strings.Builder{}
		c.artifacts[a.ID] = b
		c.order = append(c.order, a.ID)
	} else if !appendTo {
		b.Reset()
	}
	b.WriteString(partsText(a.Parts))
}

func (c *collector) readUsage(meta map[string]any) {
	v, ok := meta[MetaUsage]
	if !ok {
		return
	}
	raw, err := json.Marshal(v)
	if err != nil {
		return
	}
	var u artifact.Usage
	if json.Unmarshal(raw, &u) != nil || u.InputTokens < 0 || u.OutputTokens < 0 || u.CostUSD < 0 {
		return
	}
	c.usage = &u
}

// readADKUsage adds the usage of one adk-go model call, in Gemini's
// terms, to c.adk.
func (c *collector) readADKUsage(meta map[string]any) {
	v, ok := meta[metaADKUsage]
	if !ok {
		return
	}
	raw, err := json.Marshal(v)
	if err != nil {
		return
	}
	var g struct {
		Prompt     int64 `json:"promptTokenCount"`
		Candidates int64 `json:"candidatesTokenCount"`
		Thoughts   int64 `json:"thoughtsTokenCount"`
		Cached     int64 `json:"cachedContentTokenCount"`
	}
	if json.Unmarshal(raw, &g) != nil || g.Prompt < 0 || g.Candidates < 0 || g.Thoughts < 0 || g.Cached < 0 {
		return
	}
	if c.adk == nil {
		c.adk = &artifact.Usage{}
	}
	c.adk.InputTokens += g.Prompt
	c.adk.OutputTokens += g.Candidates + g.Thoughts
	c.adk.ReasoningTokens += g.Thoughts
	c.adk.CachedInputTokens += g.Cached
}

// text is the answer: the artifacts' text, else a message's, else the
// last status message's.
func (c *collector) text() string {
	var parts []string
	for _, id := range c.order {
		if s := c.artifacts[id].String(); s != "" {
			parts = append(parts, s)
		}
	}
	if c.state == a2a.TaskStateInputRequired || c.state == a2a.TaskStateAuthRequired ||
		c.state == a2a.TaskStateFailed || c.state == a2a.TaskStateRejected {
		// What the agent says of its state is the point; artifacts so
		// far come after it.
		if c.status != "" {
			parts = append([]string{c.status}, parts...)
		}
		return strings.Join(parts, "\n\n")
	}
	if len(parts) > 0 {
		return strings.Join(parts, "\n\n")
	}
	if c.reply != "" {
		return c.reply
	}
	return c.status
}

// partsText renders parts as text: text as it is, data as JSON, files by
// their URL or size.
func partsText(parts a2a.ContentParts) string {
	var b strings.Builder
	for _, p := range parts {
		if p == nil {
			continue
		}
		switch v := p.Content.(type) {
		case a2a.Text:
			b.WriteString(string(v))
		case a2a.Data:
			j, err := json.Marshal(v.Value)
			if err == nil {
				b.Write(j)
			}
		case a2a.URL:
			fmt.Fprintf(&b, "[file %s %s]", p.MediaType, string(v))
		case a2a.Raw:
			fmt.Fprintf(&b, "[file %s, %d bytes, not shown]", p.MediaType, len(v))
		}
	}
	return b.String()
}
