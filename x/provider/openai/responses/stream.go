package responses

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	goopenai "github.com/sashabaranov/go-openai"

	"github.com/lodeworks/lode/artifact"
)

// The wire as this adapter reads it: one event type with the members the
// events it maps carry, decoded here rather than into go-openai's types,
// which leave out encrypted_content and decode each event twice.
type (
	wireEvent struct {
		Type         string          `json:"type"`
		Response     *wireResponse   `json:"response"`
		Item         json.RawMessage `json:"item"`
		OutputIndex  *int            `json:"output_index"`
		SummaryIndex int             `json:"summary_index"`
		Delta        string          `json:"delta"`
		Arguments    *string         `json:"arguments"`
		// An error event's members, at the top or, as OpenAI now sends
		// them, in an error object.
		Code    json.RawMessage `json:"code"`
		Message string          `json:"message"`
		Param   json.RawMessage `json:"param"`
		Error   *struct {
			Type    string          `json:"type"`
			Code    json.RawMessage `json:"code"`
			Message string          `json:"message"`
			Param   json.RawMessage `json:"param"`
		} `json:"error"`
	}
	wireResponse struct {
		ID                string                   `json:"id"`
		Model             string                   `json:"model"`
		Status            string                   `json:"status"`
		Error             *wireError               `json:"error"`
		IncompleteDetails *struct{ Reason string } `json:"incomplete_details"`
		Usage             *wireUsage               `json:"usage"`
		Output            []json.RawMessage        `json:"output"`
	}
	wireError struct {
		Code    json.RawMessage `json:"code"`
		Message string          `json:"message"`
	}
	wireUsage struct {
		InputTokens        int64 `json:"input_tokens"`
		OutputTokens       int64 `json:"output_tokens"`
		InputTokensDetails *struct {
			CachedTokens int64 `json:"cached_tokens"`
		} `json:"input_tokens_details"`
		OutputTokensDetails *struct {
			ReasoningTokens int64 `json:"reasoning_tokens"`
		} `json:"output_tokens_details"`
	}
	wireItem struct {
		ID      string     `json:"id"`
		Type    string     `json:"type"`
		Content []wirePart `json:"content"`
		CallID  string     `json:"call_id"`
		Name    string     `json:"name"`
		// A string for a function call, an object for a tool search.
		Arguments json.RawMessage `json:"arguments"`
		Summary   []wirePart      `json:"summary"`
		Encrypted *string         `json:"encrypted_content"`
		Execution string          `json:"execution"`
		Tools     json.RawMessage `json:"tools"`
	}
	wirePart struct {
		Type    string `json:"type"`
		Text    string `json:"text"`
		Refusal string `json:"refusal"`
	}
)

func (p *Provider) runStream(ctx context.Context, client *goopenai.Client, ct *callTransport,
	rreq goopenai.CreateResponseRequest, res *result, yield func(artifact.Artifact, error) bool) error {
	stream, err := client.CreateResponseStream(ctx, rreq)
	if err != nil {
		return p.callError(ctx, ct, err)
	}
	defer stream.Close()
	asm := assembler{chain: p.chain}
	defer asm.report(res)
	for !asm.ended {
		if ctx.Err() != nil {
			return ctxError(ctx)
		}
		raw, err := stream.RecvRaw()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return p.streamError(ctx, ct, err)
		}
		if len(bytes.TrimSpace(raw)) == 0 {
			continue
		}
		asm.events++
		var ev wireEvent
		if err := json.Unmarshal(raw, &ev); err != nil {
			return respErr(ErrMalformed, fmt.Sprintf("event %d is not JSON", asm.events), raw, err)
		}
		if err := asm.add(&ev, yield); err != nil {
			return err
		}
	}
	if ctx.Err() != nil {
		return ctxError(ctx)
	}
	if !asm.ended {
		detail := "the stream ended before response.completed"
		if asm.events == 0 && !strings.HasPrefix(ct.contentType, "text/event-stream") {
			detail = fmt.Sprintf("the server answered with %q and no stream events; if it cannot stream, use WithStreaming(false)", ct.contentType)
		}
		return respErr(ErrIncomplete, detail, nil, nil)
	}
	return asm.end(yield)
}

func (p *Provider) streamError(ctx context.Context, ct *callTransport, err error) error {
	if ctx.Err() != nil {
		return ctxError(ctx)
	}
	var ae *goopenai.APIError
	if errors.As(err, &ae) {
		return p.callError(ctx, ct, err)
	}
	if errors.Is(err, errLineTooLong) {
		return respErr(ErrMalformed, fmt.Sprintf("a line of the stream is longer than %d bytes", p.maxLine), nil, err)
	}
	if errors.Is(err, goopenai.ErrTooManyEmptyStreamMessages) {
		return respErr(ErrMalformed, "too many lines that are not events", nil, err)
	}
	return respErr(ErrIncomplete, "the connection broke mid-stream", nil, err)
}

func (p *Provider) runWhole(ctx context.Context, client *goopenai.Client, ct *callTransport,
	rreq goopenai.CreateResponseRequest, res *result, yield func(artifact.Artifact, error) bool) error {
	_, err := client.CreateResponse(ctx, rreq)
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	switch {
	case err == nil:
	case ctx.Err() == nil && ct.streaming && errors.As(err, &te):
		// A member go-openai types otherwise than the server sent it;
		// this package reads the body itself below.
	case ctx.Err() == nil && ct.streaming && errors.As(err, &se):
		return respErr(ErrMalformed, "the body is not a response object", ct.whole.Bytes(), err)
	default:
		return p.callError(ctx, ct, err)
	}
	var r wireResponse
	if err := json.Unmarshal(ct.whole.Bytes(), &r); err != nil {
		return respErr(ErrMalformed, "the body is not a response object", ct.whole.Bytes(), err)
	}
	asm := assembler{chain: p.chain}
	defer asm.report(res)
	for i, raw := range r.Output {
		if err := asm.whole(i, raw); err != nil {
			return err
		}
	}
	if err := asm.finish(&r); err != nil {
		return err
	}
	return asm.end(yield)
}

// item is one output item being assembled.
type item struct {
	typ      string
	raw      json.RawMessage // as output_item.done sent it
	text     strings.Builder // message text, or reasoning summary
	parts    int             // summary parts begun
	args     strings.Builder
	id, name string // function call: call_id, name
	sig      string
	call     int // the index of a function call among the answer's calls
	refusal  bool
	done     bool
}

// assembler builds an answer's artifacts from the Responses API's stream
// events, yielding deltas as they come.
type assembler struct {
	chain     bool
	events    int
	items     []*item // by output_index
	calls     int
	ended     bool
	id, model string
	status    string
	reason    string // incomplete_details.reason
	usage     *artifact.Usage
}

func (a *assembler) report(res *result) {
	res.Model, res.ID, res.Usage = a.model, a.id, a.usage
	if a.ended {
		res.Finish = a.finishReason()
	}
}

// at is the item an event addresses by output_index.
func (a *assembler) at(ev *wireEvent) (*item, error) {
	if ev.OutputIndex == nil {
		return nil, respErr(ErrMalformed, fmt.Sprintf("event %d (%s) has no output_index", a.events, ev.Type), nil, nil)
	}
	i := *ev.OutputIndex
	if i < 0 || i >= len(a.items) || a.items[i] == nil {
		return nil, respErr(ErrMalformed, fmt.Sprintf("event %d (%s) addresses output item %d, which was not added", a.events, ev.Type, i), nil, nil)
	}
	it := a.items[i]
	if it.done {
		return nil, respErr(ErrMalformed, fmt.Sprintf("event %d (%s) addresses output item %d, which is done", a.events, ev.Type, i), nil, nil)
	}
	return it, nil
}

// deltaTo is the item a delta event addresses, checked to be of type typ.
func (a *assembler) deltaTo(ev *wireEvent, typ string) (*item, error) {
	it, err := a.at(ev)
	if err != nil {
		return nil, err
	}
	if it.typ != typ {
		return nil, respErr(ErrMalformed, fmt.Sprintf("event %d sends a %s to output item %d, a %s", a.events, ev.Type, *ev.OutputIndex, it.typ), nil, nil)
	}
	return it, nil
}

// add takes one event. It returns errStopped when the consumer stops.
func (a *assembler) add(ev *wireEvent, yield func(artifact.Artifact, error) bool) error {
	switch ev.Type {
	case "response.created", "response.in_progress", "response.queued":
		if r := ev.Response; r != nil {
			a.id, a.model = r.ID, r.Model
		}
	case "response.output_item.added":
		if ev.OutputIndex == nil || *ev.OutputIndex != len(a.items) {
			return respErr(ErrMalformed, fmt.Sprintf("event %d adds output item %s; item %d was expected", a.events, index(ev.OutputIndex), len(a.items)), nil, nil)
		}
		var w wireItem
		if err := json.Unmarshal(ev.Item, &w); err != nil {
			return respErr(ErrMalformed, fmt.Sprintf("event %d adds an item that is not an object", a.events), ev.Item, err)
		}
		it := a.open(w.Type)
		if w.Type == "function_call" {
			it.id, it.name = w.CallID, w.Name
			if !yield(artifact.ToolCallDelta{Index: it.call, ID: it.id, Name: it.name}, nil) {
				return errStopped
			}
		}
	case "response.output_text.delta", "response.refusal.delta":
		it, err := a.deltaTo(ev, "message")
		if err != nil {
			return err
		}
		it.refusal = it.refusal || ev.Type == "response.refusal.delta"
		if ev.Delta != "" {
			it.text.WriteString(ev.Delta)
			if !yield(artifact.TextDelta{Content: ev.Delta}, nil) {
				return errStopped
			}
		}
	case "response.function_call_arguments.delta":
		it, err := a.deltaTo(ev, "function_call")
		if err != nil {
			return err
		}
		if ev.Delta != "" {
			it.args.WriteString(ev.Delta)
			if !yield(artifact.ToolCallDelta{Index: it.call, Arguments: ev.Delta}, nil) {
				return errStopped
			}
		}
	case "response.function_call_arguments.done":
		it, err := a.deltaTo(ev, "function_call")
		if err != nil {
			return err
		}
		if ev.Arguments != nil {
			it.args.Reset()
			it.args.WriteString(*ev.Arguments)
		}
	case "response.reasoning_summary_part.added":
		it, err := a.deltaTo(ev, "reasoning")
		if err != nil {
			return err
		}
		if err := a.summaryPart(it, ev, yield); err != nil {
			return err
		}
	case "response.reasoning_summary_text.delta", "response.reasoning_text.delta":
		it, err := a.deltaTo(ev, "reasoning")
		if err != nil {
			return err
		}
		if ev.Type == "response.reasoning_summary_text.delta" && ev.SummaryIndex >= it.parts {
			// A server that sends no part.added begins the part here.
			if err := a.summaryPart(it, ev, yield); err != nil {
				return err
			}
		}
		if ev.Delta != "" {
			it.text.WriteString(ev.Delta)
			if !yield(artifact.ReasoningDelta{Content: ev.Delta}, nil) {
				return errStopped
			}
		}
	case "response.output_item.done":
		it, err := a.at(ev)
		if err != nil {
			return err
		}
		if err := a.done(it, ev.Item); err != nil {
			return err
		}
	case "response.completed", "response.incomplete", "response.failed":
		if ev.Response == nil {
			return respErr(ErrMalformed, fmt.Sprintf("event %d (%s) has no response", a.events, ev.Type), nil, nil)
		}
		return a.finish(ev.Response)
	case "error":
		e := &APIError{Code: jsonText(ev.Code), Param: jsonText(ev.Param), Message: ev.Message, ResponseID: a.id}
		if x := ev.Error; x != nil {
			e.Type = x.Type
			e.Code = cmp.Or(e.Code, jsonText(x.Code))
			e.Param = cmp.Or(e.Param, jsonText(x.Param))
			e.Message = cmp.Or(e.Message, x.Message)
		}
		if e.Code == "" && e.Message == "" && e.Type == "" {
			return respErr(ErrMalformed, fmt.Sprintf("event %d is an error event without an error", a.events), nil, nil)
		}
		e.Hint = hintFor(e)
		return e
	}
	// Other events (content parts, annotations, server-side tools,
	// *.done events whose whole value output_item.done repeats) carry
	// nothing this adapter keeps.
	return nil
}

// summaryPart begins summary part ev.SummaryIndex; parts are joined by a
// blank line, streamed as a delta of its own.
func (a *assembler) summaryPart(it *item, ev *wireEvent, yield func(artifact.Artifact, error) bool) error {
	if ev.SummaryIndex != it.parts {
		return respErr(ErrMalformed, fmt.Sprintf("event %d begins summary part %d of output item %d; part %d was expected", a.events, ev.SummaryIndex, *ev.OutputIndex, it.parts), nil, nil)
	}
	it.parts++
	if it.parts > 1 && it.text.Len() > 0 {
		it.text.WriteString(summarySep)
		if !yield(artifact.ReasoningDelta{Content: summarySep}, nil) {
			return errStopped
		}
	}
	return nil
}

// summarySep joins the parts of a reasoning summary.
const summarySep = "\n\n"

func index(p *int) string {
	if p == nil {
		return "without an index"
	}
	return fmt.Sprint(*p)
}

func (a *assembler) open(typ string) *item {
	it := &item{typ: typ}
	if typ == "function_call" {
		it.call = a.calls
		a.calls++
	}
	a.items = append(a.items, it)
	return it
}

// whole takes output item i of a whole response.
func (a *assembler) whole(i int, raw json.RawMessage) error {
	var w wireItem
	if err := json.Unmarshal(raw, &w); err != nil {
		return respErr(ErrMalformed, fmt.Sprintf("output item %d is not an object", i), raw, err)
	}
	return a.done(a.open(w.Type), raw)
}

// done takes an item whole, as output_item.done (or a whole response) has
// it: what it says wins over the deltas, which are already yielded.
func (a *assembler) done(it *item, raw json.RawMessage) error {
	var w wireItem
	if err := json.Unmarshal(raw, &w); err != nil {
		return respErr(ErrMalformed, fmt.Sprintf("event %d finishes an item that is not an object", a.events), raw, err)
	}
	if w.Type != it.typ {
		return respErr(ErrMalformed, fmt.Sprintf("event %d finishes a %s item that was added as a %s", a.events, w.Type, it.typ), raw, nil)
	}
	it.done = true
	switch w.Type {
	case "message":
		var b strings.Builder
		for _, c := range w.Content {
			switch c.Type {
			case "output_text":
				b.WriteString(c.Text)
			case "refusal":
				b.WriteString(c.Refusal)
				it.refusal = true
			}
		}
		if b.Len() > 0 || len(w.Content) > 0 {
			it.text.Reset()
			it.text.WriteString(b.String())
		}
	case "function_call":
		if w.CallID != "" {
			it.id = w.CallID
		}
		if w.Name != "" {
			it.name = w.Name
		}
		var args string
		if len(w.Arguments) > 0 && string(w.Arguments) != "null" {
			if err := json.Unmarshal(w.Arguments, &args); err != nil {
				return respErr(ErrMalformed, fmt.Sprintf("%s finishes a function call whose arguments are not a string", a.where()), raw, err)
			}
		}
		if args != "" || it.args.Len() == 0 {
			it.args.Reset()
			it.args.WriteString(args)
		}
	case TypeToolSearchCall, TypeToolSearchOutput:
		if err := a.checkSearch(&w, raw); err != nil {
			return err
		}
		it.raw = append(json.RawMessage(nil), raw...)
	case "reasoning":
		it.raw = append(json.RawMessage(nil), raw...)
		if w.Encrypted != nil {
			it.sig = *w.Encrypted
		}
		texts := make([]string, 0, len(w.Summary))
		for _, s := range w.Summary {
			if s.Text != "" {
				texts = append(texts, s.Text)
			}
		}
		for _, c := range w.Content {
			if c.Text != "" && len(w.Summary) == 0 {
				texts = append(texts, c.Text)
			}
		}
		if len(texts) > 0 {
			it.text.Reset()
			it.text.WriteString(strings.Join(texts, summarySep))
		}
	}
	return nil
}

// checkSearch refuses a tool search item this adapter cannot send back as
// it came: one the client would have to run (it offers only the hosted
// search), or an output whose tools are not a list of tool objects.
func (a *assembler) checkSearch(w *wireItem, raw json.RawMessage) error {
	switch w.Execution {
	case "", "server":
	default:
		return respErr(ErrMalformed, fmt.Sprintf("%s sends a %s with execution %q; this adapter offers only the search the server runs", a.where(), w.Type, w.Execution), raw, nil)
	}
	if w.Type != TypeToolSearchOutput {
		return nil
	}
	var tools []struct {
		Type string `json:"type"`
	}
	if len(w.Tools) == 0 || w.Tools[0] != '[' {
		return respErr(ErrMalformed, fmt.Sprintf("%s sends a %s without a list of tools", a.where(), w.Type), raw, nil)
	}
	if err := json.Unmarshal(w.Tools, &tools); err != nil {
		return respErr(ErrMalformed, fmt.Sprintf("%s sends a %s whose tools are not objects", a.where(), w.Type), raw, err)
	}
	for j, t := range tools {
		if t.Type == "" {
			return respErr(ErrMalformed, fmt.Sprintf("%s sends a %s whose tool %d has no type", a.where(), w.Type, j), raw, nil)
		}
	}
	return nil
}

// where names what sent an item: a stream's event, or the whole response.
func (a *assembler) where() string {
	if a.events == 0 {
		return "the response"
	}
	return fmt.Sprintf("event %d", a.events)
}

// finish takes the response a terminal event (or a whole answer) carries.
func (a *assembler) finish(r *wireResponse) error {
	if r.ID != "" {
		a.id = r.ID
	}
	if r.Model != "" {
		a.model = r.Model
	}
	if u := r.Usage; u != nil {
		a.usage = &artifact.Usage{InputTokens: u.InputTokens, OutputTokens: u.OutputTokens}
		if d := u.InputTokensDetails; d != nil {
			a.usage.CachedInputTokens = d.CachedTokens
		}
		if d := u.OutputTokensDetails; d != nil {
			a.usage.ReasoningTokens = d.ReasoningTokens
		}
	}
	a.status = r.Status
	if r.IncompleteDetails != nil {
		a.reason = r.IncompleteDetails.Reason
	}
	switch r.Status {
	case "failed":
		e := &APIError{ResponseID: a.id, Message: "the response failed"}
		if r.Error != nil {
			e.Code, e.Message = jsonText(r.Error.Code), r.Error.Message
		}
		e.Hint = hintFor(e)
		return e
	case "completed", "incomplete":
	case "":
		return respErr(ErrIncomplete, "the response has no status", nil, nil)
	default:
		// queued, in_progress, cancelled: nothing final.
		return respErr(ErrIncomplete, fmt.Sprintf("the response ended with status %q", r.Status), nil, nil)
	}
	a.ended = true
	return nil
}

// jsonText is a JSON string's text, or a number or other value as written;
// null is "".
func jsonText(b json.RawMessage) string {
	var s string
	if json.Unmarshal(b, &s) == nil {
		return s
	}
	t := strings.TrimSpace(string(b))
	if t == "null" {
		return ""
	}
	return t
}

// Incomplete reasons the API gives, and what Finish says for them.
var incompleteReasons = map[string]string{
	"max_output_tokens": "length",
	"content_filter":    "content_filter",
}

// finishReason is lode's word for how the answer ended: "tool_calls" when
// it calls functions, "content_filter" for a refusal, "stop" otherwise;
// an incomplete answer says why: "length" for max_output_tokens,
// "content_filter", or the API's reason as sent.
func (a *assembler) finishReason() string {
	if a.status == "incomplete" {
		if r, ok := incompleteReasons[a.reason]; ok {
			return r
		}
		if a.reason != "" {
			return a.reason
		}
		return "incomplete"
	}
	refused := false
	for _, it := range a.items {
		if it.typ == "function_call" {
			return "tool_calls"
		}
		refused = refused || it.refusal
	}
	if refused {
		return "content_filter"
	}
	return "stop"
}

// end yields the answer's artifacts: its items in the order the server sent
// them, then Usage and Finish.
func (a *assembler) end(yield func(artifact.Artifact, error) bool) error {
	out := make([]artifact.Artifact, 0, len(a.items)+3)
	ids := make(map[string]int, a.calls)
	for _, it := range a.items {
		switch it.typ {
		case "message":
			if it.text.Len() > 0 {
				out = append(out, artifact.Text{Content: it.text.String()})
			}
		case "reasoning":
			if len(it.raw) == 0 {
				// Only output_item.done says it whole; a stream cut short
				// of it ended as incomplete.
				continue
			}
			out = append(out, artifact.Reasoning{Content: it.text.String(), Signature: it.sig, Field: FieldItem, Data: string(it.raw)})
		case TypeToolSearchCall, TypeToolSearchOutput:
			if len(it.raw) > 0 {
				out = append(out, artifact.Opaque{Provider: OpaqueProvider, Type: it.typ, Data: string(it.raw)})
			}
		case "function_call":
			if it.name == "" || it.id == "" {
				return respErr(ErrInvalidToolCall, fmt.Sprintf("function call %d (call ID %q, name %q) lacks a name or a call ID", it.call, it.id, it.name), []byte(it.args.String()), nil)
			}
			if prev, dup := ids[it.id]; dup {
				return respErr(ErrInvalidToolCall, fmt.Sprintf("function calls %d and %d share the call ID %q", prev, it.call, it.id), nil, nil)
			}
			ids[it.id] = it.call
			out = append(out, artifact.ToolCall{ID: it.id, Name: it.name, Arguments: it.args.String()})
		}
	}
	if a.chain && a.id != "" {
		out = append(out, artifact.Reasoning{Field: FieldResponseID, Data: a.id})
	}
	if a.usage != nil {
		out = append(out, *a.usage)
	}
	out = append(out, artifact.Finish{Reason: a.finishReason()})
	for _, art := range out {
		if !yield(art, nil) {
			return errStopped
		}
	}
	return nil
}
