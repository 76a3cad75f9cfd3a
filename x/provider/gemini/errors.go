package gemini

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/lodeworks/lode/ledger"
	"github.com/lodeworks/lode/x/provider/internal/apierr"
	"github.com/lodeworks/lode/x/provider/internal/retry"
)

// Sentinels an *APIError matches with errors.Is, by HTTP status or by
// Google's status name (an error inside a stream may carry only the name).
var (
	ErrInvalidRequest = errors.New("gemini: invalid request (400)")
	ErrUnauthorized   = errors.New("gemini: unauthorized (401)")
	ErrForbidden      = errors.New("gemini: forbidden (403)")
	ErrNotFound       = errors.New("gemini: not found (404)")
	ErrRateLimited    = errors.New("gemini: rate limited (429)")
	ErrServer         = errors.New("gemini: server error (5xx)")
	ErrOverloaded     = errors.New("gemini: overloaded (503)")
)

// APIError is the server refusing a request, with Google's error object
// ({"error": {"code", "message", "status", "details"}}), or such an object
// inside a stream (InStream). Hint says what to fix where that is known.
type APIError struct {
	StatusCode int
	// Status is Google's status name: "INVALID_ARGUMENT",
	// "RESOURCE_EXHAUSTED", "UNAUTHENTICATED", "PERMISSION_DENIED",
	// "NOT_FOUND", "UNAVAILABLE", "INTERNAL", ...
	Status  string
	Message string
	// Reason is the reason of the error's google.rpc.ErrorInfo detail,
	// such as "API_KEY_INVALID", when it has one.
	Reason string
	// Details is the error's details array as the server sent it.
	Details json.RawMessage
	Hint    string
	// InStream is true for an error that arrived inside a streamed answer.
	InStream bool
	// Attempts is how many times the request was sent; RetryAfter is the
	// last wait the server asked for.
	Attempts   int
	RetryAfter time.Duration
}

// HTTPStatus is StatusCode, or for an error inside a stream that gave no
// code the status its status name stands for (one it does not know is
// 500). Code that must not import this package (x/provider/fallback
// choosing what falls back, a page telling a person what failed) reads it
// through this method.
func (e *APIError) HTTPStatus() int {
	if e.StatusCode != 0 {
		return e.StatusCode
	}
	return apierr.GoogleStatus(e.Status)
}

func (e *APIError) Error() string {
	r := apierr.Refusal{Prefix: "gemini", Status: e.StatusCode, Type: e.Status, Message: e.Message, Attempts: e.Attempts, Hint: e.Hint}
	if e.InStream {
		r.Status = 0
		if e.StatusCode > 0 {
			r.Type = strings.TrimSpace(strconv.Itoa(e.StatusCode) + " " + e.Status)
		}
	}
	return r.Text()
}

// Is matches the sentinel of e's status code or status name.
func (e *APIError) Is(target error) bool {
	switch target {
	case ErrInvalidRequest:
		return e.StatusCode == http.StatusBadRequest || e.Status == "INVALID_ARGUMENT" || e.Status == "FAILED_PRECONDITION"
	case ErrUnauthorized:
		return e.StatusCode == http.StatusUnauthorized || e.Status == "UNAUTHENTICATED" || e.Reason == "API_KEY_INVALID"
	case ErrForbidden:
		return e.StatusCode == http.StatusForbidden || e.Status == "PERMISSION_DENIED"
	case ErrNotFound:
		return e.StatusCode == http.StatusNotFound || e.Status == "NOT_FOUND"
	case ErrRateLimited:
		return e.StatusCode == http.StatusTooManyRequests || e.Status == "RESOURCE_EXHAUSTED"
	case ErrOverloaded:
		return e.StatusCode == http.StatusServiceUnavailable || e.Status == "UNAVAILABLE"
	case ErrServer:
		return e.StatusCode >= 500 || e.Status == "INTERNAL" || e.Status == "UNAVAILABLE" || e.Status == "DEADLINE_EXCEEDED"
	}
	return false
}

// Sentinels a *TimeoutError matches: ErrTimeout for either limit,
// ErrIdleTimeout only for the idle one.
var (
	ErrTimeout     = errors.New("gemini: timed out")
	ErrIdleTimeout = errors.New("gemini: idle timeout")
)

// TimeoutError reports an invocation that WithTimeout or WithIdleTimeout
// ended. It also matches context.DeadlineExceeded.
type TimeoutError struct {
	// Idle is true for the idle limit, false for the whole-request one.
	Idle  bool
	Limit time.Duration
}

func (e *TimeoutError) Error() string { return apierr.TimeoutText("gemini", e.Idle, e.Limit) }

// Is matches ErrTimeout, and ErrIdleTimeout for the idle limit.
func (e *TimeoutError) Is(target error) bool {
	return target == ErrTimeout || (e.Idle && target == ErrIdleTimeout)
}

// Unwrap returns context.DeadlineExceeded.
func (e *TimeoutError) Unwrap() error { return context.DeadlineExceeded }

func ctxError(ctx context.Context) error { return apierr.FromContext[*TimeoutError](ctx, "gemini") }

// Kinds of *ResponseError, matched with errors.Is.
var (
	// ErrIncomplete: the answer ended early: no finish reason, or the
	// connection broke mid-stream.
	ErrIncomplete = errors.New("gemini: incomplete response")
	// ErrMalformed: the server sent something that is not the protocol:
	// an event that is not JSON, a line too long.
	ErrMalformed = errors.New("gemini: malformed response")
	// ErrInvalidToolCall: a function call that cannot be run (one without
	// a name), or a finish reason saying the model's call was broken
	// (MALFORMED_FUNCTION_CALL, UNEXPECTED_TOOL_CALL, ...).
	ErrInvalidToolCall = errors.New("gemini: invalid tool call")
	// ErrBlocked: the prompt was blocked (promptFeedback.blockReason)
	// and no answer was generated.
	ErrBlocked = errors.New("gemini: prompt blocked")
)

// ResponseError reports a response that breaks the protocol, or that
// carries no answer. Reason is the server's finish or block reason when
// one said so ("MALFORMED_FUNCTION_CALL", "SAFETY"), and Detail its message.
// Data holds the offending part of the response, shortened.
type ResponseError struct {
	Kind   error
	Reason string
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

// RequestError reports a Request that cannot be sent: an artifact a role
// cannot carry, a tool with a broken schema, a tool choice naming no
// offered tool. Nothing was sent.
type RequestError struct {
	// Turn is the index in Request.Turns of the offending turn, or -1.
	Turn int
	Role ledger.Role
	// Tool names the offending tool, if any.
	Tool   string
	Reason string
	Err    error
}

func (e *RequestError) Error() string {
	return apierr.RequestText("gemini", e.Turn, string(e.Role), e.Tool, e.Reason, e.Err)
}

func (e *RequestError) Unwrap() error { return e.Err }

func reqErr(reason string, args ...any) *RequestError {
	return &RequestError{Turn: -1, Reason: fmt.Sprintf(reason, args...)}
}

func turnErr(i int, role ledger.Role, reason string, args ...any) *RequestError {
	return &RequestError{Turn: i, Role: role, Reason: fmt.Sprintf(reason, args...)}
}

// googleError is Google's error object.
type googleError struct {
	Code    int             `json:"code"`
	Message string          `json:"message"`
	Status  string          `json:"status"`
	Details json.RawMessage `json:"details"`
}

// apiError builds the *APIError of a Google error object.
func (p *Provider) apiError(ge *googleError, status int, ct *callTransport) *APIError {
	e := &APIError{StatusCode: status, Status: ge.Status, Message: ge.Message, Details: ge.Details}
	if e.StatusCode == 0 {
		e.StatusCode = ge.Code
	}
	if len(ge.Details) > 0 {
		var ds []struct {
			Type   string `json:"@type"`
			Reason string `json:"reason"`
		}
		if json.Unmarshal(ge.Details, &ds) == nil {
			for _, d := range ds {
				if strings.HasSuffix(d.Type, "google.rpc.ErrorInfo") && d.Reason != "" {
					e.Reason = d.Reason
					break
				}
			}
		}
	}
	if ct != nil {
		e.Attempts, e.RetryAfter = ct.outcome.Attempts, ct.outcome.RetryAfter
	}
	e.Hint = p.hint(e)
	return e
}

// refusal reads a non-2xx answer: Google's error object, or whatever a
// proxy put there instead.
func (p *Provider) refusal(ctx context.Context, ct *callTransport, resp *http.Response) error {
	data, err := io.ReadAll(io.LimitReader(resp.Body, retry.MaxErrorBody))
	if err != nil && ctx.Err() != nil {
		return ctxError(ctx)
	}
	var body struct {
		Error *googleError `json:"error"`
	}
	if json.Unmarshal(data, &body) == nil && body.Error != nil {
		return p.apiError(body.Error, resp.StatusCode, ct)
	}
	// A JSON array holding the error object is how the stream endpoint
	// answers without alt=sse.
	var arr []struct {
		Error *googleError `json:"error"`
	}
	if json.Unmarshal(data, &arr) == nil && len(arr) > 0 && arr[0].Error != nil {
		return p.apiError(arr[0].Error, resp.StatusCode, ct)
	}
	msg := strings.TrimSpace(string(data))
	if msg == "" {
		msg = "(empty body)"
	}
	return p.apiError(&googleError{Message: apierr.Shorten(msg, 300)}, resp.StatusCode, ct)
}

// callError turns what sending returned into lode's error.
func (p *Provider) callError(ctx context.Context, ct *callTransport, err error) error {
	if ctx.Err() != nil {
		return ctxError(ctx)
	}
	var qe *RequestError
	if errors.As(err, &qe) {
		return err
	}
	if apierr.Closed(err) {
		return respErr(ErrIncomplete, "the connection closed before the response", nil, err)
	}
	return apierr.Unreachable("gemini", p.core.BaseURL, err)
}

func (p *Provider) hint(e *APIError) string {
	switch {
	case errors.Is(e, ErrUnauthorized):
		if p.backend == BackendVertexAI && p.apiKey == "" {
			return "check the Google credentials (WithCredentials or Application Default Credentials)"
		}
		return "check the API key (WithAPIKey, " + EnvAPIKey + " or " + EnvGoogleAPIKey + "): it is missing, mistyped or revoked"
	case errors.Is(e, ErrForbidden):
		return fmt.Sprintf("the credentials may not use model %q: check the key's or project's permissions and that the API is enabled", p.core.Model)
	case errors.Is(e, ErrNotFound):
		return fmt.Sprintf("check the model name %q and the base URL %q", p.core.Model, p.core.BaseURL)
	case errors.Is(e, ErrRateLimited):
		if e.RetryAfter > 0 {
			return fmt.Sprintf("rate limited or out of quota; the server asked to wait %s", e.RetryAfter)
		}
		return "rate limited or out of quota: slow down or raise the quota"
	case errors.Is(e, ErrOverloaded):
		return "the model is overloaded; try again shortly"
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
	case errors.Is(err, ErrBlocked):
		return "prompt_blocked"
	case errors.As(err, &ae):
		if ae.Status != "" && isStatusName(ae.Status) {
			return ae.Status
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

// isStatusName reports a google.rpc.Code name, so that a server cannot put
// any text in a span's error.type.
func isStatusName(s string) bool {
	switch s {
	case "CANCELLED", "UNKNOWN", "INVALID_ARGUMENT", "DEADLINE_EXCEEDED", "NOT_FOUND", "ALREADY_EXISTS",
		"PERMISSION_DENIED", "RESOURCE_EXHAUSTED", "FAILED_PRECONDITION", "ABORTED", "OUT_OF_RANGE",
		"UNIMPLEMENTED", "INTERNAL", "UNAVAILABLE", "DATA_LOSS", "UNAUTHENTICATED":
		return true
	}
	return false
}

var errorNames = apierr.Names{
	Timeout: ErrTimeout, IdleTimeout: ErrIdleTimeout,
	Incomplete: ErrIncomplete, Malformed: ErrMalformed, InvalidToolCall: ErrInvalidToolCall,
}

// timeoutError is the error of the limit that ended an invocation.
func timeoutError(idle bool, limit time.Duration) error {
	return &TimeoutError{Idle: idle, Limit: limit}
}
