package anthropic

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"

	sdk "github.com/anthropics/anthropic-sdk-go/v2"

	"github.com/lodeworks/lode/x/provider/internal/apierr"
)

// Sentinels an *APIError matches with errors.Is, by status or by the API's
// error type (an error event inside a stream has no status of its own).
var (
	ErrInvalidRequest = errors.New("anthropic: invalid request (400)")
	ErrUnauthorized   = errors.New("anthropic: unauthorized (401)")
	ErrForbidden      = errors.New("anthropic: forbidden (403)")
	ErrNotFound       = errors.New("anthropic: not found (404)")
	ErrRateLimited    = errors.New("anthropic: rate limited (429)")
	ErrServer         = errors.New("anthropic: server error (5xx)")
	ErrOverloaded     = errors.New("anthropic: overloaded (529)")
)

// StatusOverloaded is the status the API answers with when it is
// overloaded.
const StatusOverloaded = 529

// APIError is the server refusing a request, or an error event inside a
// stream (StatusCode 0). Hint says what to fix where that is known.
type APIError struct {
	StatusCode int
	// Type is the API's error type ("rate_limit_error",
	// "overloaded_error", "invalid_request_error", ...).
	Type      string
	Message   string
	RequestID string
	Hint      string
	// Attempts is how many times the request was sent; RetryAfter is the
	// last wait the server asked for.
	Attempts   int
	RetryAfter time.Duration
	// Err is the SDK's error.
	Err error
}

func (e *APIError) Error() string {
	r := apierr.Refusal{Prefix: "anthropic", Status: e.StatusCode, Type: e.Type, Message: e.Message, Attempts: e.Attempts, Hint: e.Hint}
	if e.StatusCode == StatusOverloaded {
		r.StatusText = "Overloaded"
	}
	return r.Text()
}

func (e *APIError) Unwrap() error { return e.Err }

// HTTPStatus is StatusCode, or for an error event inside a stream
// (StatusCode 0) the status the API answers that error type with, so that
// code that must not import this package (x/provider/fallback choosing
// what falls back) can tell an overloaded stream from a refused request.
func (e *APIError) HTTPStatus() int {
	if e.StatusCode != 0 {
		return e.StatusCode
	}
	switch e.Type {
	case "overloaded_error":
		return StatusOverloaded
	case "rate_limit_error":
		return http.StatusTooManyRequests
	case "api_error":
		return http.StatusInternalServerError
	case "timeout_error":
		return http.StatusGatewayTimeout
	case "invalid_request_error":
		return http.StatusBadRequest
	case "authentication_error":
		return http.StatusUnauthorized
	case "permission_error":
		return http.StatusForbidden
	case "not_found_error":
		return http.StatusNotFound
	case "request_too_large":
		return http.StatusRequestEntityTooLarge
	}
	return 0
}

// Is matches the sentinel of e's status or error type.
func (e *APIError) Is(target error) bool {
	switch target {
	case ErrInvalidRequest:
		return e.StatusCode == http.StatusBadRequest || e.Type == "invalid_request_error"
	case ErrUnauthorized:
		return e.StatusCode == http.StatusUnauthorized || e.Type == "authentication_error"
	case ErrForbidden:
		return e.StatusCode == http.StatusForbidden || e.Type == "permission_error"
	case ErrNotFound:
		return e.StatusCode == http.StatusNotFound || e.Type == "not_found_error"
	case ErrRateLimited:
		return e.StatusCode == http.StatusTooManyRequests || e.Type == "rate_limit_error"
	case ErrOverloaded:
		return e.StatusCode == StatusOverloaded || e.Type == "overloaded_error"
	case ErrServer:
		return e.StatusCode >= 500 || e.Type == "api_error" || e.Type == "overloaded_error"
	}
	return false
}

// Sentinels a *TimeoutError matches: ErrTimeout for either limit,
// ErrIdleTimeout only for the idle one.
var (
	ErrTimeout     = errors.New("anthropic: timed out")
	ErrIdleTimeout = errors.New("anthropic: idle timeout")
)

// TimeoutError reports an invocation that WithTimeout or WithIdleTimeout
// ended. It also matches context.DeadlineExceeded.
type TimeoutError struct {
	// Idle is true for the idle limit, false for the whole-request one.
	Idle  bool
	Limit time.Duration
}

func (e *TimeoutError) Error() string { return apierr.TimeoutText("anthropic", e.Idle, e.Limit) }

func (e *TimeoutError) Is(target error) bool {
	return target == ErrTimeout || (e.Idle && target == ErrIdleTimeout)
}

func (e *TimeoutError) Unwrap() error { return context.DeadlineExceeded }

func ctxError(ctx context.Context) error { return apierr.FromContext[*TimeoutError](ctx, "anthropic") }

// Kinds of *ResponseError, matched with errors.Is.
var (
	// ErrIncomplete: the answer ended early — no message_stop, or the
	// connection broke mid-stream.
	ErrIncomplete = errors.New("anthropic: incomplete response")
	// ErrMalformed: the server sent something that is not the protocol:
	// an event that is not JSON, a block index out of order.
	ErrMalformed = errors.New("anthropic: malformed response")
	// ErrInvalidToolCall: a tool call that cannot be run, such as one
	// without a name or ID.
	ErrInvalidToolCall = errors.New("anthropic: invalid tool call")
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

// callError turns what the SDK returned into lode's error.
func (p *Provider) callError(ctx context.Context, ct *callTransport, err error) error {
	if ctx.Err() != nil {
		return ctxError(ctx)
	}
	var se *sdk.Error
	if errors.As(err, &se) {
		e := &APIError{
			StatusCode: se.StatusCode, Type: string(se.Type()), Message: se.Message, RequestID: se.RequestID,
			Attempts: ct.outcome.Attempts, RetryAfter: ct.outcome.RetryAfter, Err: err,
		}
		if ct.streaming {
			// An error event arrives inside a 200 stream.
			e.StatusCode = 0
			if e.Type == "" && e.Message == "" {
				return respErr(ErrMalformed, "the stream's error event is not an error object", nil, err)
			}
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
	return apierr.Unreachable("anthropic", p.core.BaseURL, err)
}

func (p *Provider) hint(e *APIError) string {
	switch {
	case errors.Is(e, ErrUnauthorized):
		return "check the API key (WithAPIKey or " + EnvAPIKey + "): it is missing, mistyped or revoked"
	case errors.Is(e, ErrForbidden):
		return fmt.Sprintf("the API key may not use model %q or this feature: check the key's workspace and permissions", p.core.Model)
	case errors.Is(e, ErrNotFound):
		return fmt.Sprintf("check the model name %q and the base URL %q", p.core.Model, p.core.BaseURL)
	case errors.Is(e, ErrRateLimited):
		return apierr.HintRateLimited(e.RetryAfter)
	case errors.Is(e, ErrOverloaded):
		return "the API is overloaded; try again shortly"
	case errors.Is(e, ErrServer):
		return apierr.HintServer
	}
	return ""
}

// errorType names err for the span's error.type, from a closed set.
func errorType(err error) string {
	if name, ok := errorNames.Type(err); ok {
		return name
	}
	var ae *APIError
	var qe *RequestError
	switch {
	case errors.As(err, &ae):
		if ae.Type != "" {
			return ae.Type
		}
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
