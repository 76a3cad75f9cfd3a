// Package gemini is lode's provider for Google's Gemini models, through the
// Gemini API or Vertex AI, built on the official Go SDK
// (google.golang.org/genai): the SDK maps the contents and config to the
// backend's wire format, builds the URL and authenticates (API key, or
// Vertex AI's Google credentials); this package maps lode's ledger to the
// SDK's types and reads the answer's wire format itself, which is several
// times cheaper than the SDK's decoder and keeps what its types cannot
// (function-call arguments as sent, parts of kinds it does not know).
//
// New checks its configuration up front: a model is required (WithModel).
// The Gemini API (the default) needs an API key (WithAPIKey, else
// GOOGLE_API_KEY, else GEMINI_API_KEY). Vertex AI (WithBackend
// (BackendVertexAI), or GOOGLE_GENAI_USE_VERTEXAI=true) needs a project
// (WithProject, GOOGLE_CLOUD_PROJECT) and a location (WithLocation,
// GOOGLE_CLOUD_LOCATION or GOOGLE_CLOUD_REGION, else "global") with
// credentials (WithCredentials, else Application Default Credentials), or
// an API key alone (express mode). WithBaseURL (GOOGLE_GEMINI_BASE_URL, GOOGLE_VERTEX_BASE_URL) points
// it at a gateway or a test server. WithEnv changes how variables are read;
// the SDK is handed every value explicitly, and these win over what it
// reads of the environment itself.
//
// Invoke streams the answer (streamGenerateContent with alt=sse): TextDelta,
// ReasoningDelta and ToolCallDelta as they arrive, then the whole artifacts
// in the order of the parts, then Usage and Finish. An answer is whole only
// with a finish reason; anything less is ErrIncomplete, never a short
// answer. WithStreaming(false) asks generateContent for one whole answer.
// A server that answers the stream as one JSON array (without alt=sse) is
// read too.
//
// What maps to what:
//
//	ledger / provider.Request          Gemini API
//	system turns (all, in order)       systemInstruction (text parts)
//	user Text, Image, Audio, Resource  text, inlineData (bytes), fileData (an image URL,
//	                                   gs:// or https); ResourceLink as a text line
//	assistant Text                     text part (role "model")
//	assistant ToolCall                 functionCall {id, name, args} (id only if the server
//	                                   sent one; arguments that are not an object as {})
//	Reasoning{Field: FieldThought}     thought part {thought, text, thoughtSignature}
//	Reasoning{Field: FieldSignature}   the thoughtSignature of the next Text or ToolCall's
//	                                   part (an empty text part if none follows)
//	Reasoning{Field: FieldPart, Data}  the part exactly as kept (executable code, ...)
//	tool turn ToolResult               functionResponse {id, name, response: {"output": Content}
//	                                   or {"error": Content}}, images in its parts
//	Tools                              tools[0].functionDeclarations (parametersJsonSchema)
//	ToolChoice auto/none/required/tool toolConfig.functionCallingConfig AUTO/NONE/ANY/ANY
//	                                   with allowedFunctionNames
//	MaxTokens, Temperature, TopP, Stop maxOutputTokens, temperature, topP, stopSequences
//	ResponseFormat json_schema         responseMimeType application/json + responseJsonSchema
//	ResponseFormat json_object         responseMimeType application/json
//	WithThinkingBudget, WithThinking-  thinkingConfig {thinkingBudget, thinkingLevel,
//	  Level, WithThoughts; WithThinking  includeThoughts}; WithThinking's budget for one
//	  per invocation                     invocation
//
//	Gemini answer                      artifacts
//	text parts                         Text (consecutive unsigned parts joined; a part with
//	                                   a thoughtSignature is a Text of its own, after a
//	                                   Reasoning{Field: FieldSignature})
//	thought parts                      Reasoning{Field: FieldThought, Content, Signature}
//	                                   (consecutive parts joined until a second signature)
//	functionCall (several: parallel)   ToolCall each (an ID made when the server sent none)
//	other parts                        Reasoning{Field: FieldPart, Data: the part's JSON}
//	usageMetadata                      Usage: InputTokens = promptTokenCount (cached
//	                                   content included) + toolUsePromptTokenCount;
//	                                   OutputTokens = candidates + thoughts; ReasoningTokens =
//	                                   thoughtsTokenCount; CachedInputTokens =
//	                                   cachedContentTokenCount
//	finishReason STOP                  Finish "stop", or "tool_calls" when the answer calls
//	MAX_TOKENS                         Finish "length"
//	SAFETY, RECITATION, BLOCKLIST,     Finish "content_filter" (what came before it is kept)
//	  PROHIBITED_CONTENT, SPII, IMAGE_*
//	MALFORMED_FUNCTION_CALL,           *ResponseError matching ErrInvalidToolCall, with the
//	  UNEXPECTED_TOOL_CALL,              finishMessage
//	  TOO_MANY_TOOL_CALLS
//	others (OTHER, LANGUAGE, ...)      Finish in lower case
//	promptFeedback.blockReason         *ResponseError matching ErrBlocked
//
// Thought signatures go back exactly as received, on the same parts: the
// ledger keeps each one as the server's text, and the SDK encodes it back
// to the same standard base64. Reasoning of other adapters is not sent, as
// Gemini refuses a signature it did not make. Usage and Finish are not
// sent, nor approval records and summaries (a history policy puts its text
// in the request), nor an artifact.Tripwire in any turn (a guard's record),
// nor another adapter's artifact.Opaque in an answer or a tool turn
// (Claude's server tool blocks, citations and code execution container).
// Consecutive turns of one role join one content, and a turn with nothing
// to send (a user message an input guard stopped, an answer an output guard
// stopped, an empty text) makes no content and no part, which the API
// would refuse. ParallelToolCalls has no Gemini counterpart and is
// ignored; only the first candidate is read.
//
// Failures are typed as in the other adapters: *APIError for a refusal
// with Google's error object, or one inside a stream (errors.Is against
// ErrInvalidRequest, ErrUnauthorized, ErrForbidden, ErrNotFound,
// ErrRateLimited, ErrOverloaded, ErrServer, by HTTP status or Google's
// status name; a Hint saying what to fix), with 429 and 5xx retried up to
// WithMaxRetries times, waiting what the server asks (Retry-After, or the
// RetryInfo detail's retryDelay) up to WithMaxRetryWait; *ResponseError for
// an answer that breaks the protocol or carries none (ErrIncomplete,
// ErrMalformed, ErrInvalidToolCall, ErrBlocked); *RequestError for a
// request that cannot be sent; *TimeoutError for WithTimeout (ErrTimeout)
// and WithIdleTimeout (ErrIdleTimeout: DefaultIdleTimeout of silence while
// streaming).
//
// WithTracer records a "chat {model}" span per invocation after the
// OpenTelemetry GenAI conventions (gen_ai.provider.name gcp.gemini or
// gcp.vertex_ai), with token usage including cached tokens; a failed one
// carries Google's status name (or another name from a closed set) as its
// status text and error.type.
package gemini
