package artifact

// Artifact is anything a model produces or a tool returns. Kind names the
// artifact's type in storage and on the wire; it never changes for a type.
type Artifact interface {
	Kind() string
}

// Delta is a fragment of an artifact still being streamed. Deltas go to
// observers as they arrive; they are never stored in a ledger.
type Delta interface {
	Artifact
	isDelta()
}

// The kinds of the artifacts this package defines.
const (
	KindText           = "text"
	KindReasoning      = "reasoning"
	KindToolCall       = "tool_call"
	KindToolResult     = "tool_result"
	KindUsage          = "usage"
	KindImage          = "image"
	KindFinish         = "finish"
	KindAudio          = "audio"
	KindResource       = "resource"
	KindResourceLink   = "resource_link"
	KindSummary        = "summary"
	KindTextDelta      = "text_delta"
	KindReasoningDelta = "reasoning_delta"
	KindToolCallDelta  = "tool_call_delta"
)

// Text is plain text from a user, a system prompt or the model.
type Text struct {
	Content string `json:"content"`
}

// Reasoning is the model's visible chain of thought, where a server sends it.
// Signature is an opaque token some servers require back with the reasoning.
//
// Field, ContentField and Data belong to the adapter that read the
// reasoning, so that it goes back to the server as it came; other code
// passes them through. Field names the one place the server put the
// reasoning (Data when there is Data, else Content; empty: the adapter's
// default). ContentField names a second place, when the server also sent
// Content there on its own and wants it back there as well (Kimi behind a
// gateway: Field "reasoning_details" for Data, ContentField
// "reasoning_content" for the text); empty, Content goes back with Field
// or not at all. Each holds one name, never a list, so comparing either
// with == asks one question. Data is structured reasoning exactly as the
// server sent it, kept as text so that storage keeps it byte for byte.
type Reasoning struct {
	Content      string `json:"content"`
	Signature    string `json:"signature,omitempty"`
	Field        string `json:"field,omitempty"`
	ContentField string `json:"content_field,omitempty"`
	Data         string `json:"data,omitempty"`
}

// ToolCall is the model's request to run a tool. Arguments is the JSON text
// exactly as the model produced it: it may be invalid, and it is kept as it
// came so that the error the model is shown can quote it.
type ToolCall struct {
	ID        string `json:"id"`
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

// ToolResult answers one ToolCall. Content is what the model is shown; it may
// be cut to a budget, in which case Truncated is set and Full holds the whole
// rendering, unless that is larger than the executor keeps (then Full is
// empty and Content's marker says so). Value is the Go value the tool
// returned, for the application; it is not persisted.
type ToolResult struct {
	ToolCallID string `json:"tool_call_id"`
	Name       string `json:"name"`
	Content    string `json:"content"`
	IsError    bool   `json:"is_error,omitempty"`
	Truncated  bool   `json:"truncated,omitempty"`
	Full       string `json:"full,omitempty"`
	// Parts carries non-text content a tool returned (images, audio,
	// embedded resources), in the order the tool gave it.
	Parts List `json:"parts,omitempty"`
	Value any  `json:"-"`
}

// Usage reports the tokens one model invocation consumed. InputTokens is
// the whole prompt, cached or not; CachedInputTokens is the part of it read
// from the server's prompt cache, and CacheWriteTokens the part written to
// it (which some servers bill above the normal rate). OutputTokens holds
// ReasoningTokens.
type Usage struct {
	InputTokens       int64 `json:"input_tokens"`
	OutputTokens      int64 `json:"output_tokens"`
	CachedInputTokens int64 `json:"cached_input_tokens,omitempty"`
	CacheWriteTokens  int64 `json:"cache_write_tokens,omitempty"`
	ReasoningTokens   int64 `json:"reasoning_tokens,omitempty"`
	// Model is the model that answered, when the provider or the loop
	// says; CostUSD is what the usage cost in US dollars, set when the
	// loop has a Pricer, and Priced whether the model had a price (an
	// unpriced model costs 0 and is not free).
	Model   string  `json:"model,omitempty"`
	CostUSD float64 `json:"cost_usd,omitempty"`
	Priced  bool    `json:"priced,omitempty"`
}

// Total is the sum of input and output tokens.
func (u Usage) Total() int64 { return u.InputTokens + u.OutputTokens }

// Image is a picture given to or produced by a model: by URL, or inline as
// Data with its MIME type.
type Image struct {
	URL      string `json:"url,omitempty"`
	MIMEType string `json:"mime_type,omitempty"`
	Data     []byte `json:"data,omitempty"`
	// Detail is a fidelity hint some APIs take ("low", "high", "auto").
	Detail string `json:"detail,omitempty"`
}

// Audio is sound given to or produced by a model or a tool, inline.
type Audio struct {
	MIMEType string `json:"mime_type,omitempty"`
	Data     []byte `json:"data"`
}

// Resource is a document a tool returned whole, as MCP's embedded
// resources are: Text for text, Blob otherwise.
type Resource struct {
	URI      string `json:"uri"`
	MIMEType string `json:"mime_type,omitempty"`
	Text     string `json:"text,omitempty"`
	Blob     []byte `json:"blob,omitempty"`
}

// ResourceLink points at a document a tool did not return, by URI.
type ResourceLink struct {
	URI         string `json:"uri"`
	Name        string `json:"name,omitempty"`
	Title       string `json:"title,omitempty"`
	Description string `json:"description,omitempty"`
	MIMEType    string `json:"mime_type,omitempty"`
	Size        *int64 `json:"size,omitempty"`
}

// Finish records why the model stopped ("stop", "tool_calls", "length",
// "content_filter", FinishPauseTurn, or whatever the server said).
type Finish struct {
	Reason string `json:"reason"`
}

// FinishPauseTurn is the Finish reason of an answer the server paused in
// the middle of its own tools' work (Anthropic's server tools, such as web
// search): sent the thread as it stands, the server carries the same
// answer on. loop's Step.Run takes another turn for it.
const FinishPauseTurn = "pause_turn"

// Summary stands, in the requests a history policy builds, for the turns
// First to Last (indexes from 0, both included) of the thread it is stored
// in. Those turns stay in the ledger as they were; the summary is a turn of
// its own, so a thread reloaded from any store gives the same request.
// Adapters do not send it unless a policy puts its Content in a request.
type Summary struct {
	Content string `json:"content"`
	First   int    `json:"first"`
	Last    int    `json:"last"`
}

// TextDelta is a fragment of a Text being streamed.
type TextDelta struct {
	Content string `json:"content"`
}

// ReasoningDelta is a fragment of a Reasoning being streamed.
type ReasoningDelta struct {
	Content string `json:"content"`
}

// ToolCallDelta is a fragment of a tool call being streamed. Index tells the
// calls of one response apart; ID and Name usually come in the first
// fragment of a call and Arguments grows across fragments.
type ToolCallDelta struct {
	Index     int    `json:"index"`
	ID        string `json:"id,omitempty"`
	Name      string `json:"name,omitempty"`
	Arguments string `json:"arguments,omitempty"`
}

func (Text) Kind() string           { return KindText }
func (Reasoning) Kind() string      { return KindReasoning }
func (ToolCall) Kind() string       { return KindToolCall }
func (ToolResult) Kind() string     { return KindToolResult }
func (Usage) Kind() string          { return KindUsage }
func (Image) Kind() string          { return KindImage }
func (Finish) Kind() string         { return KindFinish }
func (Audio) Kind() string          { return KindAudio }
func (Resource) Kind() string       { return KindResource }
func (ResourceLink) Kind() string   { return KindResourceLink }
func (Summary) Kind() string        { return KindSummary }
func (TextDelta) Kind() string      { return KindTextDelta }
func (ReasoningDelta) Kind() string { return KindReasoningDelta }
func (ToolCallDelta) Kind() string  { return KindToolCallDelta }

func (TextDelta) isDelta()      {}
func (ReasoningDelta) isDelta() {}
func (ToolCallDelta) isDelta()  {}

// IsDelta reports whether a is a stream fragment rather than a whole artifact.
func IsDelta(a Artifact) bool {
	_, ok := a.(Delta)
	return ok
}
