// Package openai is lode's provider for the OpenAI chat-completions API and
// every server that speaks it (vLLM, llama.cpp, Ollama, LiteLLM, ...), built
// on github.com/sashabaranov/go-openai.
//
// New checks its configuration up front: a model is always required, and an
// API key is required unless a base URL is set, since a local server usually
// needs none. WithAPIKey and WithBaseURL fall back to OPENAI_API_KEY and
// OPENAI_BASE_URL (read through WithEnv's lookup when one is given).
//
// Invoke turns the ledger into messages (system, user text and images,
// assistant text, reasoning and tool calls, one tool message per result),
// offers Request.Tools as functions (strict where CheckStrict allows) and
// streams the answer: text, reasoning and tool-call deltas as they arrive,
// then the whole artifacts in order — Reasoning, Text, ToolCalls by index,
// Usage, Finish. Tool-call fragments are joined by index, however they
// interleave; arguments are kept exactly as the model wrote them, valid
// JSON or not. Cancelling the context ends the stream at once.
//
// Failures are typed: *APIError for an HTTP refusal (errors.Is against
// ErrUnauthorized, ErrNotFound, ...; 429 and 5xx are retried with bounded
// backoff that honours Retry-After), *ResponseError for a response that
// breaks the protocol (ErrIncomplete, ErrMalformed, ErrInvalidToolCall) and
// *RequestError for a history or tool set that cannot be sent.
//
// Tests of code built on this adapter can run it against
// x/provider/openai/openaitest, a loopback server that replays canned
// stream replies and records what was sent.
//
// Two limits keep a stalled server from hanging an agent: WithIdleTimeout
// (DefaultIdleTimeout, two minutes, unless set) bounds any silence from the
// server — before a stream's first byte and between any two reads of a
// body — and WithTimeout (off unless set) bounds the whole invocation. The
// one that fires ends the invocation with a *TimeoutError that names it and
// the option that changes it, matching ErrTimeout (and ErrIdleTimeout for
// the idle limit) through loop.Run's errors too.
//
// Choices this adapter makes, for servers to agree with:
//   - MaxTokens goes out as max_completion_tokens to OpenAI and Azure
//     OpenAI, and for OpenAI's reasoning models (o1, o3, o4, gpt-5, gpt-6
//     and their variants, also as a gateway names them: "openai/gpt-5") to
//     any server; as max_tokens otherwise (WithMaxTokensField chooses); WithReasoningEffort goes out as reasoning_effort, or as
//     "reasoning": {"effort": ...} to OpenRouter (WithReasoningEffortField
//     chooses). Any other member a server takes is set with
//     WithExtraBodyField (every request) or WithBodyField (one invocation);
//     it replaces the adapter's member of the same name.
//   - A Temperature or TopP of 0 is sent as 0 (go-openai alone would drop it).
//   - go-openai's own refusals by model name (max_tokens, temperature or
//     tools for some reasoning models) never stop a request: the request
//     is sent, and the server, which may be a gateway that maps fields, has
//     the say.
//   - Reasoning from earlier answers goes back where the server put it,
//     unless WithSendReasoning(false): reasoning_details exactly as received
//     (a streamed list has its fragments joined by index), with the text as
//     reasoning_content too when it came there beside them, else the text
//     as "reasoning" or "reasoning_content". Reasoning that no server of this
//     adapter wrote goes back as reasoning_content. A field the server did
//     not use is never sent.
//   - Usage: tokens a server counts beside completion_tokens (reasoning
//     tokens above completion_tokens, or total_tokens above prompt plus
//     output) are output tokens all the same, so totals and
//     loop.WithMaxTokens include them; cached input is read from
//     prompt_tokens_details.cached_tokens, prompt_cache_hit_tokens and
//     cached_tokens.
//   - A 429 or 5xx waits as long as the server asks (retry-after-ms,
//     Retry-After in seconds or as a date, and on a 429 the
//     X-RateLimit-Reset family), never less; a wait longer than
//     WithMaxRetryWait is not waited for, and a 429 that names none backs
//     off exponentially with jitter.
//   - Usage and Finish in assistant turns are not sent, nor is an
//     artifact.Opaque anywhere: it is another adapter's (Claude's server
//     tool blocks, citations and code execution container, the Responses
//     API's tool search items). Nor is an artifact.Tripwire, in any turn:
//     it records that a guard stopped a turn, for the application.
//   - A turn with nothing to send (a user message an input guard stopped,
//     which a request carries without its artifacts; an answer an output
//     guard stopped, left with Usage and Finish) is no message at all,
//     never an empty one. The user message after it then follows a user
//     message: the API takes consecutive user messages as they are, so
//     they are not joined.
//   - A tool message carries only text, so a ToolResult goes out as its
//     Content, which is what the model is meant to see (x/tool/mcp notes
//     each image, audio clip or binary resource there in brackets). Parts
//     are not added to a Content that is set; a result with no Content
//     sends the text of its text parts and text resources and a bracketed
//     note for each part it cannot carry ("[image image/png, 812 bytes —
//     not shown: ...]"), and a result with neither is "(no output)".
//     Images are never moved into a user message instead: a tool's output
//     would then speak with the user's authority.
//   - In system and user turns a text Resource is sent as text under its
//     URI and a ResourceLink as a line naming it; a user's image Resource
//     is sent as an image. Audio, and any other binary resource, is a
//     *RequestError: go-openai's messages carry only text and images.
//   - A request is not sent on a context already cancelled, and an error
//     response is read only up to 64 KiB and always closed.
//   - A stream is whole when it closes cleanly after a finish reason, with
//     or without a closing "data: [DONE]"; one that ends with neither, or
//     breaks, is ErrIncomplete, never a short answer. Lines may end in CRLF.
//   - A tool call the server sent without an ID gets a random one.
//   - Request.ResponseFormat goes out as response_format: json_object as
//     it is; json_schema with the schema, named "answer" unless named, and
//     strict exactly when a tool with that schema would be (CheckStrict,
//     WithStrictTools). SupportsResponseFormat reports json_object for
//     every server and json_schema for OpenAI and Azure OpenAI hosts, or as
//     WithJSONSchemaFormat says: x/output falls back to a final-answer tool
//     elsewhere.
//   - A failed "chat {model}" span (WithTracer) carries one name from a
//     closed set as both its status text and its error.type: the HTTP
//     status, "stream_error", "timeout", "idle_timeout", "canceled",
//     "incomplete_response", "malformed_response", "invalid_tool_call",
//     "invalid_request" or "_OTHER". The error's own text, which may quote
//     the request, stays in the span's exception event.
//
// # Servers
//
// What differs between the servers this adapter is used with, and what it
// does about it:
//
//	server family         what differs                                   what lode does
//	OpenAI, Azure OpenAI  reasoning models refuse max_tokens             max_completion_tokens by host
//	any gateway           forwards o1/o3/o4/gpt-5 models, which refuse   max_completion_tokens by model
//	                      max_tokens; names them "openai/gpt-5"          family, vendor prefix ignored
//	Vercel (Gemini)       reasoning_tokens above completion_tokens,      reasoning added to output
//	                      left out of total_tokens
//	Kimi (Avian)          reasoning_content and reasoning_details;       both sent back as received
//	                      refuses tool calls without reasoning_content
//	OpenRouter            reasoning + reasoning_details (typed items,    details joined by index, kept and
//	                      signatures, encrypted data); effort object;    sent back as received; effort as
//	                      X-RateLimit-Reset in Unix ms                   "reasoning": {"effort"}; reset read
//	DeepSeek              reasoning_content; prompt_cache_hit_tokens     read both, reasoning sent back there
//	Gemini (OpenAI API)   no data: [DONE]; reasoning beside completion   whole after a finish reason; total
//	                      tokens in total_tokens                         above prompt+completion is output
//	xAI                   reasoning_tokens beside completion_tokens      counted as output tokens
//	Groq, OpenAI          x-ratelimit-reset-* as durations ("7.66s")     waited for, exhausted limit first
//	Mistral, llama.cpp,   max_tokens only                                max_tokens unless told otherwise
//	Ollama, vLLM
//	vLLM, Ollama          "reasoning" instead of reasoning_content       read, and sent back as "reasoning"
//	Moonshot              usage.cached_tokens                            read as cached input
//	reasoning models      think silently for minutes                     idle limit of two minutes, pings reset it
package openai
