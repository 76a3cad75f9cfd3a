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

	// log is every frame of the stream, from its start part (or, for a
	// continued message, from the parts that rebuild the message so far),
	// for a client that reattaches (GET /api/chat/{id}/stream). It holds
	// at most logMax bytes; past that it is dropped (logLost) and the
	// followers' streams end. logMore, made when a follower waits, is
	// closed at the next change.
	log      [][]byte
	logBytes int
	logMax   int
	logLost  bool
	logMore  chan struct{}
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
	open      map[string]bool // calls shown without a result yet, by ID
	tripped   bool            // a data-tripwire part was sent
	finish    string
	turnFrom  int             // where in the log the model turn under way begins
	denied    map[string]bool // calls denied by this stream's decisions
	used      uiUsage         // the message's usage, the prior message's included
	outside   uiUsage         // what of it this stream's UsageEvents counted
	msgID     string
	thread    string // the conversation's ID, which the client holds

	// asked are the calls a decide request answers, by ID, for the
	// arguments the decisions do not repeat; decided is closed once the
	// decisions are recorded.
	asked       map[string]artifact.Pending
	decided     chan struct{}
	decidedOnce sync.Once
}

// newStream starts the stream of message messageID. prior, when not nil,
// is that message as stored before this stream continues it: the log, not
// the response, begins with its parts, so that a client that reattaches
// rebuilds the whole message.
func newStream(maxParts, maxBytes, logMax int, messageID, threadID string, prior *uiMessage) *stream {
	s := &stream{
		ready:    make(chan struct{}, 1),
		maxParts: maxParts,
		maxBytes: maxBytes,
		logMax:   logMax,
		calls:    map[int]string{},
		started:  map[string]bool{},
		open:     map[string]bool{},
		denied:   map[string]bool{},
		decided:  make(chan struct{}),
		msgID:    messageID,
		thread:   threadID,
	}
	s.room.L = &s.mu
	s.send(startPart(messageID, threadID))
	if prior != nil {
		if u := usageOf(*prior); u != nil {
			s.used = *u
		}
		for _, c := range messageChunks(*prior) {
			s.mu.Lock()
			s.appendLog(frame(c))
			s.mu.Unlock()
		}
	}
	return s
}

func startPart(messageID, threadID string) map[string]any {
	return map[string]any{"type": "start", "messageId": messageID, "messageMetadata": map[string]string{"threadId": threadID}}
}

// frame encodes part as one Server-Sent Event.
func frame(part any) []byte {
	b, err := json.Marshal(part)
	if err != nil {
		b, _ = json.Marshal(map[string]string{"type": "error", "errorText": "web: a stream part could not be encoded: " + err.Error()})
	}
	// Sized exactly, so that the queue's count of bytes is what it holds.
	f := make([]byte, 0, len("data: ")+len(b)+2)
	return append(append(append(f, "data: "...), b...), '\n', '\n')
}

// appendLog adds f to the log; s.mu is held.
func (s *stream) appendLog(f []byte) {
	if s.logLost {
		return
	}
	if s.logBytes+len(f) > s.logMax {
		s.log, s.logBytes, s.logLost = nil, 0, true
	} else {
		s.log = append(s.log, f)
		s.logBytes += len(f)
	}
	if s.logMore != nil {
		close(s.logMore)
		s.logMore = nil
	}
}

// send queues one part.
func (s *stream) send(part any) { s.sendRaw(frame(part)) }

// sendRaw logs frame and queues it, waiting while the queue is full; an
// empty queue takes a frame of any size. Once the writer has left, frames
// are only logged.
func (s *stream) sendRaw(frame []byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.appendLog(frame)
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
	case loop.UsageEvent:
		if s.count(ev.Usage) {
			s.outside.add(ev.Usage)
		}
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
		s.sendRaw(deltaFrame("text-delta", "id", s.text, "delta", d.Content))
	case artifact.ReasoningDelta:
		s.closeText()
		if s.reasoning == "" {
			s.reasoning = s.nextID("reasoning")
			s.send(map[string]string{"type": "reasoning-start", "id": s.reasoning})
		}
		s.sendRaw(deltaFrame("reasoning-delta", "id", s.reasoning, "delta", d.Content))
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
			s.sendRaw(deltaFrame("tool-input-delta", "toolCallId", id, "inputTextDelta", d.Arguments))
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
			s.open[a.ID] = true
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
			s.count(a)
		case artifact.Finish:
			s.finish = a.Reason
		case artifact.Tripwire:
			// An input or output guard stopped the answer: this turn
			// holds no text, and the page withdraws what it was shown.
			s.tripwire(a)
		}
	}
	s.sawDelta = false
	s.mu.Lock()
	s.turnFrom = len(s.log)
	s.mu.Unlock()
	clear(s.calls)
	clear(s.started)
	if s.pending == 0 {
		s.endStep()
	}
}

// count adds u to the message's usage and, when it counted, sends the
// total as the message's metadata: a message-metadata part, which the
// SDK's client keeps in the message (a replay has it from the stored
// turns and keepOutside's metadata).
func (s *stream) count(u artifact.Usage) bool {
	if !s.used.add(u) {
		return false
	}
	t := s.used
	s.send(metadataPart(&t))
	return true
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
		switch x := a.(type) {
		case artifact.Pending:
			s.send(approvalRequest(x.ToolCallID, x.Reason))
			continue
		case artifact.Tripwire:
			// A call or result guard stopped the answer's calls; the
			// stopped call's error result came before it.
			s.tripwire(x)
			continue
		}
		r, ok := a.(artifact.ToolResult)
		if !ok {
			continue
		}
		delete(s.open, r.ToolCallID)
		if s.denied[r.ToolCallID] {
			// A denied call's result was streamed as tool-output-denied.
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

// decisions continues the paused message, whose step holds the decided
// calls already: a denied call's tool-output-denied is sent at once, an
// approved call's output when it has run, and an approval that edited the
// arguments first sends the call's new input. No step is opened: the
// SDK's client finds each call in the message wherever it is.
func (s *stream) decisions(ds []artifact.Decision) {
	for _, d := range ds {
		if !d.Approved {
			s.denied[d.ToolCallID] = true
			s.send(map[string]string{"type": "tool-output-denied", "toolCallId": d.ToolCallID})
			continue
		}
		s.pending++
		s.open[d.ToolCallID] = true
		if d.Arguments != "" && d.Arguments != s.asked[d.ToolCallID].Arguments {
			input, ok := toolInput(d.Arguments)
			if !ok {
				input, _ = json.Marshal(d.Arguments)
			}
			s.send(map[string]any{"type": "tool-input-available", "toolCallId": d.ToolCallID, "toolName": d.Name, "input": input})
		}
	}
}

// approvalPart is the data-approval part listing calls that wait for a
// decision, for the page: streamed as a transient part, and ending the
// last message of a replay while the calls wait.
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
// finish when the run paused for approval, finish with finishReason
// content-filter when a guard stopped the turn (its data-tripwire part
// was sent with the turn that stored it), abort when the turn was
// cancelled (cause is why), error otherwise; then [DONE], the last part
// of the queue.
func (s *stream) end(err, cause error) {
	s.closeText()
	s.closeReasoning()
	var pe *loop.PendingError
	var te *loop.TripError
	switch {
	case errors.As(err, &te) && cause == nil:
		// A trip is an outcome, not a failure: the thread waits for a
		// new message. A trip the loop only read back (the thread ended
		// with one) stored nothing new, and is sent here.
		s.tripwire(te.Tripwire())
		s.pending = 0
		s.endStep()
		s.send(map[string]string{"type": "finish", "finishReason": "content-filter"})
	case errors.As(err, &pe) && cause == nil:
		// A pause is a normal end: the calls wait for a person.
		s.pending = 0
		s.endStep()
		// Transient: the SDK's client hands it to onData and keeps the
		// tool parts' own approval-requested state in the message.
		// Fields in the order a map would have had them before the part
		// was transient, with transient last, for readers that match the
		// text (x/cli's tests do).
		ap := approvalPart(s.thread, pe.Calls)
		s.send(struct {
			Data      any    `json:"data"`
			ID        string `json:"id"`
			Type      string `json:"type"`
			Transient bool   `json:"transient"`
		}{ap["data"], ap["id"].(string), ap["type"].(string), true})
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
	s.sendRaw([]byte(doneFrame))
	s.mu.Lock()
	s.ended = true
	s.signal()
	s.mu.Unlock()
}

const doneFrame = "data: [DONE]\n\n"

// errLogLost ends a follower's stream whose turn outgrew the log.
var errLogLost = errors.New("web: the turn's stream outgrew what is kept for clients that reattach")

// partial is the text the model turn under way has streamed, read back
// from the log: "" when the log was dropped. Called once the observer is
// flushed.
func (s *stream) partial() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.logLost {
		return ""
	}
	var b strings.Builder
	for _, f := range s.log[min(s.turnFrom, len(s.log)):] {
		var p struct{ Type, Delta string }
		if json.Unmarshal(f[len("data: "):], &p) == nil && p.Type == "text-delta" {
			b.WriteString(p.Delta)
		}
	}
	return b.String()
}

// follow writes the log to w from its first frame, and then each frame as
// it is logged, until the stream's last frame ([DONE]) is written, the
// client leaves, or the log is dropped. Each write, flush included, must
// finish within timeout. A follower does not slow the turn: it reads what
// the log holds anyway.
func (s *stream) follow(ctx context.Context, w http.ResponseWriter, timeout time.Duration) error {
	rc := http.NewResponseController(w)
	next := 0
	for {
		s.mu.Lock()
		if s.logMore == nil {
			s.logMore = make(chan struct{})
		}
		lost, more := s.logLost, s.logMore
		var batch [][]byte
		if !lost {
			batch = s.log[next:len(s.log):len(s.log)]
		}
		s.mu.Unlock()
		if lost {
			return errLogLost
		}
		if err := writeBatch(rc, w, batch, timeout); err != nil {
			return err
		}
		next += len(batch)
		if len(batch) > 0 && string(batch[len(batch)-1]) == doneFrame {
			return nil
		}
		select {
		case <-more:
		case <-ctx.Done():
			return context.Cause(ctx)
		}
	}
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
	if err := writeBatch(rc, w, nil, timeout); err != nil {
		return err
	}
	for {
		batch, ended := s.take()
		if len(batch) > 0 {
			if err := writeBatch(rc, w, batch, timeout); err != nil {
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
func writeBatch(rc *http.ResponseController, w http.ResponseWriter, batch [][]byte, timeout time.Duration) error {
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
