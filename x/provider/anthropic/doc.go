// Package anthropic is lode's provider for Claude through Anthropic's own
// Messages API, built on the official Go SDK
// (github.com/anthropics/anthropic-sdk-go/v2): the SDK builds and sends the
// request and decodes the stream's events; this package maps lode's ledger
// to the request and assembles the events into artifacts.
//
// New checks its configuration up front, with the openai adapter's names:
// a model is required (WithModel), and an API key (WithAPIKey, else
// ANTHROPIC_API_KEY) unless a base URL is set (WithBaseURL, else
// ANTHROPIC_BASE_URL). WithEnv changes how those variables are read; the
// SDK reads no environment of its own.
//
// Invoke streams the answer: TextDelta, ReasoningDelta and ToolCallDelta as
// they arrive, then the whole artifacts in the order the server sent its
// content blocks, then Usage and Finish. A stream is whole only with a
// message_stop and a stop reason; anything less is ErrIncomplete, never a
// short answer. WithStreaming(false) asks for one whole message instead.
//
// What maps to what:
//
//	ledger / provider.Request          Messages API
//	system turns (all, in order)       system (text blocks)
//	user Text, Image, Resource         user text, image (base64 or URL), document
//	                                   (text, PDF), image resource; ResourceLink as a text line
//	assistant Text                     text block
//	assistant Reasoning{Content,       thinking block, signature unchanged
//	  Signature}
//	assistant Reasoning{Field:         redacted_thinking block, data unchanged
//	  "redacted_thinking", Data}
//	assistant ToolCall                 tool_use (Arguments as the input object)
//	tool turn ToolResult               tool_result in the next user message: Content as
//	                                   text, Parts as images and documents, IsError as is_error
//	Tools                              tools (schema as input_schema)
//	ToolChoice auto/none/required/tool tool_choice auto/none/any/tool
//	ParallelToolCalls false            disable_parallel_tool_use
//	MaxTokens (0: DefaultMaxTokens)    max_tokens
//	Temperature, TopP, Stop            temperature, top_p, stop_sequences
//	WithThinkingBudget / WithThinking  thinking {type: enabled, budget_tokens}
//	ResponseFormat json_schema         output_config.format {type: json_schema, schema}
//	assistant Opaque{Provider:          the block in Data, unchanged, where it was
//	  "anthropic"}                     (citations: on the text block before them)
//	assistant Opaque{Type:             container: the id the newest answer
//	  "container"}                     reported, unless expired (never a block)
//
//	Messages API answer                artifacts
//	text block                         Text
//	thinking block                     Reasoning{Content, Signature}
//	redacted_thinking block            Reasoning{Field: "redacted_thinking", Data}
//	tool_use block                     ToolCall (arguments as streamed)
//	citations of a text block          Opaque{Type: "citations", Data: the array}
//	                                   right after the Text
//	container (of the message, or of   Opaque{Type: "container", Data: the object as
//	  message_start, message_delta)    sent} after the blocks; null: none
//	any other block (server_tool_use,  Opaque{Type: the block's type, Data: the
//	  web_search_tool_result,          block as sent; a streamed input put in}
//	  code_execution_tool_result, ...)
//	usage                              Usage: InputTokens = input + cache reads + cache
//	                                   writes (the whole prompt, as with OpenAI);
//	                                   CachedInputTokens = cache reads; CacheWriteTokens = writes
//	stop_reason end_turn, stop_sequence Finish "stop"; tool_use "tool_calls";
//	                                   max_tokens "length"; refusal "content_filter"; others as sent
//
// Choices this adapter makes:
//   - Consecutive tool results, and a user turn after them, join one user
//     message, tool results first. Consecutive user turns join one
//     message, and so do consecutive assistant turns, so the roles always
//     alternate. A system turn anywhere joins the system field.
//   - A turn with nothing to send makes no message, never an empty one
//     (the API refuses empty content): a user message an input guard
//     stopped, which a request carries without its artifacts, and an
//     answer an output guard stopped, left with Usage and Finish. The user
//     messages on either side of such an answer join one message.
//   - Assistant blocks go back in the order the ledger holds them, which is
//     the order the server sent them, so thinking precedes the tool use it
//     came with. Reasoning without a signature (from another server) is not
//     sent, since the API refuses thinking it cannot verify; Usage and
//     Finish are not sent.
//   - What other packages keep in the ledger for themselves is not sent:
//     an artifact.Summary in a system or user turn (a history policy puts
//     its text in the request), artifact.Pending and artifact.Decision in
//     a tool turn (approval records; the model sees only the results),
//     and artifact.Tripwire in any turn (a guard's record).
//   - Tool-call arguments that are not a JSON object go back as {}: the API
//     takes only objects, and the tool's result has told the model already.
//   - With thinking on, a Temperature other than 1, a TopP below 0.95 and a
//     forced tool choice (required, tool) are refused with a *RequestError
//     rather than dropped, and MaxTokens must exceed the budget; with
//     MaxTokens 0, max_tokens is DefaultMaxTokens plus the budget.
//   - Prompt caching is on by default (CacheAuto): breakpoints on the last
//     tool, the last system block, the newest message and the user message
//     before it — four, the API's maximum — so each turn reads what the
//     previous one wrote. CacheStable marks only tools and system, CacheOff
//     nothing; WithCacheTTL(time.Hour) asks for the longer cache.
//   - Structured outputs: a json_schema ResponseFormat goes out as
//     output_config.format (no beta header; the format has no name, and
//     the Description leads the schema's description) to the models of
//     the table below (StructuredOutputs); WithStructuredOutputs(true or false) overrides the table (a newer
//     model, a gateway alias). SupportsResponseFormat reports json_schema
//     by it, never json_object (a *RequestError: the API has no such mode),
//     and CheckResponseFormat says up front whether a schema can go, so
//     x/output's ModeAuto takes a final-answer tool where it cannot. The
//     schema is rewritten into what structured outputs take: objects with
//     properties get additionalProperties false, oneOf becomes anyOf, a
//     $ref goes alone, $schema and $id are dropped, and the constraints
//     the API does not enforce (minimum, maxLength, minItems above 1,
//     other formats, ...) become a note in the description, which x/output
//     still validates. What no rewrite keeps is a *RequestError naming the
//     place (a *SchemaError): an open object or map, a recursive or external
//     $ref, an enum of objects, tuple items, more than 24 optional
//     properties or 16 union types.
//   - Server tools (web search, web fetch, code execution, tool search, MCP
//     connector): the blocks they add to an answer are kept as
//     artifact.Opaque, which every store keeps byte for byte, and go
//     back on the next request in the place they came, as the same JSON
//     (the SDK escapes <, > and & in every string it sends); citations ride
//     on their text block. A streamed block whose deltas this package
//     cannot put back together (a delta kind it does not know) is dropped;
//     one whose streamed input is not JSON is ErrMalformed. Their use does
//     not stream as ToolCallDelta: lode runs no such call. Other adapters
//     leave Opaque out. A pause_turn stop reason passes as Finish
//     "pause_turn" (artifact.FinishPauseTurn), which loop's Step.Run
//     carries on: the next request ends with the paused answer, as the
//     API asks, less the trailing white space the API refuses there.
//   - The code execution tool's container (its sandbox: files written,
//     packages installed) is carried from one request to the next. The
//     container an answer reports ({"id", "expires_at"}, in message_delta
//     when streamed) is kept in the answer as an artifact.Opaque of Type
//     "container", after its blocks, so a thread in any store, or a
//     cassette, keeps it; the next request names the container of the
//     newest answer that reported one, by id, as the API requires to carry
//     on a pause_turn with code execution or a call made from code, and as
//     it takes to keep the files of an earlier turn. One that has expired
//     by the request's time (WithClock; expires_at at or before it) is not
//     named, and no older one is: the server then starts a fresh container
//     without the old files, and may refuse a carrying-on that needed the
//     old one. A container that is not an object with a string id and an
//     RFC 3339 expires_at is ErrMalformed in an answer (streamed, after
//     its deltas) and a *RequestError kept in the ledger; a content block
//     of type "container", which the API does not send, is dropped rather
//     than read as one. The Opaque is never sent as a block, and the other
//     adapters leave it out. Since it rides in the thread, every door that
//     keeps one (the Go API, lode run, chat, serve, web) carries it with
//     no setting; a child agent (x/agent) runs each call on a thread of
//     its own, so its container lasts one call. A history policy that
//     leaves the answer out of the request leaves its container out too.
//   - Deferred tools (tool.Tool.Deferred, which x/tool/toolsearch's Native
//     sets): each goes with defer_loading true, after the BM25 tool search
//     tool (tool_search_tool_bm25_20251119), which the request then
//     carries; the cache breakpoint goes on the last tool sent in the
//     prompt, never a deferred one. The server's search and its
//     tool_reference results come back as server blocks (above).
//   - Tool-result audio, and binary resources other than PDFs and images,
//     become a bracketed note when the result has no Content; in a user
//     turn they are a *RequestError.
//
// Models that take structured outputs, by family (vendor prefixes and date
// suffixes looked through):
//
//	family      from  so
//	opus        4.5   claude-opus-4-5, claude-opus-4-6, ...; not Opus 4 or 4.1
//	sonnet      4.5   claude-sonnet-4-5, claude-sonnet-4-6, ...; not Sonnet 4
//	haiku       4.5   claude-haiku-4-5; not Haiku 3 or 3.5
//	any other   5     claude-fable-5, claude-mythos-5-2, ...
//	claude-3-*  none  claude-3-7-sonnet, claude-3-5-haiku, ...
//
// Failures are typed as in the openai adapter: *APIError for a refusal or
// an error event in the stream (errors.Is against ErrInvalidRequest,
// ErrUnauthorized, ErrForbidden, ErrNotFound, ErrRateLimited, ErrOverloaded,
// ErrServer; the API's message and a Hint saying what to fix), with 429,
// 5xx and 529 retried up to WithMaxRetries times, waiting what the server
// asks (retry-after-ms, retry-after, anthropic-ratelimit-*-reset) up to
// WithMaxRetryWait; *ResponseError for a stream that breaks the protocol
// (ErrIncomplete, ErrMalformed, ErrInvalidToolCall); *RequestError for a
// request that cannot be sent; *TimeoutError for WithTimeout (ErrTimeout,
// off unless set) and WithIdleTimeout (ErrIdleTimeout: DefaultIdleTimeout
// of silence while streaming; the API's pings reset it). Without streaming
// the SDK bounds a request to ten minutes and refuses, unsent, a max_tokens
// it expects to take longer.
//
// WithTracer records a "chat {model}" span per invocation after the
// OpenTelemetry GenAI conventions, with token usage including cache reads
// and writes; a failed one carries the API's error type (or another name
// from a closed set) as its status text and error.type. ContextWindow reports the window of known Claude models
// (200,000 tokens for Claude 3.x and 4.x; the 1M window of Sonnet 4 and
// later needs the anthropic-beta header "context-1m-2025-08-07", sent with
// WithHeader, and is not assumed).
package anthropic
