package anthropic

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	sdk "github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/packages/ssestream"

	"github.com/lodeworks/lode/artifact"
)

func (p *Provider) runStream(ctx context.Context, client *sdk.Client, ct *callTransport,
	params sdk.MessageNewParams, res *result, yield func(artifact.Artifact, error) bool) error {
	stream := client.Messages.NewStreaming(ctx, params, ct.extra...)
	defer stream.Close()
	var asm assembler
	defer asm.report(res)
	err := asm.read(stream, yield)
	if err == nil || errors.Is(err, errStopped) {
		return err
	}
	if ctx.Err() != nil {
		return ctxError(ctx)
	}
	var se *sdk.Error
	if errors.As(err, &se) {
		return p.callError(ctx, ct, err)
	}
	if !ct.streaming {
		return p.callError(ctx, ct, err)
	}
	return err
}

// streamError classifies what the SDK's stream reported: a broken
// connection, or bytes that are not the protocol.
func streamError(err error, asm *assembler) error {
	var se *sdk.Error
	switch {
	case errors.As(err, &se):
		return err
	case errors.Is(err, bufio.ErrTooLong):
		return respErr(ErrMalformed, "a line of the stream is too long", nil, err)
	case errors.Is(err, io.ErrUnexpectedEOF), isNetError(err):
		return respErr(ErrIncomplete, "the connection broke mid-stream", nil, err)
	}
	if strings.HasPrefix(err.Error(), "received error while streaming: ") {
		return respErr(ErrMalformed, "the stream's error event is not an error object", nil, err)
	}
	return respErr(ErrMalformed, fmt.Sprintf("event %d is not a valid event", asm.events+1), nil, err)
}

// isNetError reports a read failure rather than a decoding one.
func isNetError(err error) bool {
	var ne interface{ Timeout() bool }
	return errors.As(err, &ne) || errors.Is(err, context.Canceled) || strings.Contains(err.Error(), "use of closed")
}

func (p *Provider) runWhole(ctx context.Context, client *sdk.Client, ct *callTransport,
	params sdk.MessageNewParams, res *result, yield func(artifact.Artifact, error) bool) error {
	msg, err := client.Messages.New(ctx, params, ct.extra...)
	if err != nil {
		var se *sdk.Error
		if ctx.Err() == nil && !errors.As(err, &se) && ct.streaming {
			return respErr(ErrMalformed, "the response is not a message", nil, err)
		}
		return p.callError(ctx, ct, err)
	}
	var asm assembler
	defer asm.report(res)
	asm.started, asm.stopped = true, true
	asm.id, asm.model = msg.ID, string(msg.Model)
	asm.stop = string(msg.StopReason)
	u := msg.Usage
	asm.in, asm.out, asm.cacheRead, asm.cacheWrite = u.InputTokens, u.OutputTokens, u.CacheReadInputTokens, u.CacheCreationInputTokens
	asm.hasUsage = msg.JSON.Usage.Valid()
	if raw := msg.JSON.Container.Raw(); reported(raw) {
		asm.container = raw
	}
	for i := range msg.Content {
		c := &msg.Content[i]
		b := asm.open(c.Type)
		switch c.Type {
		case "text":
			b.text.WriteString(c.Text)
			if raw := c.JSON.Citations.Raw(); hasElements(raw) {
				b.citations = append(b.citations, raw)
			}
		case "thinking":
			b.text.WriteString(c.Thinking)
			b.sig.WriteString(c.Signature)
		case "redacted_thinking":
			b.data = c.Data
		case "tool_use":
			b.id, b.name, b.input = c.ID, c.Name, string(c.Input)
		default:
			b.raw = c.RawJSON()
		}
	}
	return asm.end(yield)
}

// block is one content block being assembled.
type block struct {
	typ       string
	text, sig strings.Builder // text or thinking; signature
	args      strings.Builder // tool_use input, as streamed
	input     string          // tool_use input given whole at the start
	data      string          // redacted_thinking
	id, name  string
	call      int // the index of a tool call among the answer's calls
	gotArgs   bool
	done      bool
	skip      bool // a block without a type
	// A block this adapter does not map (server tools' use and results)
	// is kept whole as an artifact.Opaque: raw is the block as it
	// started, args its input as streamed after. lost marks one whose
	// deltas this package cannot put back together, which is dropped.
	opaque, lost bool
	raw          string
	// citations of a text block: JSON arrays as the server sent them
	// whole, or single citations as streamed.
	citations []string
}

// assembler builds an answer's artifacts from the Messages API's stream
// events, yielding deltas as they come.
type assembler struct {
	started, stopped bool
	events           int
	blocks           []*block
	calls            int
	id, model, stop  string
	in, out          int64
	cacheRead        int64
	cacheWrite       int64
	hasUsage         bool
	// container is the container object the answer reported, as sent:
	// in the message itself, or in message_start and then message_delta
	// when streamed (the later one wins).
	container string
}

func (a *assembler) report(res *result) {
	res.Model, res.ID, res.Finish = a.model, a.id, a.stop
	if a.hasUsage {
		u := a.usage()
		res.Usage = &u
	}
}

// usage maps the API's counts to lode's: the API's input_tokens leaves out
// what was read from or written to the cache, lode's InputTokens is the
// whole prompt.
func (a *assembler) usage() artifact.Usage {
	return artifact.Usage{
		InputTokens:       a.in + a.cacheRead + a.cacheWrite,
		OutputTokens:      a.out,
		CachedInputTokens: a.cacheRead,
		CacheWriteTokens:  a.cacheWrite,
	}
}

func (a *assembler) open(typ string) *block {
	b := &block{typ: typ}
	switch typ {
	case "text", "thinking", "redacted_thinking":
	case "tool_use":
		b.call = a.calls
		a.calls++
	case "":
		b.skip = true
	case opaqueContainer:
		// The API sends no such block; kept, it would read as the
		// answer's container.
		b.opaque, b.lost = true, true
	default:
		b.opaque = true
	}
	a.blocks = append(a.blocks, b)
	return b
}

// read consumes the stream up to message_stop and yields the answer.
func (a *assembler) read(stream *ssestream.Stream[sdk.MessageStreamEventUnion], yield func(artifact.Artifact, error) bool) error {
	for !a.stopped && stream.Next() {
		ev := stream.Current()
		if err := a.add(&ev, yield); err != nil {
			return err
		}
	}
	if err := stream.Err(); err != nil {
		return streamError(err, a)
	}
	return a.end(yield)
}

// add takes one event. It returns errStopped when the consumer stops.
func (a *assembler) add(ev *sdk.MessageStreamEventUnion, yield func(artifact.Artifact, error) bool) error {
	a.events++
	if ev.Type != "message_start" && !a.started {
		switch ev.Type {
		case "content_block_start", "content_block_delta", "content_block_stop", "message_delta", "message_stop":
			return respErr(ErrMalformed, fmt.Sprintf("event %d (%s) comes before message_start", a.events, ev.Type), nil, nil)
		}
	}
	switch ev.Type {
	case "message_start":
		if a.started {
			return respErr(ErrMalformed, fmt.Sprintf("event %d is a second message_start", a.events), nil, nil)
		}
		a.started = true
		m := &ev.Message
		a.id, a.model = m.ID, string(m.Model)
		if raw := m.JSON.Container.Raw(); reported(raw) {
			a.container = raw
		}
		if m.JSON.Usage.Valid() {
			a.hasUsage = true
			u := &m.Usage
			a.in, a.out, a.cacheRead, a.cacheWrite = u.InputTokens, u.OutputTokens, u.CacheReadInputTokens, u.CacheCreationInputTokens
		}
	case "content_block_start":
		if ev.Index != int64(len(a.blocks)) {
			return respErr(ErrMalformed, fmt.Sprintf("event %d starts block %d; block %d was expected", a.events, ev.Index, len(a.blocks)), nil, nil)
		}
		cb := &ev.ContentBlock
		b := a.open(cb.Type)
		switch cb.Type {
		case "text":
			if raw := cb.JSON.Citations.Raw(); hasElements(raw) {
				b.citations = append(b.citations, raw)
			}
			if cb.Text != "" {
				b.text.WriteString(cb.Text)
				if !yield(artifact.TextDelta{Content: cb.Text}, nil) {
					return errStopped
				}
			}
		case "thinking":
			b.sig.WriteString(cb.Signature)
			if cb.Thinking != "" {
				b.text.WriteString(cb.Thinking)
				if !yield(artifact.ReasoningDelta{Content: cb.Thinking}, nil) {
					return errStopped
				}
			}
		case "redacted_thinking":
			b.data = cb.Data
		case "tool_use":
			b.id, b.name = cb.ID, cb.Name
			b.input = cb.JSON.Input.Raw()
			if !yield(artifact.ToolCallDelta{Index: b.call, ID: b.id, Name: b.name}, nil) {
				return errStopped
			}
		default:
			b.raw = cb.RawJSON()
		}
	case "content_block_delta":
		b, err := a.live(ev)
		if err != nil {
			return err
		}
		if b.skip {
			return nil
		}
		d := &ev.Delta
		if b.opaque {
			// A server tool's input streams as a client tool's does; a
			// delta of another kind cannot be put back into the block.
			if d.Type == "input_json_delta" {
				b.gotArgs = true
				b.args.WriteString(d.PartialJSON)
			} else {
				b.lost = true
			}
			return nil
		}
		want := map[string]string{"text_delta": "text", "thinking_delta": "thinking", "signature_delta": "thinking", "input_json_delta": "tool_use", "citations_delta": "text"}[d.Type]
		if want == "" {
			return nil // deltas of later API versions
		}
		if want != b.typ {
			return respErr(ErrMalformed, fmt.Sprintf("event %d sends a %s to block %d, a %s block", a.events, d.Type, ev.Index, b.typ), nil, nil)
		}
		switch d.Type {
		case "text_delta":
			b.text.WriteString(d.Text)
			if d.Text != "" && !yield(artifact.TextDelta{Content: d.Text}, nil) {
				return errStopped
			}
		case "thinking_delta":
			b.text.WriteString(d.Thinking)
			if d.Thinking != "" && !yield(artifact.ReasoningDelta{Content: d.Thinking}, nil) {
				return errStopped
			}
		case "signature_delta":
			b.sig.WriteString(d.Signature)
		case "citations_delta":
			if raw := d.JSON.Citation.Raw(); raw != "" {
				b.citations = append(b.citations, raw)
			}
		case "input_json_delta":
			b.gotArgs = true
			b.args.WriteString(d.PartialJSON)
			if d.PartialJSON != "" && !yield(artifact.ToolCallDelta{Index: b.call, Arguments: d.PartialJSON}, nil) {
				return errStopped
			}
		}
	case "content_block_stop":
		b, err := a.live(ev)
		if err != nil {
			return err
		}
		b.done = true
	case "message_delta":
		if s := string(ev.Delta.StopReason); s != "" {
			a.stop = s
		}
		if raw := ev.Delta.JSON.Container.Raw(); reported(raw) {
			a.container = raw
		}
		u := &ev.Usage
		if ev.JSON.Usage.Valid() {
			a.hasUsage = true
			a.out = u.OutputTokens
			if u.JSON.InputTokens.Valid() {
				a.in = u.InputTokens
			}
			if u.JSON.CacheReadInputTokens.Valid() {
				a.cacheRead = u.CacheReadInputTokens
			}
			if u.JSON.CacheCreationInputTokens.Valid() {
				a.cacheWrite = u.CacheCreationInputTokens
			}
		}
	case "message_stop":
		a.stopped = true
	}
	return nil
}

// live is the open block an event addresses.
func (a *assembler) live(ev *sdk.MessageStreamEventUnion) (*block, error) {
	if ev.Index < 0 || ev.Index >= int64(len(a.blocks)) {
		return nil, respErr(ErrMalformed, fmt.Sprintf("event %d (%s) addresses block %d, which was not started", a.events, ev.Type, ev.Index), nil, nil)
	}
	b := a.blocks[ev.Index]
	if b.done {
		return nil, respErr(ErrMalformed, fmt.Sprintf("event %d (%s) addresses block %d, which was stopped", a.events, ev.Type, ev.Index), nil, nil)
	}
	return b, nil
}

// finishReasons maps the API's stop reasons to lode's words; others pass
// through as the server said them.
var finishReasons = map[string]string{
	"end_turn":      "stop",
	"stop_sequence": "stop",
	"tool_use":      "tool_calls",
	"max_tokens":    "length",
	"refusal":       "content_filter",
}

// end checks the answer is whole and yields its artifacts: the blocks in
// the order the server sent them, then Usage and Finish.
func (a *assembler) end(yield func(artifact.Artifact, error) bool) error {
	if !a.stopped {
		if !a.started {
			return respErr(ErrIncomplete, "the stream ended before message_start", nil, nil)
		}
		return respErr(ErrIncomplete, "the stream ended before message_stop", nil, nil)
	}
	if a.stop == "" {
		return respErr(ErrIncomplete, "the answer ended without a stop reason", nil, nil)
	}
	out := make([]artifact.Artifact, 0, len(a.blocks)+2)
	ids := make(map[string]int, a.calls)
	for _, b := range a.blocks {
		switch b.typ {
		case "text":
			if b.text.Len() > 0 {
				out = append(out, artifact.Text{Content: b.text.String()})
				if len(b.citations) > 0 {
					out = append(out, artifact.Opaque{Provider: opaqueProvider, Type: opaqueCitations, Data: joinCitations(b.citations)})
				}
			}
		case "thinking":
			out = append(out, artifact.Reasoning{Content: b.text.String(), Signature: b.sig.String()})
		case "redacted_thinking":
			out = append(out, artifact.Reasoning{Field: fieldRedacted, Data: b.data})
		case "tool_use":
			if b.name == "" || b.id == "" {
				return respErr(ErrInvalidToolCall, fmt.Sprintf("tool call %d (ID %q, name %q) lacks a name or an ID", b.call, b.id, b.name), []byte(b.args.String()), nil)
			}
			if prev, dup := ids[b.id]; dup {
				return respErr(ErrInvalidToolCall, fmt.Sprintf("tool calls %d and %d share the ID %q", prev, b.call, b.id), nil, nil)
			}
			ids[b.id] = b.call
			args := b.input
			if b.gotArgs {
				args = b.args.String()
			}
			if strings.TrimSpace(args) == "" {
				args = "{}"
			}
			out = append(out, artifact.ToolCall{ID: b.id, Name: b.name, Arguments: args})
		default:
			if !b.opaque || b.lost {
				continue
			}
			o, err := opaqueBlock(b)
			if err != nil {
				return err
			}
			out = append(out, o)
		}
	}
	if a.container != "" {
		o, err := containerOpaque(a.container)
		if err != nil {
			return err
		}
		out = append(out, o)
	}
	if a.hasUsage {
		out = append(out, a.usage())
	}
	reason := a.stop
	if r, ok := finishReasons[reason]; ok {
		reason = r
	}
	out = append(out, artifact.Finish{Reason: reason})
	for _, art := range out {
		if !yield(art, nil) {
			return errStopped
		}
	}
	return nil
}
