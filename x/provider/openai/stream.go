package openai

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	goopenai "github.com/sashabaranov/go-openai"

	"github.com/lodeworks/lode/artifact"
	"github.com/lodeworks/lode/ledger"
)

// The chunk as the wire has it, decoded here rather than into go-openai's
// type so that both spellings of reasoning are read ("reasoning_content"
// from DeepSeek and llama.cpp, "reasoning" from newer vLLM and OpenRouter).
type wireChunk struct {
	ID      string       `json:"id"`
	Model   string       `json:"model"`
	Choices []wireChoice `json:"choices"`
	Usage   *wireUsage   `json:"usage"`
}

type wireChoice struct {
	Index        int       `json:"index"`
	Delta        wireDelta `json:"delta"`
	FinishReason string    `json:"finish_reason"`
}

type wireDelta struct {
	Content          string              `json:"content"`
	Refusal          string              `json:"refusal"`
	ReasoningContent string              `json:"reasoning_content"`
	Reasoning        string              `json:"reasoning"`
	ReasoningDetails json.RawMessage     `json:"reasoning_details"`
	ToolCalls        []goopenai.ToolCall `json:"tool_calls"`
}

// Where a server puts reasoning, and where it goes back.
const (
	fieldReasoningContent = "reasoning_content"
	fieldReasoning        = "reasoning"
	fieldReasoningDetails = "reasoning_details"
)

func (p *Provider) runStream(ctx context.Context, client *goopenai.Client, ct *callTransport,
	creq goopenai.ChatCompletionRequest, res *result, yield func(artifact.Artifact, error) bool) error {
	stream, err := client.CreateChatCompletionStream(ctx, creq)
	if err != nil {
		return p.callError(ctx, ct, err)
	}
	defer stream.Close()
	// Closing the body unblocks a read at once, even through a transport
	// that ignores the request's context.
	stop := context.AfterFunc(ctx, func() { stream.Close() })
	defer stop()
	var asm assembler
	defer asm.report(res)
	for {
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
			continue // "data:" with nothing after it: a keep-alive
		}
		var c wireChunk
		if err := json.Unmarshal(raw, &c); err != nil {
			return respErr(ErrMalformed, fmt.Sprintf("chunk %d is not a valid chunk", asm.chunks+1), raw, err)
		}
		if err := asm.add(&c, yield); err != nil {
			return err
		}
	}
	// A stream that closes cleanly after a finish reason is whole: some
	// servers never send data: [DONE]. A broken connection is an error
	// above, never a clean end.
	if (ct.watch == nil || !ct.watch.done) && asm.finish == "" {
		detail := "the stream ended before data: [DONE] and without a finish reason"
		if asm.chunks == 0 && !strings.HasPrefix(ct.contentType, "text/event-stream") {
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
	if errors.Is(err, goopenai.ErrTooManyEmptyStreamMessages) {
		return respErr(ErrMalformed, "too many lines that are not events", nil, err)
	}
	return respErr(ErrIncomplete, "the connection broke mid-stream", nil, err)
}

func (p *Provider) runWhole(ctx context.Context, client *goopenai.Client, ct *callTransport,
	creq goopenai.ChatCompletionRequest, res *result, yield func(artifact.Artifact, error) bool) error {
	resp, err := client.CreateChatCompletion(ctx, creq)
	if err != nil {
		var se *json.SyntaxError
		var te *json.UnmarshalTypeError
		var ae *goopenai.APIError
		var re *goopenai.RequestError
		if ctx.Err() == nil && !errors.As(err, &ae) && !errors.As(err, &re) && (errors.As(err, &se) || errors.As(err, &te)) {
			return respErr(ErrMalformed, "the response is not a chat completion", nil, err)
		}
		return p.callError(ctx, ct, err)
	}
	asm := assembler{model: resp.Model, id: resp.ID}
	defer asm.report(res)
	if len(resp.Choices) == 0 {
		return respErr(ErrIncomplete, "the response has no choices", nil, nil)
	}
	// go-openai reads one spelling of reasoning and a narrow usage; the
	// body it read says the rest.
	var extra wireWhole
	if err := json.Unmarshal(ct.whole.Bytes(), &extra); err != nil {
		return respErr(ErrMalformed, "the response is not a chat completion", nil, err)
	}
	ch := resp.Choices[0]
	msg := ch.Message
	if len(extra.Choices) > 0 {
		m := &extra.Choices[0].Message
		r, field := m.ReasoningContent, fieldReasoningContent
		if r == "" {
			r, field = m.Reasoning, fieldReasoning
		}
		if len(m.ReasoningDetails) > 0 && !isNull(m.ReasoningDetails) {
			text, err := asm.details.add(m.ReasoningDetails)
			if err != nil {
				return respErr(ErrMalformed, "the message has reasoning_details that are not a list of objects", m.ReasoningDetails, err)
			}
			asm.details.whole = m.ReasoningDetails
			asm.contentSeen = m.ReasoningContent != ""
			if r == "" {
				r = text
			}
		}
		if r != "" {
			asm.reasoning.WriteString(r)
			asm.reasonField = field
		}
	}
	asm.text.WriteString(msg.Content)
	for _, part := range msg.MultiContent {
		asm.text.WriteString(part.Text)
	}
	asm.text.WriteString(msg.Refusal)
	for i, tc := range msg.ToolCalls {
		asm.calls = append(asm.calls, &callAcc{index: i, id: tc.ID, name: tc.Function.Name})
		asm.calls[i].args.WriteString(tc.Function.Arguments)
	}
	asm.finish = string(ch.FinishReason)
	if u := extra.Usage; u != nil && !u.empty() {
		asm.usage = usageOf(u)
	}
	return asm.end(yield)
}

// wireWhole is what runWhole reads of a whole answer beside go-openai.
type wireWhole struct {
	Choices []struct {
		Message struct {
			ReasoningContent string          `json:"reasoning_content"`
			Reasoning        string          `json:"reasoning"`
			ReasoningDetails json.RawMessage `json:"reasoning_details"`
		} `json:"message"`
	} `json:"choices"`
	Usage *wireUsage `json:"usage"`
}

// assembler builds the whole artifacts of an answer from its chunks.
type assembler struct {
	text, reasoning strings.Builder
	reasonField     string // where the reasoning text came
	contentSeen     bool   // some reasoning came as reasoning_content
	details         detailsAcc
	calls           []*callAcc
	byIndex         map[int]*callAcc // by the index calls are ordered by
	byWire          map[int]*callAcc // by the index fragments carry
	next            int              // the lowest index above all taken
	finish          string
	usage           *artifact.Usage
	model, id       string
	chunks          int
}

type callAcc struct {
	index    int
	id, name string
	args     strings.Builder
}

func (a *assembler) report(res *result) {
	res.Model, res.ID, res.Finish, res.Usage = a.model, a.id, a.finish, a.usage
}

// add takes one chunk, yielding its deltas. It returns errStopped when the
// consumer stops.
func (a *assembler) add(c *wireChunk, yield func(artifact.Artifact, error) bool) error {
	a.chunks++
	if c.Model != "" {
		a.model = c.Model
	}
	if c.ID != "" {
		a.id = c.ID
	}
	if c.Usage != nil {
		a.usage = usageOf(c.Usage)
	}
	for i := range c.Choices {
		ch := &c.Choices[i]
		if ch.Index != 0 {
			return respErr(ErrMalformed, fmt.Sprintf("chunk %d has choice %d; one choice was asked for", a.chunks, ch.Index), nil, nil)
		}
		d := &ch.Delta
		r, field := d.ReasoningContent, fieldReasoningContent
		if r == "" {
			r, field = d.Reasoning, fieldReasoning
		}
		if len(d.ReasoningDetails) > 0 && !isNull(d.ReasoningDetails) {
			text, err := a.details.add(d.ReasoningDetails)
			if err != nil {
				return respErr(ErrMalformed, fmt.Sprintf("chunk %d has reasoning_details that are not a list of objects", a.chunks), d.ReasoningDetails, err)
			}
			if r == "" {
				r = text
			}
		}
		if d.ReasoningContent != "" {
			a.contentSeen = true
		}
		if r != "" {
			if a.reasonField == "" {
				a.reasonField = field
			}
			a.reasoning.WriteString(r)
			if !yield(artifact.ReasoningDelta{Content: r}, nil) {
				return errStopped
			}
		}
		for _, s := range [...]string{d.Content, d.Refusal} {
			if s == "" {
				continue
			}
			a.text.WriteString(s)
			if !yield(artifact.TextDelta{Content: s}, nil) {
				return errStopped
			}
		}
		for j := range d.ToolCalls {
			tc := &d.ToolCalls[j]
			acc, err := a.call(tc)
			if err != nil {
				return err
			}
			if !yield(artifact.ToolCallDelta{
				Index: acc.index, ID: tc.ID, Name: tc.Function.Name, Arguments: tc.Function.Arguments,
			}, nil) {
				return errStopped
			}
		}
		if ch.FinishReason != "" {
			a.finish = ch.FinishReason
		}
	}
	return nil
}

// call finds the call a fragment belongs to. OpenAI numbers calls with
// index and sends ID and name once. Other servers omit the index and send
// each call whole, or reuse one index for every call; so a fragment that
// brings an ID not seen before starts a new call unless its index is new
// or still unclaimed, and a fragment with neither index nor ID continues
// the last call.
func (a *assembler) call(tc *goopenai.ToolCall) (*callAcc, error) {
	var acc *callAcc
	if tc.Index != nil {
		acc = a.byWire[*tc.Index]
	} else if len(a.calls) > 0 {
		acc = a.calls[len(a.calls)-1]
	}
	if tc.ID != "" && acc != nil && acc.id != "" && acc.id != tc.ID {
		acc = nil
		for _, c := range a.calls {
			if c.id == tc.ID {
				acc = c
				break
			}
		}
		if acc == nil {
			acc = a.newCall(a.nextIndex())
		}
	}
	if acc == nil {
		i := a.nextIndex()
		if tc.Index != nil {
			i = *tc.Index
			if _, taken := a.byIndex[i]; taken {
				i = a.nextIndex()
			}
		}
		acc = a.newCall(i)
	}
	if tc.Index != nil {
		a.byWire[*tc.Index] = acc
	}
	if acc.id == "" {
		acc.id = tc.ID
	}
	// Some servers repeat the whole name in every fragment; a name is
	// otherwise sent once.
	if n := tc.Function.Name; n != "" && n != acc.name {
		acc.name += n
	}
	acc.args.WriteString(tc.Function.Arguments)
	return acc, nil
}

func (a *assembler) nextIndex() int { return a.next }

func (a *assembler) newCall(index int) *callAcc {
	if a.byIndex == nil {
		a.byIndex = make(map[int]*callAcc)
		a.byWire = make(map[int]*callAcc)
	}
	acc := &callAcc{index: index}
	a.byIndex[index] = acc
	a.next = max(a.next, index+1)
	a.calls = append(a.calls, acc)
	return acc
}

// end checks the answer is whole and yields its artifacts in order:
// Reasoning, Text, ToolCalls by index, Usage, Finish.
func (a *assembler) end(yield func(artifact.Artifact, error) bool) error {
	if a.finish == "" {
		return respErr(ErrIncomplete, "the answer ended without a finish reason", nil, nil)
	}
	slices.SortStableFunc(a.calls, func(x, y *callAcc) int { return cmp.Compare(x.index, y.index) })
	ids := make(map[string]int, len(a.calls))
	for _, c := range a.calls {
		if c.name == "" {
			return respErr(ErrInvalidToolCall, fmt.Sprintf("tool call %d (ID %q) has no name", c.index, c.id), []byte(c.args.String()), nil)
		}
		if c.id == "" {
			c.id = "call_" + ledger.NewID()[:24]
		}
		if prev, dup := ids[c.id]; dup {
			return respErr(ErrInvalidToolCall, fmt.Sprintf("tool calls %d and %d share the ID %q", prev, c.index, c.id), nil, nil)
		}
		ids[c.id] = c.index
	}
	out := make([]artifact.Artifact, 0, len(a.calls)+4)
	if r := a.reasoningArtifact(); r != nil {
		out = append(out, *r)
	}
	if a.text.Len() > 0 {
		out = append(out, artifact.Text{Content: a.text.String()})
	}
	for _, c := range a.calls {
		out = append(out, artifact.ToolCall{ID: c.id, Name: c.name, Arguments: c.args.String()})
	}
	if a.usage != nil {
		out = append(out, *a.usage)
	}
	out = append(out, artifact.Finish{Reason: a.finish})
	for _, art := range out {
		if !yield(art, nil) {
			return errStopped
		}
	}
	return nil
}

// reasoningArtifact is the answer's reasoning, noting where it came from
// so that it goes back there: structured reasoning_details, when sent, win
// over the plain text, which servers derive from them. Text that came as
// reasoning_content beside the details (Kimi through Avian) goes back
// there too (ContentField), since Kimi refuses a tool-calling assistant
// message without it; text under "reasoning" beside them (OpenRouter) is
// the server's rendering of the details and does not.
func (a *assembler) reasoningArtifact() *artifact.Reasoning {
	r := artifact.Reasoning{Content: a.reasoning.String(), Field: a.reasonField}
	if d := a.details.json(); d != "" {
		r.Field, r.Data = fieldReasoningDetails, d
		if a.contentSeen {
			r.ContentField = fieldReasoningContent
		}
	}
	if r.Content == "" && r.Data == "" {
		return nil
	}
	return &r
}

func isNull(b []byte) bool { return string(bytes.TrimSpace(b)) == "null" }
