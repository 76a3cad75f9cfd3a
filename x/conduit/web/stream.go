package web

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"sync"

	"github.com/lodeworks/lode/artifact"
	"github.com/lodeworks/lode/ledger"
	"github.com/lodeworks/lode/loop"
)

// stream turns one request's loop events into UI message stream parts and
// queues them, bounded, for the response writer. Emit is called by the
// Step's observer mailbox, one event at a time and in order; end is
// called after the Step has been flushed. So the translation state needs
// no lock.
type stream struct {
	frames chan []byte
	lost   chan struct{} // closed when the writer fell too far behind
	once   sync.Once

	seq       int
	inStep    bool
	text      string // ID of the open text part, if any
	reasoning string // ID of the open reasoning part, if any
	sawDelta  bool
	calls     map[int]string  // tool call delta index -> call ID started
	started   map[string]bool // call IDs given a tool-input-start
	pending   int             // tool calls of the step waiting for results
	finish    string

	// asked are the calls a decide request answers, by ID, for the
	// arguments the decisions do not repeat; decided is closed once the
	// decisions are recorded.
	asked       map[string]artifact.Pending
	decided     chan struct{}
	decidedOnce sync.Once
}

func newStream(buffer int, messageID, threadID string) *stream {
	s := &stream{
		frames:  make(chan []byte, buffer),
		lost:    make(chan struct{}),
		calls:   map[int]string{},
		started: map[string]bool{},
		decided: make(chan struct{}),
	}
	s.send(map[string]any{"type": "start", "messageId": messageID, "messageMetadata": map[string]string{"threadId": threadID}})
	return s
}

// send queues one part; when the queue is full the writer has fallen too
// far behind and loses the stream.
func (s *stream) send(part any) {
	b, err := json.Marshal(part)
	if err != nil {
		b, _ = json.Marshal(map[string]string{"type": "error", "errorText": "web: a stream part could not be encoded: " + err.Error()})
	}
	s.sendRaw(append(append([]byte("data: "), b...), '\n', '\n'))
}

func (s *stream) sendRaw(frame []byte) {
	select {
	case <-s.lost:
		return
	default:
	}
	select {
	case s.frames <- frame:
	default:
		s.once.Do(func() { close(s.lost) })
	}
}

func (s *stream) nextID(kind string) string {
	s.seq++
	return kind + "-" + strconv.Itoa(s.seq)
}

func (s *stream) startStep() {
	if !s.inStep {
		s.inStep = true
		s.send(map[string]string{"type": "start-step"})
	}
}

func (s *stream) endStep() {
	s.closeText()
	s.closeReasoning()
	if s.inStep {
		s.inStep = false
		s.send(map[string]string{"type": "finish-step"})
	}
}

func (s *stream) closeText() {
	if s.text != "" {
		s.send(map[string]string{"type": "text-end", "id": s.text})
		s.text = ""
	}
}

func (s *stream) closeReasoning() {
	if s.reasoning != "" {
		s.send(map[string]string{"type": "reasoning-end", "id": s.reasoning})
		s.reasoning = ""
	}
}

// DataEvent is an event the page shows while a turn runs: a tool's
// progress, a server's log line. An observer has no other way to know how
// to show an event of a package it does not import; one that implements
// DataEvent is sent as a transient "data-<name>" stream part carrying
// data, with the ID of the tool call it came from as the part's id when
// it was posted from that call's handler (loop.Notify). mcp.Notification
// implements it with the name "notification".
type DataEvent interface {
	loop.Event
	UIData() (name string, data any)
}

// Emit translates one loop event.
func (s *stream) Emit(ctx context.Context, ev loop.Event) {
	switch ev := ev.(type) {
	case DataEvent:
		s.data(ctx, ev)
	case loop.DeltaEvent:
		s.startStep()
		s.sawDelta = true
		s.delta(ev.Delta)
	case loop.DecidedEvent:
		s.decisions(ev.Decisions)
		s.decidedOnce.Do(func() { close(s.decided) })
	case loop.TurnCompleteEvent:
		switch ev.Role {
		case ledger.RoleAssistant:
			s.answer(ev.Artifacts)
		case ledger.RoleTool:
			s.results(ev.Artifacts)
		}
	}
}

// data sends ev as a transient data part; id names the tool call whose
// handler posted it, when there is one.
func (s *stream) data(ctx context.Context, ev DataEvent) {
	name, data := ev.UIData()
	if name == "" {
		return
	}
	part := map[string]any{"type": "data-" + name, "data": data, "transient": true}
	if t, ok := loop.CurrentTurn(ctx); ok {
		if i, ok := loop.ArtifactIndex(ctx); ok && i < len(t.Answer) {
			if c, ok := t.Answer[i].(artifact.ToolCall); ok {
				part["id"] = c.ID
			}
		}
	}
	s.send(part)
}

func (s *stream) delta(d artifact.Delta) {
	switch d := d.(type) {
	case artifact.TextDelta:
		s.closeReasoning()
		if s.text == "" {
			s.text = s.nextID("text")
			s.send(map[string]string{"type": "text-start", "id": s.text})
		}
		s.send(map[string]string{"type": "text-delta", "id": s.text, "delta": d.Content})
	case artifact.ReasoningDelta:
		s.closeText()
		if s.reasoning == "" {
			s.reasoning = s.nextID("reasoning")
			s.send(map[string]string{"type": "reasoning-start", "id": s.reasoning})
		}
		s.send(map[string]string{"type": "reasoning-delta", "id": s.reasoning, "delta": d.Content})
	case artifact.ToolCallDelta:
		s.closeText()
		s.closeReasoning()
		id := s.calls[d.Index]
		if id == "" && d.ID != "" && d.Name != "" {
			id = d.ID
			s.calls[d.Index] = id
			s.started[id] = true
			s.send(map[string]string{"type": "tool-input-start", "toolCallId": id, "toolName": d.Name})
		}
		if id != "" && d.Arguments != "" {
			s.send(map[string]string{"type": "tool-input-delta", "toolCallId": id, "inputTextDelta": d.Arguments})
		}
	}
}

// answer closes the streamed parts of an assistant turn and sends what
// only the whole artifacts carry: tool inputs, usage, and the text of a
// provider that did not stream.
func (s *stream) answer(arts []artifact.Artifact) {
	s.startStep()
	s.closeText()
	s.closeReasoning()
	for _, a := range arts {
		switch a := a.(type) {
		case artifact.Text:
			if !s.sawDelta && a.Content != "" {
				id := s.nextID("text")
				s.send(map[string]string{"type": "text-start", "id": id})
				s.send(map[string]string{"type": "text-delta", "id": id, "delta": a.Content})
				s.send(map[string]string{"type": "text-end", "id": id})
			}
		case artifact.Reasoning:
			if !s.sawDelta && a.Content != "" {
				id := s.nextID("reasoning")
				s.send(map[string]string{"type": "reasoning-start", "id": id})
				s.send(map[string]string{"type": "reasoning-delta", "id": id, "delta": a.Content})
				s.send(map[string]string{"type": "reasoning-end", "id": id})
			}
		case artifact.ToolCall:
			s.pending++
			input, ok := toolInput(a.Arguments)
			if ok {
				s.send(map[string]any{"type": "tool-input-available", "toolCallId": a.ID, "toolName": a.Name, "input": input})
			} else {
				s.send(map[string]any{"type": "tool-input-error", "toolCallId": a.ID, "toolName": a.Name, "input": a.Arguments,
					"errorText": "the model's arguments are not valid JSON"})
			}
		case artifact.Usage:
			s.send(map[string]any{"type": "data-usage", "transient": true, "data": map[string]int64{
				"inputTokens": a.InputTokens, "outputTokens": a.OutputTokens,
				"cachedInputTokens": a.CachedInputTokens, "reasoningTokens": a.ReasoningTokens,
			}})
		case artifact.Finish:
			s.finish = a.Reason
		}
	}
	s.sawDelta = false
	clear(s.calls)
	clear(s.started)
	if s.pending == 0 {
		s.endStep()
	}
}

// toolInput is the arguments as JSON when they are; empty arguments are
// an empty object, as models send for tools without parameters.
func toolInput(args string) (json.RawMessage, bool) {
	if strings.TrimSpace(args) == "" {
		return json.RawMessage("{}"), true
	}
	if !json.Valid([]byte(args)) {
		return nil, false
	}
	return json.RawMessage(args), true
}

func (s *stream) results(arts []artifact.Artifact) {
	for _, a := range arts {
		r, ok := a.(artifact.ToolResult)
		if !ok {
			continue
		}
		if r.IsError {
			s.send(map[string]string{"type": "tool-output-error", "toolCallId": r.ToolCallID, "errorText": r.Content})
		} else {
			s.send(map[string]any{"type": "tool-output-available", "toolCallId": r.ToolCallID, "output": r.Content})
		}
		s.pending--
	}
	if s.pending <= 0 {
		s.pending = 0
		s.endStep()
	}
}

// decisions opens a step with the decided calls, so that the stream of a
// decide request is a whole message: each call's input, then its output as
// the approved ones finish. A denied call's error output is sent at once.
func (s *stream) decisions(ds []artifact.Decision) {
	s.startStep()
	for _, d := range ds {
		args := d.Arguments
		if args == "" {
			args = s.asked[d.ToolCallID].Arguments
		}
		input, ok := toolInput(args)
		if !ok {
			input, _ = json.Marshal(args)
		}
		s.send(map[string]any{"type": "tool-input-available", "toolCallId": d.ToolCallID, "toolName": d.Name, "input": input})
		if d.Approved {
			s.pending++
			continue
		}
		text := "denied"
		if d.Reason != "" {
			text += ": " + d.Reason
		}
		s.send(map[string]string{"type": "tool-output-error", "toolCallId": d.ToolCallID, "errorText": text})
	}
	if s.pending == 0 {
		s.endStep()
	}
}

// approvalPart is the data-approval part listing calls that wait for a
// decision. It is not transient: it belongs to the message, as the pending
// calls belong to the thread, so useChat keeps it and a replay repeats it.
func approvalPart(threadID string, calls []artifact.Pending) map[string]any {
	type call struct {
		ToolCallID string `json:"toolCallId"`
		ToolName   string `json:"toolName"`
		Input      any    `json:"input"`
		Reason     string `json:"reason,omitempty"`
	}
	cs := make([]call, 0, len(calls))
	for _, p := range calls {
		c := call{ToolCallID: p.ToolCallID, ToolName: p.Name, Input: p.Arguments, Reason: p.Reason}
		if in, ok := toolInput(p.Arguments); ok {
			c.Input = in
		}
		cs = append(cs, c)
	}
	return map[string]any{"type": "data-approval", "id": "approval", "data": map[string]any{"threadId": threadID, "calls": cs}}
}

// end sends the last parts: finish when err is nil, data-approval and
// finish when the run paused for approval, abort when the turn
// was cancelled (cause is why), error otherwise; then [DONE], and closes
// the queue.
func (s *stream) end(err, cause error) {
	s.closeText()
	s.closeReasoning()
	var pe *loop.PendingError
	switch {
	case errors.As(err, &pe) && cause == nil:
		// A pause is a normal end: the calls wait for a person.
		s.pending = 0
		s.endStep()
		s.send(approvalPart(pe.Thread, pe.Calls))
		s.send(map[string]string{"type": "finish", "finishReason": finishReason(s.finish)})
	case err == nil:
		s.endStep()
		s.send(map[string]string{"type": "finish", "finishReason": finishReason(s.finish)})
	case cause != nil || errors.Is(err, context.Canceled):
		reason := "cancelled"
		if cause != nil {
			reason = strings.TrimPrefix(cause.Error(), "web: ")
		}
		s.send(map[string]string{"type": "abort", "reason": reason})
	default:
		s.send(map[string]string{"type": "error", "errorText": oneLine(err.Error())})
	}
	s.sendRaw([]byte("data: [DONE]\n\n"))
	close(s.frames)
}

func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}

// finishReason maps a provider's finish reason to the AI SDK's.
func finishReason(r string) string {
	switch r {
	case "", "stop", "end_turn":
		return "stop"
	case "tool_calls", "tool_use":
		return "tool-calls"
	case "length", "max_tokens":
		return "length"
	case "content_filter":
		return "content-filter"
	}
	return "other"
}

// pump writes queued parts to w, flushing each, until the stream ends
// (true) or the browser leaves or falls behind (false).
func (s *stream) pump(ctx context.Context, w http.ResponseWriter) bool {
	rc := http.NewResponseController(w)
	_ = rc.Flush()
	for {
		select {
		case f, ok := <-s.frames:
			if !ok {
				return s.finished(w, rc)
			}
			if _, err := w.Write(f); err != nil {
				return false
			}
			// Write what is already queued before flushing once.
			for more := true; more; {
				select {
				case f, ok := <-s.frames:
					if !ok {
						return s.finished(w, rc)
					}
					if _, err := w.Write(f); err != nil {
						return false
					}
				default:
					more = false
				}
			}
			if err := rc.Flush(); err != nil {
				return false
			}
		case <-s.lost:
			return s.fellBehind(w, rc)
		case <-ctx.Done():
			return false
		}
	}
}

// finished is the end of the queue: a whole stream, unless parts were
// dropped on the way.
func (s *stream) finished(w http.ResponseWriter, rc *http.ResponseController) bool {
	select {
	case <-s.lost:
		return s.fellBehind(w, rc)
	default:
	}
	_ = rc.Flush()
	return true
}

func (s *stream) fellBehind(w http.ResponseWriter, rc *http.ResponseController) bool {
	_, _ = w.Write([]byte(`data: {"type":"error","errorText":"web: this browser fell behind the stream; reload the thread to see the rest"}` + "\n\n"))
	_ = rc.Flush()
	return false
}
