package gemini

import (
	"bufio"
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync/atomic"

	"github.com/lodeworks/lode/artifact"
)

// MaxEventSize bounds one event of a stream (or a whole answer without
// streaming); a longer one is ErrMalformed rather than unbounded memory.
const MaxEventSize = 64 << 20

// The wire format of an answer, read directly: only what lode maps.
type (
	chunk struct {
		Candidates     []candidate  `json:"candidates"`
		PromptFeedback *feedback    `json:"promptFeedback"`
		UsageMetadata  *usageMeta   `json:"usageMetadata"`
		ModelVersion   string       `json:"modelVersion"`
		ResponseID     string       `json:"responseId"`
		Error          *googleError `json:"error"`
	}
	candidate struct {
		Content       *content `json:"content"`
		FinishReason  enum     `json:"finishReason"`
		FinishMessage string   `json:"finishMessage"`
		Index         int      `json:"index"`
	}
	content struct {
		Parts []json.RawMessage `json:"parts"`
	}
	part struct {
		Text             *string   `json:"text"`
		Thought          bool      `json:"thought"`
		ThoughtSignature string    `json:"thoughtSignature"`
		FunctionCall     *funcCall `json:"functionCall"`
	}
	funcCall struct {
		ID   string          `json:"id"`
		Name string          `json:"name"`
		Args json.RawMessage `json:"args"`
	}
	feedback struct {
		BlockReason        enum   `json:"blockReason"`
		BlockReasonMessage string `json:"blockReasonMessage"`
	}
	usageMeta struct {
		PromptTokenCount        int64 `json:"promptTokenCount"`
		CandidatesTokenCount    int64 `json:"candidatesTokenCount"`
		ThoughtsTokenCount      int64 `json:"thoughtsTokenCount"`
		CachedContentTokenCount int64 `json:"cachedContentTokenCount"`
		ToolUsePromptTokenCount int64 `json:"toolUsePromptTokenCount"`
		TotalTokenCount         int64 `json:"totalTokenCount"`
	}
)

// enum is an enum value as a name, whether the server sent the name or,
// asked for enum-encoding=int, its number.
type enum string

func (e *enum) UnmarshalJSON(b []byte) error {
	if len(b) > 0 && b[0] == '"' {
		var s string
		if err := json.Unmarshal(b, &s); err != nil {
			return err
		}
		*e = enum(s)
		return nil
	}
	if string(b) == "null" {
		return nil
	}
	n, err := strconv.Atoi(string(b))
	if err != nil {
		return fmt.Errorf("an enum is a name or a number, not %s", b)
	}
	*e = enum("#" + strconv.Itoa(n))
	return nil
}

// name is the enum's name, looked up in names when it came as a number.
func (e enum) name(names []string) string {
	s := string(e)
	if n, ok := strings.CutPrefix(s, "#"); ok {
		if i, err := strconv.Atoi(n); err == nil && i >= 0 && i < len(names) {
			return names[i]
		}
	}
	return s
}

// The numbers of google.ai.generativelanguage's FinishReason and
// BlockReason.
var (
	finishNames = []string{"FINISH_REASON_UNSPECIFIED", "STOP", "MAX_TOKENS", "SAFETY", "RECITATION", "OTHER", "LANGUAGE",
		"BLOCKLIST", "PROHIBITED_CONTENT", "SPII", "MALFORMED_FUNCTION_CALL", "IMAGE_SAFETY", "UNEXPECTED_TOOL_CALL", "TOO_MANY_TOOL_CALLS"}
	blockNames = []string{"BLOCK_REASON_UNSPECIFIED", "SAFETY", "OTHER", "BLOCKLIST", "PROHIBITED_CONTENT", "IMAGE_SAFETY"}
)

// finishReasons maps Gemini's finish reasons to lode's words; a reason not
// here passes through in lower case. The reasons that say the model's
// call was broken are errors instead (see brokenCall).
var finishReasons = map[string]string{
	"STOP":                     "stop",
	"MAX_TOKENS":               "length",
	"SAFETY":                   "content_filter",
	"RECITATION":               "content_filter",
	"BLOCKLIST":                "content_filter",
	"PROHIBITED_CONTENT":       "content_filter",
	"SPII":                     "content_filter",
	"IMAGE_SAFETY":             "content_filter",
	"IMAGE_PROHIBITED_CONTENT": "content_filter",
	"IMAGE_RECITATION":         "content_filter",
}

// brokenCall lists the finish reasons of a function call the model could
// not make.
var brokenCall = map[string]string{
	"MALFORMED_FUNCTION_CALL":   "the model's function call could not be parsed",
	"UNEXPECTED_TOOL_CALL":      "the model called a tool that was not offered",
	"TOO_MANY_TOOL_CALLS":       "the model made too many tool calls in a row",
	"MISSING_THOUGHT_SIGNATURE": "a function call in the request lacked its thought signature",
}

// item is one artifact being assembled, in the order the parts came.
type item struct {
	kind byte // 't' text, 'r' thought, 'c' call, 'p' kept part, 's' signature
	text strings.Builder
	sig  string
	raw  string
	id   string
	name string
	args string
	call int
}

// assembler builds an answer's artifacts from its chunks, yielding deltas
// as they come.
type assembler struct {
	newID       func() string
	maxEvent    int
	items       []*item
	calls       int
	events      int
	finish      string
	finishMsg   string
	block       string
	blockMsg    string
	id, model   string
	usage       *usageMeta
	lastText    *item // the text item the next unsigned text joins
	lastThought *item // the thought item the next unsigned thought joins
}

func (a *assembler) report(res *result) {
	res.Model, res.ID, res.Finish = a.model, a.id, a.finish
	if a.usage != nil {
		u := a.lodeUsage()
		res.Usage = &u
	}
}

// lodeUsage maps Gemini's counts to lode's: the prompt (cached content
// included, and the prompt of server-side tool use) is InputTokens, the
// answer and the thoughts OutputTokens, as OpenAI counts them.
func (a *assembler) lodeUsage() artifact.Usage {
	u := a.usage
	return artifact.Usage{
		InputTokens:       u.PromptTokenCount + u.ToolUsePromptTokenCount,
		OutputTokens:      u.CandidatesTokenCount + u.ThoughtsTokenCount,
		CachedInputTokens: u.CachedContentTokenCount,
		ReasoningTokens:   u.ThoughtsTokenCount,
	}
}

// readStream reads a streamed answer: server-sent events, each "data:" a
// chunk (alt=sse), or, from a server that ignored alt=sse, one JSON array
// of chunks.
func (a *assembler) readStream(body io.Reader, yield func(artifact.Artifact, error) bool) error {
	if a.maxEvent == 0 {
		a.maxEvent = MaxEventSize
	}
	br := bufio.NewReaderSize(body, 32<<10)
	if first, err := peekNonSpace(br); err == nil && first == '[' {
		return a.readArray(br, yield)
	}
	var data []byte // the current event's data lines, joined
	var long []byte // a line longer than the reader's buffer
	for {
		line, err := br.ReadSlice('\n')
		if err == bufio.ErrBufferFull {
			if len(long)+len(line) > a.maxEvent {
				return respErr(ErrMalformed, fmt.Sprintf("event %d is longer than %d bytes", a.events+1, a.maxEvent), nil, nil)
			}
			long = append(long, line...)
			continue
		}
		if long != nil {
			long = append(long, line...)
			line, long = long, nil
		}
		if err != nil && err != io.EOF {
			if len(line) == 0 && len(data) == 0 && a.finish != "" {
				// The connection failed after the last chunk: the
				// answer is whole.
				return a.end(yield)
			}
			return a.broken(err)
		}
		eof := err == io.EOF
		line = bytes.TrimRight(line, "\r\n")
		switch {
		case len(line) == 0:
			if len(data) > 0 {
				if err := a.event(data, yield); err != nil {
					return err
				}
				data = data[:0]
			}
		case line[0] == ':':
		default:
			field, value, _ := bytes.Cut(line, []byte(":"))
			if string(field) == "data" {
				value = bytes.TrimPrefix(value, []byte(" "))
				if len(data) > 0 {
					data = append(data, '\n')
				}
				if len(data)+len(value) > a.maxEvent {
					return respErr(ErrMalformed, fmt.Sprintf("event %d is longer than %d bytes", a.events+1, a.maxEvent), nil, nil)
				}
				data = append(data, value...)
			}
			// event:, id: and retry: say nothing Gemini uses.
		}
		if eof {
			if len(data) > 0 {
				// An event cut off before its blank line is not whole.
				return respErr(ErrIncomplete, fmt.Sprintf("the stream ended inside event %d", a.events+1), data, nil)
			}
			return a.end(yield)
		}
	}
}

// broken classifies a read that failed mid-stream.
func (a *assembler) broken(err error) error {
	var te *TimeoutError
	if errors.As(err, &te) {
		return te
	}
	return respErr(ErrIncomplete, "the connection broke mid-stream", nil, err)
}

func peekNonSpace(br *bufio.Reader) (byte, error) {
	for {
		b, err := br.Peek(1)
		if err != nil {
			return 0, err
		}
		switch b[0] {
		case ' ', '\t', '\r', '\n':
			br.ReadByte()
			continue
		}
		return b[0], nil
	}
}

// readArray reads the JSON-array form of a stream.
func (a *assembler) readArray(r io.Reader, yield func(artifact.Artifact, error) bool) error {
	dec := json.NewDecoder(io.LimitReader(r, MaxEventSize))
	if _, err := dec.Token(); err != nil {
		return a.broken(err)
	}
	for dec.More() {
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) {
				return respErr(ErrIncomplete, fmt.Sprintf("the stream ended inside chunk %d", a.events+1), nil, err)
			}
			var se *json.SyntaxError
			if errors.As(err, &se) {
				return respErr(ErrMalformed, fmt.Sprintf("chunk %d is not JSON", a.events+1), nil, err)
			}
			return a.broken(err)
		}
		if err := a.event(raw, yield); err != nil {
			return err
		}
	}
	if _, err := dec.Token(); err != nil {
		return respErr(ErrIncomplete, "the stream's array is not closed", nil, err)
	}
	return a.end(yield)
}

// readWhole reads the answer of generateContent.
func (a *assembler) readWhole(body io.Reader, yield func(artifact.Artifact, error) bool) error {
	data, err := io.ReadAll(io.LimitReader(body, MaxEventSize+1))
	if err != nil {
		return a.broken(err)
	}
	if len(data) > MaxEventSize {
		return respErr(ErrMalformed, fmt.Sprintf("the answer is longer than %d bytes", MaxEventSize), nil, nil)
	}
	if len(bytes.TrimSpace(data)) == 0 {
		return respErr(ErrIncomplete, "the answer is empty", nil, nil)
	}
	// Without streaming no deltas are yielded.
	whole := func(art artifact.Artifact, err error) bool {
		return artifact.IsDelta(art) || yield(art, err)
	}
	if err := a.event(data, whole); err != nil {
		return err
	}
	return a.end(yield)
}

// event takes one chunk. It returns errStopped when the consumer stops.
func (a *assembler) event(data []byte, yield func(artifact.Artifact, error) bool) error {
	a.events++
	var c chunk
	if err := json.Unmarshal(data, &c); err != nil {
		return respErr(ErrMalformed, fmt.Sprintf("chunk %d is not a response", a.events), data, err)
	}
	if c.Error != nil {
		return &APIError{StatusCode: c.Error.Code, Status: c.Error.Status, Message: c.Error.Message, Details: c.Error.Details, InStream: true}
	}
	if c.ResponseID != "" {
		a.id = c.ResponseID
	}
	if c.ModelVersion != "" {
		a.model = c.ModelVersion
	}
	if c.UsageMetadata != nil {
		a.usage = c.UsageMetadata // each chunk's counts are the totals so far
	}
	if f := c.PromptFeedback; f != nil && f.BlockReason != "" {
		a.block = f.BlockReason.name(blockNames)
		a.blockMsg = f.BlockReasonMessage
	}
	for i := range c.Candidates {
		cand := &c.Candidates[i]
		if cand.Index != 0 {
			continue // lode asks for one candidate
		}
		if cand.Content != nil {
			for _, raw := range cand.Content.Parts {
				if err := a.part(raw, yield); err != nil {
					return err
				}
			}
		}
		if cand.FinishReason != "" {
			a.finish = cand.FinishReason.name(finishNames)
			a.finishMsg = cand.FinishMessage
		}
	}
	return nil
}

// part takes one part of the answer.
func (a *assembler) part(raw json.RawMessage, yield func(artifact.Artifact, error) bool) error {
	var p part
	if err := json.Unmarshal(raw, &p); err != nil {
		return respErr(ErrMalformed, fmt.Sprintf("a part of chunk %d is not a part", a.events), raw, err)
	}
	switch {
	case p.FunctionCall != nil:
		a.signature(p.ThoughtSignature)
		fc := p.FunctionCall
		it := &item{kind: 'c', name: fc.Name, call: a.calls, id: fc.ID}
		args := bytes.TrimSpace(fc.Args)
		if len(args) == 0 || string(args) == "null" {
			it.args = "{}"
		} else {
			it.args = string(args)
		}
		if it.id == "" {
			it.id = a.newID()
		}
		a.calls++
		a.items = append(a.items, it)
		a.lastText, a.lastThought = nil, nil
		if !yield(artifact.ToolCallDelta{Index: it.call, ID: it.id, Name: it.name, Arguments: it.args}, nil) {
			return errStopped
		}
	case p.Thought:
		it := a.lastThought
		if it == nil || (p.ThoughtSignature != "" && it.sig != "") {
			it = &item{kind: 'r'}
			a.items = append(a.items, it)
			a.lastThought, a.lastText = it, nil
		}
		if p.ThoughtSignature != "" {
			it.sig = p.ThoughtSignature
		}
		if p.Text != nil && *p.Text != "" {
			it.text.WriteString(*p.Text)
			if !yield(artifact.ReasoningDelta{Content: *p.Text}, nil) {
				return errStopped
			}
		}
	case p.Text != nil || onlySignature(raw, p):
		text := ""
		if p.Text != nil {
			text = *p.Text
		}
		it := a.lastText
		if it == nil || p.ThoughtSignature != "" {
			// A signed part is an artifact of its own, so that the
			// signature goes back on the part it came on, as it came.
			a.signature(p.ThoughtSignature)
			it = &item{kind: 't'}
			a.items = append(a.items, it)
			a.lastText, a.lastThought = it, nil
		}
		if p.ThoughtSignature != "" {
			a.lastText = nil // the signed part takes no other text
		}
		if text != "" {
			it.text.WriteString(text)
			if !yield(artifact.TextDelta{Content: text}, nil) {
				return errStopped
			}
		}
	default:
		a.items = append(a.items, &item{kind: 'p', raw: string(raw)})
		a.lastText, a.lastThought = nil, nil
	}
	return nil
}

// onlySignature reports a part that carries a thought signature and
// nothing else, which stands for an empty text part.
func onlySignature(raw json.RawMessage, p part) bool {
	if p.ThoughtSignature == "" {
		return false
	}
	var m map[string]json.RawMessage
	if json.Unmarshal(raw, &m) != nil {
		return false
	}
	for k := range m {
		if k != "thoughtSignature" && k != "thought" {
			return false
		}
	}
	return true
}

// signature records a thought signature for the artifact that follows.
func (a *assembler) signature(sig string) {
	if sig != "" {
		a.items = append(a.items, &item{kind: 's', sig: sig})
	}
}

// end checks the answer is whole and yields its artifacts in the order the
// parts came, then Usage and Finish.
func (a *assembler) end(yield func(artifact.Artifact, error) bool) error {
	if a.finish == "" {
		if a.block != "" {
			detail := "the prompt was blocked (" + a.block + ")"
			if a.blockMsg != "" {
				detail += ": " + a.blockMsg
			}
			return &ResponseError{Kind: ErrBlocked, Reason: a.block, Detail: detail}
		}
		if a.events == 0 {
			return respErr(ErrIncomplete, "the stream ended before any chunk", nil, nil)
		}
		return respErr(ErrIncomplete, "the answer ended without a finish reason", nil, nil)
	}
	if why, ok := brokenCall[a.finish]; ok {
		detail := why + " (" + a.finish + ")"
		if a.finishMsg != "" {
			detail += ": " + a.finishMsg
		}
		return &ResponseError{Kind: ErrInvalidToolCall, Reason: a.finish, Detail: detail}
	}
	out := make([]artifact.Artifact, 0, len(a.items)+2)
	for _, it := range a.items {
		switch it.kind {
		case 't':
			out = append(out, artifact.Text{Content: it.text.String()})
		case 'r':
			if it.text.Len() == 0 && it.sig == "" {
				continue // an empty thought says nothing
			}
			out = append(out, artifact.Reasoning{Content: it.text.String(), Signature: it.sig, Field: FieldThought})
		case 's':
			out = append(out, artifact.Reasoning{Signature: it.sig, Field: FieldSignature})
		case 'p':
			out = append(out, artifact.Reasoning{Field: FieldPart, Data: it.raw})
		case 'c':
			if it.name == "" {
				return respErr(ErrInvalidToolCall, fmt.Sprintf("function call %d has no name", it.call), []byte(it.args), nil)
			}
			out = append(out, artifact.ToolCall{ID: it.id, Name: it.name, Arguments: it.args})
		}
	}
	// An empty text part says nothing unless it carries a signature.
	out = dropBareEmptyText(out)
	if a.usage != nil {
		out = append(out, a.lodeUsage())
	}
	reason, ok := finishReasons[a.finish]
	if !ok {
		reason = strings.ToLower(a.finish)
	}
	if reason == "stop" && a.calls > 0 {
		reason = "tool_calls"
	}
	out = append(out, artifact.Finish{Reason: reason})
	for _, art := range out {
		if !yield(art, nil) {
			return errStopped
		}
	}
	return nil
}

func dropBareEmptyText(in []artifact.Artifact) []artifact.Artifact {
	out := in[:0]
	for _, art := range in {
		if t, ok := art.(artifact.Text); ok && t.Content == "" {
			if n := len(out); n == 0 || !isSignature(out[n-1]) {
				continue
			}
		}
		out = append(out, art)
	}
	return out
}

func isSignature(art artifact.Artifact) bool {
	r, ok := art.(artifact.Reasoning)
	return ok && r.Field == FieldSignature
}

// idPrefix marks a call ID this adapter made for a call the server sent
// without one; it is not sent back.
const idPrefix = "gemini-call-"

// callIDs makes IDs for calls without one: unique within the process and
// across processes, so that a ledger holding many turns has no clash.
func callIDs() func() string {
	var salt [4]byte
	_, _ = rand.Read(salt[:])
	prefix := idPrefix + hex.EncodeToString(salt[:]) + "-"
	var n atomic.Uint64
	return func() string { return prefix + strconv.FormatUint(n.Add(1), 10) }
}

// wireID is the ID to send back for a call: none for one this adapter made.
func wireID(id string) string {
	if strings.HasPrefix(id, idPrefix) {
		return ""
	}
	return id
}
