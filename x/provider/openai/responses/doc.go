// Package responses is lode's provider for OpenAI's Responses API
// (POST {base}/responses), and for the servers that speak it (Azure
// OpenAI's /openai/v1, gateways).
//
// It is built on github.com/sashabaranov/go-openai, the SDK the
// chat-completions adapter already uses, rather than the official
// openai-go: go-openai v1.43 speaks the Responses API (CreateResponse,
// CreateResponseStream), so the root module takes no second OpenAI SDK.
// go-openai frames the request, sends it through this package's transport
// (retries, idle limit) and splits the stream into events; this package
// decodes each event itself, since go-openai's item type has no
// encrypted_content and the reasoning round trip needs it. The stream's
// "event:" lines are dropped before go-openai reads it, since every event's
// data names its type and go-openai would keep each such line until the
// stream ends.
//
// It lives under x/provider/openai, not beside it, because it is OpenAI's
// API on the same SDK, with the same environment variables, error texts
// and strict-schema rule (openai.CheckStrict): one family, two endpoints.
// Its import name and error prefix are "responses".
//
// New takes the chat adapter's option names: WithModel is required, and an
// API key (WithAPIKey, else OPENAI_API_KEY) unless a base URL is set
// (WithBaseURL, else OPENAI_BASE_URL). The key goes as a bearer token;
// Azure OpenAI's v1 API (https://NAME.openai.azure.com/openai/v1) also
// takes it as WithHeader("api-key", key) with no WithAPIKey.
//
// Invoke streams the answer: TextDelta, ReasoningDelta (reasoning summaries)
// and ToolCallDelta as the events arrive, then the output items whole in
// the order the server sent them, then Usage and Finish. An answer is whole
// only with response.completed or response.incomplete; a stream that ends
// before is ErrIncomplete, never a short answer. WithStreaming(false) asks
// for one whole response instead.
//
// What maps to what:
//
//	ledger / provider.Request          Responses API request
//	system, user turns                 input messages (role system, user): input_text,
//	                                   input_image, input_file (PDF); ResourceLink as text
//	assistant Text                     input message, role assistant
//	assistant Reasoning{Field:         the reasoning item exactly as received (ID, summary,
//	  FieldItem, Data}                 encrypted_content)
//	assistant ToolCall                 function_call {call_id, name, arguments}
//	assistant Opaque{Provider:         the tool search item exactly as received
//	  OpaqueProvider, Data}
//	tool turn ToolResult               function_call_output {call_id, output}: Content as
//	                                   text; images and PDFs in Parts as a list
//	Tools                              function tools, strict as openai.CheckStrict allows
//	Tools marked Deferred              defer_loading: true, and {type: tool_search} last
//	                                   (gpt-5.4 and later, or WithToolSearch(true))
//	ToolChoice auto/none/required/tool tool_choice (auto sent as nothing), {type: function}
//	ParallelToolCalls                  parallel_tool_calls (only with tools)
//	MaxTokens, Temperature, TopP       max_output_tokens, temperature, top_p
//	ResponseFormat                     text.format json_schema (strict as above) or json_object
//	WithThreadCacheKey, WithPromptCacheKey  prompt_cache_key
//	WithReasoningEffort, WithEffort,   reasoning {effort, summary}
//	  WithReasoningSummary
//	(always)                           store: false, include: [reasoning.encrypted_content]
//
//	Responses API answer               artifacts
//	message item                       Text (output_text parts joined; a refusal's text too)
//	reasoning item                     Reasoning{Content: summary parts joined by a blank
//	                                   line, Signature: encrypted_content, Field: FieldItem,
//	                                   Data: the item's JSON}
//	function_call item                 ToolCall{ID: call_id} (arguments as the model wrote them)
//	tool_search_call,                  Opaque{Provider: OpaqueProvider, Type: the item's
//	  tool_search_output items         type, Data: the item's JSON}
//	usage                              Usage: InputTokens = input_tokens (cached included),
//	                                   CachedInputTokens, OutputTokens (reasoning included),
//	                                   ReasoningTokens
//	status completed                   Finish "tool_calls" with function calls,
//	                                   "content_filter" after a refusal, else "stop"
//	status incomplete                  Finish "length" (max_output_tokens), "content_filter",
//	                                   or the API's reason as sent
//	status failed, error event         *APIError (StatusCode 0, the API's code and message)
//
// Choices this adapter makes:
//   - The ledger is the truth. Every request carries the whole history and
//     store: false, so reasoning comes back encrypted and goes back from the
//     ledger unchanged, right before the function call it led to; nothing
//     depends on what the server kept. WithPreviousResponse turns chaining
//     on instead: store: true, each answer keeps its response ID (a
//     Reasoning with Field FieldResponseID and no Content), and the next
//     request sends previous_response_id with only the turns after it.
//   - Reasoning of other servers (no item) is not sent, nor a reasoning
//     item without encrypted_content (with store: false its ID names
//     nothing the server kept), nor another adapter's artifact.Opaque,
//     nor Usage and Finish. Server-side tool items (web search, code
//     interpreter) are not kept, since they are not asked for.
//   - An artifact.Tripwire, a guard's record, is not sent from any turn,
//     and a turn with nothing left to send (a user message an input guard
//     stopped, an answer an output guard stopped) is no item: input is a
//     list of items, so the user message after it simply follows. A
//     stopped answer keeps no response ID, so with WithPreviousResponse
//     the chain goes on from the answer before it, which the stopped one
//     is not part of.
//   - Deferred tools (tool.Tool.Deferred, which x/tool/toolsearch's Native
//     sets) go with defer_loading, and the request carries the hosted
//     tool_search tool after the functions, when the model has it:
//     SupportsToolSearch says gpt-5.4 and later, as OpenAI's guide does,
//     and WithToolSearch overrides it for a name it cannot read (an Azure
//     deployment). On any other model they go as ordinary functions, as
//     tool.Tool.Deferred asks of an adapter without a search, and the
//     model sees them all; with Native's Gate a call to one the record
//     does not hold is refused, so such a model wants lode's own search.
//     The server runs the search within the answer: its tool_search_call
//     and tool_search_output items are kept as artifact.Opaque in their
//     place and go back on the next request as they came (as the same
//     JSON: compacted, and with <, > and & escaped, as every string sent
//     is). A function the model calls after loading it is an ordinary
//     ToolCall. A search item that says the client must run it
//     (execution "client": this adapter offers only the server's), or an
//     output without a list of tool objects, is ErrMalformed. What the
//     output loads is the server's word: toolsearch's Recorder records
//     only tools its Search defers, and a call to any other tool is
//     refused by the handler as for any unknown tool.
//   - Stop sequences are a *RequestError: the API has no field for them.
//   - A function's strict flag is always sent, since the API would take a
//     schema without one as strict and refuse those strict mode cannot
//     express.
//   - Output items must be added in order (output_index 0, 1, ...) and
//     deltas must address an added item of the right type; anything else is
//     ErrMalformed, and so is a line longer than DefaultMaxLine (go-openai
//     would read it whole). Events this adapter does not map are skipped.
//
// Failures are typed as in the other adapters: *APIError for a refusal
// (errors.Is against ErrInvalidRequest, ErrUnauthorized, ErrForbidden,
// ErrNotFound, ErrRateLimited, ErrServer, ErrContextLength; the API's
// message, code and param, and a Hint), with 429 and 5xx retried up to
// WithMaxRetries times, waiting what the server asks (retry-after-ms,
// Retry-After, x-ratelimit-reset-*) up to WithMaxRetryWait, but never for
// insufficient_quota; *ResponseError for a stream that breaks the protocol
// (ErrIncomplete, ErrMalformed, ErrInvalidToolCall); *RequestError for a
// request that cannot be sent; *TimeoutError for WithTimeout and
// WithIdleTimeout (DefaultIdleTimeout of silence while streaming).
//
// WithTracer records a "chat {model}" span per invocation after the
// OpenTelemetry GenAI conventions, with the response ID, finish reason and
// token usage; a failure's status and error.type come from a closed set.
package responses
