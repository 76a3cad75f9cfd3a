package openai

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	goopenai "github.com/sashabaranov/go-openai"

	"github.com/lodeworks/lode/x/provider/internal/apierr"
)

// Sentinels an *APIError matches with errors.Is, by status.
var (
	ErrUnauthorized = errors.New("openai: unauthorized (401)")
	ErrForbidden    = errors.New("openai: forbidden (403)")
	ErrNotFound     = errors.New("openai: not found (404)")
	ErrRateLimited  = errors.New("openai: rate limited (429)")
	ErrServer       = errors.New("openai: server error (5xx)")
	// ErrContextLength: the request is longer than the model's context
	// window (code context_length_exceeded, or a message that says so).
	ErrContextLength = errors.New("openai: context length exceeded")
)

// APIError is the server refusing a request, or an error event inside a
// stream (StatusCode 0). Hint says what to fix where that is known.
type APIError struct {
	StatusCode int
	// Code, Type and Param are the API's own error fields, when sent.
	Code, Type, Param string
	Message           string
	Hint              string
	// Attempts is how many times the request was sent; RetryAfter is the
	// last wait the server asked for.
	Attempts   int
	RetryAfter time.Duration
	// Err is go-openai's error.
	Err error
}

func (e *APIError) Error() string {
	return apierr.Refusal{Prefix: "openai", Status: e.StatusCode, Message: e.Message, Attempts: e.Attempts, Hint: e.Hint}.Text()
}

func (e *APIError) Unwrap() error { return e.Err }

// HTTPStatus is StatusCode, or for an error event inside a stream
// (StatusCode 0) the status the API answers its type or code with: a
// server_error, or a type it does not know, is 500. Code that must not
// import this package (x/provider/fallback choosing what falls back, a
// page telling a person what failed) reads it through this method.
func (e *APIError) HTTPStatus() int {
	if e.StatusCode != 0 {
		return e.StatusCode
	}
	return apierr.StreamStatus(e.Type, e.Code)
}

// Is matches the sentinel of e's status.
func (e *APIError) Is(target error) bool {
	switch target {
	case ErrUnauthorized:
		return e.StatusCode == http.StatusUnauthorized
	case ErrForbidden:
		return e.StatusCode == http.StatusForbidden
	case ErrNotFound:
		return e.StatusCode == http.StatusNotFound
	case ErrRateLimited:
		return e.StatusCode == http.StatusTooManyRequests
	case ErrServer:
		return e.StatusCode >= 500
	case ErrContextLength:
		return e.ContextLengthExceeded()
	}
	return false
}

// ContextLengthExceeded reports whether the server refused the request as
// longer than the model's window: OpenAI's code, or the wording that
// compatible servers (vLLM, llama.cpp, Ollama, LiteLLM) use.
func (e *APIError) ContextLengthExceeded() bool {
	if e.Code == "context_length_exceeded" || e.Type == "context_length_exceeded" {
		return true
	}
	m := strings.ToLower(e.Message)
	for _, s := range []string{"maximum context length", "context length exceeded", "context_length_exceeded",
		"exceeds the context window", "exceed context window", "context window exceeded", "too many tokens", "prompt is too long"} {
		if strings.Contains(m, s) {
			return true
		}
	}
	return false
}

// Sentinels a *TimeoutError matches with errors.Is: ErrTimeout for either
// limit, ErrIdleTimeout only for the idle one.
var (
	ErrTimeout     = errors.New("openai: timed out")
	ErrIdleTimeout = errors.New("openai: idle timeout")
)

// TimeoutError reports an invocation that one of the provider's own limits
// ended: the whole request took longer than WithTimeout allows, or the server
// sent nothing for longer than WithIdleTimeout allows. It also matches
// context.DeadlineExceeded, so code that treats every deadline alike keeps
// working.
type TimeoutError struct {
	// Idle is true for the idle limit, false for the whole-request one.
	Idle  bool
	Limit time.Duration
}

func (e *TimeoutError) Error() string { return apierr.TimeoutText("openai", e.Idle, e.Limit) }

// Is matches ErrTimeout, and ErrIdleTimeout for the idle limit.
func (e *TimeoutError) Is(target error) bool {
	return target == ErrTimeout || (e.Idle && target == ErrIdleTimeout)
}

// Unwrap returns context.DeadlineExceeded.
func (e *TimeoutError) Unwrap() error { return context.DeadlineExceeded }

// ctxError is the error for an invocation whose context ended: the
// provider's own limit when one of them ended it, else the context's error.
func ctxError(ctx context.Context) error { return apierr.FromContext[*TimeoutError](ctx, "openai") }

// Kinds of *ResponseError, matched with errors.Is.
var (
	// ErrIncomplete: the answer ended early — no "data: [DONE]", no finish
	// reason, or the connection broke mid-stream.
	ErrIncomplete = errors.New("openai: incomplete response")
	// ErrMalformed: the server sent something that is not the protocol,
	// such as a chunk that is not JSON.
	ErrMalformed = errors.New("openai: malformed response")
	// ErrInvalidToolCall: a tool call that cannot be run, such as one
	// without a name. Invalid JSON arguments are not this: they are kept
	// as they came, for the tool handler to report to the model.
	ErrInvalidToolCall = errors.New("openai: invalid tool call")
)

// ResponseError reports a response that breaks the protocol. Data holds the
// offending part of it, shortened.
type ResponseError struct {
	Kind   error
	Detail string
	Data   string
	Err    error
}

func (e *ResponseError) Error() string { return apierr.ResponseText(e.Kind, e.Detail, e.Data, e.Err) }

// Unwrap returns the kind and the cause.
func (e *ResponseError) Unwrap() []error { return apierr.Unwrap(e.Kind, e.Err) }

func respErr(kind error, detail string, data []byte, cause error) *ResponseError {
	return &ResponseError{Kind: kind, Detail: detail, Data: apierr.Shorten(string(data), 200), Err: cause}
}

// callError turns what go-openai returned for a request into lode's error.
func (p *Provider) callError(ctx context.Context, ct *callTransport, err error) error {
	if ctx.Err() != nil {
		return ctxError(ctx)
	}
	// A RequestError may wrap an empty APIError; the body is the truth.
	var re *goopenai.RequestError
	if errors.As(err, &re) {
		e := &APIError{
			StatusCode: re.HTTPStatusCode, Message: messageFromBody(re.Body),
			Attempts: ct.outcome.Attempts, RetryAfter: ct.outcome.RetryAfter, Err: err,
		}
		e.Hint = p.hint(e)
		return e
	}
	var ae *goopenai.APIError
	if errors.As(err, &ae) {
		e := &APIError{
			StatusCode: ae.HTTPStatusCode, Type: ae.Type, Message: ae.Message,
			Attempts: ct.outcome.Attempts, RetryAfter: ct.outcome.RetryAfter, Err: err,
		}
		if ae.Code != nil {
			e.Code = fmt.Sprint(ae.Code)
		}
		if ae.Param != nil {
			e.Param = *ae.Param
		}
		e.Hint = p.hint(e)
		return e
	}
	if ct.outcome.Attempts == 0 {
		// go-openai refused to send it (its model checks, encoding).
		return &RequestError{Turn: -1, Reason: "not sent", Err: err}
	}
	if apierr.Closed(err) {
		return respErr(ErrIncomplete, "the connection closed before the response", nil, err)
	}
	return apierr.Unreachable("openai", p.core.BaseURL, err)
}

func (p *Provider) hint(e *APIError) string {
	switch {
	case e.StatusCode == http.StatusUnauthorized:
		return "check the API key (WithAPIKey or " + EnvAPIKey + ")"
	case e.StatusCode == http.StatusForbidden:
		return fmt.Sprintf("the API key may not use model %q here: check the key's project, organization and permissions", p.core.Model)
	case e.StatusCode == http.StatusNotFound:
		return fmt.Sprintf("check the model name %q and the base URL %q (servers usually expect it to end in /v1)", p.core.Model, p.core.BaseURL)
	case e.StatusCode == http.StatusTooManyRequests && (e.Code == "insufficient_quota" || e.Type == "insufficient_quota"):
		return "the account is out of quota: check its plan and billing"
	case e.StatusCode == http.StatusTooManyRequests:
		return apierr.HintRateLimited(e.RetryAfter)
	case e.StatusCode >= 500:
		return apierr.HintServer
	case e.ContextLengthExceeded():
		return fmt.Sprintf("the conversation no longer fits model %q's context window: shorten the request with a history policy (x/history, history: in lode.yaml)", p.core.Model)
	}
	return ""
}

// messageFromBody finds the message in an error body that go-openai could
// not read: {"error":"..."} (Ollama, llama.cpp), {"message":"..."},
// {"detail":"..."}, or else the body itself.
func messageFromBody(body []byte) string {
	var v struct {
		Error   json.RawMessage `json:"error"`
		Message string          `json:"message"`
		Detail  any             `json:"detail"`
	}
	if json.Unmarshal(body, &v) == nil {
		var s string
		if json.Unmarshal(v.Error, &s) == nil && s != "" {
			return s
		}
		var inner struct {
			Message string `json:"message"`
		}
		if json.Unmarshal(v.Error, &inner) == nil && inner.Message != "" {
			return inner.Message
		}
		if v.Message != "" {
			return v.Message
		}
		if d, ok := v.Detail.(string); ok && d != "" {
			return d
		}
		if v.Detail != nil {
			b, _ := json.Marshal(v.Detail)
			return apierr.Shorten(string(b), 300)
		}
	}
	return apierr.Shorten(strings.TrimSpace(string(body)), 300)
}

// errorType names err for the span's error.type and status, from a closed
// set: the HTTP status, the response error's kind, or "_OTHER".
func errorType(err error) string {
	if name, ok := errorNames.Type(err); ok {
		return name
	}
	var ae *APIError
	var qe *RequestError
	switch {
	case errors.As(err, &ae):
		if ae.StatusCode > 0 {
			return strconv.Itoa(ae.StatusCode)
		}
		return "stream_error"
	case errors.As(err, &qe):
		return "invalid_request"
	}
	return apierr.Other
}

var errorNames = apierr.Names{
	Timeout: ErrTimeout, IdleTimeout: ErrIdleTimeout,
	Incomplete: ErrIncomplete, Malformed: ErrMalformed, InvalidToolCall: ErrInvalidToolCall,
}

// timeoutError is the error of the limit that ended an invocation.
func timeoutError(idle bool, limit time.Duration) error {
	return &TimeoutError{Idle: idle, Limit: limit}
}
