package web

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/lodeworks/lode/artifact"
	"github.com/lodeworks/lode/ledger"
	"github.com/lodeworks/lode/loop"
)

// stream turns one request's loop events into UI message stream parts and
// queues them, bounded, for the response writer. Emit is called by the
// Step's observer mailbox, one event at a time and in order; end is
// called after the Step has been flushed. So the translation state needs
// no lock; the queue has its own.
//
// A part that does not fit the queue waits for the writer: the observer's
// mailbox fills in turn, and the turn's stream waits on it. So a browser
// that reads slowly slows its turn instead of growing the server's memory;
// one that stops reading has its writes time out, and then the stream is
// abandoned and what is left of the turn runs without it.
type stream struct {
	mu       sync.Mutex
	room     sync.Cond // the writer took parts, or left
	queue    [][]byte
	parts    int  // parts queued or being written
	bytes    int  // their size
	ended    bool // end queued the last part
	gone     bool // the writer left: parts are dropped
	ready    chan struct{}
	maxParts int
	maxBytes int
	// onQueue and onWait, when set by a test, see what the queue holds
	// after each part is queued, and each send that waits, under its lock.
	onQueue func(parts, bytes int)
	onWait  func()

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

	// partial is the text the answer streamed, kept if it is stopped.
	partial *partialText
}

func newStream(maxParts, maxBytes int, messageID, threadID string) *stream {
	s := &stream{
		ready:    make(chan struct{}, 1),
		maxParts: maxParts,
		maxBytes: maxBytes,
		calls:    map[int]string{},
		started:  map[string]bool{},
		decided:  make(chan struct{}),
	}
	s.room.L = &s.mu
	s.send(map[string]any{"type": "start", "messageId": messageID, "messageMetadata": map[string]string{"threadId": threadID}})
	return s
}

// send queues one part.
func (s *stream) send(part any) {
	b, err := json.Marshal(part)
	if err != nil {
		b, _ = json.Marshal(map[string]string{"type": "error", "errorText": "web: a stream part could not be encoded: " + err.Error()})
	}
	// Sized exactly, so that the queue's count of bytes is what it holds.
	frame := make([]byte, 0, len("data: ")+len(b)+2)
	frame = append(append(append(frame, "data: "...), b...), '\n', '\n')
	s.sendRaw(frame)
}

// sendRaw queues frame, waiting while the queue is full; an empty queue
// takes a frame of any size. Once the writer has left, frames are dropped.
func (s *stream) sendRaw(frame []byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for !s.gone && s.parts > 0 && (s.parts >= s.maxParts || s.bytes+len(frame) > s.maxBytes) {
		if s.onWait != nil {
			s.onWait()
		}
		s.room.Wait()
	}
	if s.gone {
		return
	}
	s.queue = append(s.queue, frame)
	s.parts++
	s.bytes += len(frame)
	if s.onQueue != nil {
		s.onQueue(s.parts, s.bytes)
	}
	s.signal()
}

// signal wakes the writer; s.mu is held.
func (s *stream) signal() {
	select {
	case s.ready <- struct{}{}:
	default:
	}
}

// abandon drops what is queued and all later parts: the writer has left.
func (s *stream) abandon() {
	s.mu.Lock()
	s.gone = true
	s.queue = nil
	s.parts, s.bytes = 0, 0
	s.room.Broadcast()
	s.mu.Unlock()
}

// take returns the queued parts, which stay counted until done says they
// were written, and whether end has queued the last of them.
func (s *stream) take() (batch [][]byte, ended bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	batch, s.queue = s.queue, nil
	return batch, s.ended
}

// done gives back the room of a written batch.
func (s *stream) done(batch [][]byte) {
	n := 0
	for _, f := range batch {
		n += len(f)
	}
	s.mu.Lock()
	if !s.gone {
		s.parts -= len(batch)
		s.bytes -= n
	}
	s.room.Broadcast()
	s.mu.Unlock()
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
// was cancelled (cause is why), error otherwise; then [DONE], the last
// part of the queue.
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
		// A person reads one sentence; the chain is the detail, for who
		// asks (the page shows it behind a toggle).
		msg := plainError(err)
		s.send(map[string]any{"type": "data-error", "transient": true, "data": map[string]string{"message": msg, "detail": oneLine(err.Error())}})
		s.send(map[string]string{"type": "error", "errorText": msg})
	}
	s.sendRaw([]byte("data: [DONE]\n\n"))
	s.mu.Lock()
	s.ended = true
	s.signal()
	s.mu.Unlock()
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

// pump writes queued parts to w, flushing after each batch, until the
// stream ends (true) or the browser leaves (false): its request's context
// ends, or a write or flush does not complete within timeout, as when a
// browser stops reading. Then the stream is abandoned, so that the turn
// goes on without it. Between batches no deadline is set: a turn that
// waits on a tool is not a browser that stopped reading.
func (s *stream) pump(ctx context.Context, w http.ResponseWriter, timeout time.Duration) (err error) {
	defer func() {
		if err != nil {
			s.abandon()
		}
	}()
	rc := http.NewResponseController(w)
	if err := s.write(rc, w, nil, timeout); err != nil {
		return err
	}
	for {
		batch, ended := s.take()
		if len(batch) > 0 {
			if err := s.write(rc, w, batch, timeout); err != nil {
				return err
			}
			s.done(batch)
		}
		if ended {
			return nil
		}
		select {
		case <-s.ready:
		case <-ctx.Done():
			return context.Cause(ctx)
		}
	}
}

// write writes batch and flushes it, within timeout.
func (s *stream) write(rc *http.ResponseController, w http.ResponseWriter, batch [][]byte, timeout time.Duration) error {
	// A writer that cannot take a deadline (one wrapped without Unwrap)
	// is written to without one.
	if err := rc.SetWriteDeadline(time.Now().Add(timeout)); err != nil && !errors.Is(err, http.ErrNotSupported) {
		return err
	}
	for _, f := range batch {
		if _, err := w.Write(f); err != nil {
			return err
		}
	}
	if err := rc.Flush(); err != nil {
		return err
	}
	if err := rc.SetWriteDeadline(time.Time{}); err != nil && !errors.Is(err, http.ErrNotSupported) {
		return err
	}
	return nil
}
