package responses

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

// Sentinels an *APIError matches with errors.Is, by status or, for an
// error inside a stream (which has no status), by the API's error code.
var (
	ErrInvalidRequest = errors.New("responses: invalid request (400)")
	ErrUnauthorized   = errors.New("responses: unauthorized (401)")
	ErrForbidden      = errors.New("responses: forbidden (403)")
	ErrNotFound       = errors.New("responses: not found (404)")
	ErrRateLimited    = errors.New("responses: rate limited (429)")
	ErrServer         = errors.New("responses: server error (5xx)")
	// ErrContextLength: the request is longer than the model's context
	// window.
	ErrContextLength = errors.New("responses: context length exceeded")
)

// APIError is the server refusing a request, an error event inside a
// stream, or a response that ended with status "failed" (both StatusCode
// 0). Hint says what to fix where that is known.
type APIError struct {
	StatusCode int
	// Code, Type and Param are the API's own error fields, when sent.
	Code, Type, Param string
	Message           string
	Hint              string
	// ResponseID names the failed response, when the server said it.
	ResponseID string
	// Attempts is how many times the request was sent; RetryAfter is the
	// last wait the server asked for.
	Attempts   int
	RetryAfter time.Duration
	// Err is go-openai's error, if it made one.
	Err error
}

// HTTPStatus is StatusCode, or for an error inside a stream (StatusCode
// 0) the status the API answers its code or type with: a server_error, or
// one it does not know, is 500. Code that must not import this package
// (x/provider/fallback choosing what falls back, a page telling a person
// what failed) reads it through this method.
func (e *APIError) HTTPStatus() int {
	if e.StatusCode != 0 {
		return e.StatusCode
	}
	return apierr.StreamStatus(e.Type, e.Code)
}

func (e *APIError) Error() string {
	typ := e.Code
	if typ == "" {
		typ = e.Type
	}
	return apierr.Refusal{Prefix: "responses", Status: e.StatusCode, Type: typ, Message: e.Message, Attempts: e.Attempts, Hint: e.Hint}.Text()
}

func (e *APIError) Unwrap() error { return e.Err }

// Is matches the sentinel of e's status or code.
func (e *APIError) Is(target error) bool {
	switch target {
	case ErrInvalidRequest:
		return e.StatusCode == http.StatusBadRequest || e.Type == "invalid_request_error" && e.StatusCode == 0
	case ErrUnauthorized:
		return e.StatusCode == http.StatusUnauthorized || e.Code == "invalid_api_key"
	case ErrForbidden:
		return e.StatusCode == http.StatusForbidden
	case ErrNotFound:
		return e.StatusCode == http.StatusNotFound
	case ErrRateLimited:
		return e.StatusCode == http.StatusTooManyRequests || e.Code == "rate_limit_exceeded"
	case ErrServer:
		return e.StatusCode >= 500 || e.Code == "server_error" || e.Type == "server_error"
	case ErrContextLength:
		return e.Code == "context_length_exceeded" || strings.Contains(strings.ToLower(e.Message), "context window")
	}
	return false
}

// Sentinels a *TimeoutError matches: ErrTimeout for either limit,
// ErrIdleTimeout only for the idle one.
var (
	ErrTimeout     = errors.New("responses: timed out")
	ErrIdleTimeout = errors.New("responses: idle timeout")
)

// TimeoutError reports an invocation that WithTimeout or WithIdleTimeout
// ended. It also matches context.DeadlineExceeded.
type TimeoutError struct {
	// Idle is true for the idle limit, false for the whole-request one.
	Idle  bool
	Limit time.Duration
}

func (e *TimeoutError) Error() string { return apierr.TimeoutText("responses", e.Idle, e.Limit) }

// Is matches ErrTimeout, and ErrIdleTimeout for the idle limit.
func (e *TimeoutError) Is(target error) bool {
	return target == ErrTimeout || (e.Idle && target == ErrIdleTimeout)
}

// Unwrap returns context.DeadlineExceeded.
func (e *TimeoutError) Unwrap() error { return context.DeadlineExceeded }

func ctxError(ctx context.Context) error { return apierr.FromContext[*TimeoutError](ctx, "responses") }

// Kinds of *ResponseError, matched with errors.Is.
var (
	// ErrIncomplete: the answer ended early — the stream closed before
	// response.completed (or .incomplete, or .failed), or the connection
	// broke mid-stream.
	ErrIncomplete = errors.New("responses: incomplete response")
	// ErrMalformed: the server sent something that is not the protocol:
	// an event that is not JSON, a delta for an item never added.
	ErrMalformed = errors.New("responses: malformed response")
	// ErrInvalidToolCall: a function call that cannot be run, such as one
	// without a name or call ID. Invalid JSON arguments are not this: they
	// are kept as they came, for the tool handler to report to the model.
	ErrInvalidToolCall = errors.New("responses: invalid tool call")
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
	var re *goopenai.RequestError
	if errors.As(err, &re) {
		e := &APIError{StatusCode: re.HTTPStatusCode, Attempts: ct.outcome.Attempts, RetryAfter: ct.outcome.RetryAfter, Err: err}
		e.Code, e.Type, e.Param, e.Message = fromBody(re.Body)
		e.Hint = p.hint(e)
		return e
	}
	var ae *goopenai.APIError
	if errors.As(err, &ae) {
		e := &APIError{
			StatusCode: ae.HTTPStatusCode, Type: ae.Type, Message: ae.Message,
			Attempts: ct.outcome.Attempts, RetryAfter: ct.outcome.RetryAfter, Err: err,
		}
		switch c := ae.Code.(type) {
		case string:
			e.Code = c
		case int:
			// go-openai reads a null code as 0.
			if c != 0 {
				e.Code = strconv.Itoa(c)
			}
		}
		if ae.Param != nil {
			e.Param = *ae.Param
		}
		e.Hint = p.hint(e)
		return e
	}
	if ct.outcome.Attempts == 0 {
		return &RequestError{Turn: -1, Reason: "not sent", Err: err}
	}
	if apierr.Closed(err) {
		return respErr(ErrIncomplete, "the connection closed before the response", nil, err)
	}
	return apierr.Unreachable("responses", p.core.BaseURL, err)
}

// fromBody reads OpenAI's error JSON, {"error":{"message","type","param",
// "code"}}, and the shapes other servers use: {"error":"..."},
// {"message":"..."}, {"detail":"..."}; else the body is the message.
func fromBody(body []byte) (code, typ, param, msg string) {
	var v struct {
		Error   json.RawMessage `json:"error"`
		Message string          `json:"message"`
		Detail  any             `json:"detail"`
	}
	if json.Unmarshal(body, &v) == nil {
		var inner struct {
			Message string `json:"message"`
			Type    string `json:"type"`
			Param   any    `json:"param"`
			Code    any    `json:"code"`
		}
		var s string
		switch {
		case json.Unmarshal(v.Error, &s) == nil && s != "":
			return "", "", "", s
		case json.Unmarshal(v.Error, &inner) == nil && inner.Message != "":
			return text(inner.Code), inner.Type, text(inner.Param), inner.Message
		case v.Message != "":
			return "", "", "", v.Message
		case v.Detail != nil:
			if d, ok := v.Detail.(string); ok {
				return "", "", "", d
			}
			b, _ := json.Marshal(v.Detail)
			return "", "", "", apierr.Shorten(string(b), 300)
		}
	}
	return "", "", "", apierr.Shorten(strings.TrimSpace(string(body)), 300)
}

// text is a JSON string or number as text; null and others are "".
func text(v any) string {
	switch v := v.(type) {
	case string:
		return v
	case float64:
		return strconv.FormatFloat(v, 'f', -1, 64)
	}
	return ""
}

func (p *Provider) hint(e *APIError) string {
	if h := hintFor(e); h != "" {
		return h
	}
	switch {
	case errors.Is(e, ErrUnauthorized):
		return "check the API key (WithAPIKey or " + EnvAPIKey + ")"
	case errors.Is(e, ErrForbidden):
		return fmt.Sprintf("the API key may not use model %q here: check the key's project, organization and permissions", p.core.Model)
	case errors.Is(e, ErrNotFound):
		return fmt.Sprintf("check the model name %q and that the server at %q has a /responses endpoint", p.core.Model, p.core.BaseURL)
	case errors.Is(e, ErrContextLength):
		return fmt.Sprintf("the conversation no longer fits model %q's context window: shorten the request with a history policy (x/history)", p.core.Model)
	}
	return ""
}

// hintFor is the hint of the failures that need no provider to explain,
// as an error inside a stream has.
func hintFor(e *APIError) string {
	switch {
	case e.Code == "insufficient_quota" || e.Type == "insufficient_quota":
		return "the account is out of quota: check its plan and billing"
	case errors.Is(e, ErrRateLimited):
		return apierr.HintRateLimited(e.RetryAfter)
	case errors.Is(e, ErrServer):
		return apierr.HintServer
	case e.Code == "previous_response_not_found":
		return "the stored response has expired or was never stored: turn WithPreviousResponse off to send the whole history"
	}
	return ""
}

// errorType names err for the span's error.type and status, from a closed
// set: the HTTP status, the API's error code, or a response error's kind.
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
		if ae.Code != "" && len(ae.Code) <= 64 {
			return ae.Code
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
