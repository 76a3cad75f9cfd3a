// Package apierr holds the parts of the model adapters' errors that do not
// depend on the API: the wording of a refusal and of a timeout, the error
// of a call whose context ended, and the closed set of names a span gives
// a failure. Each adapter keeps its own exported error types, sentinels
// and hints; this package only builds their text and classifies them.
package apierr

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// Refusal is what an adapter's APIError says.
type Refusal struct {
	// Prefix starts the text: the adapter's package name.
	Prefix string
	// Status is the HTTP status, 0 for an error event inside a stream;
	// StatusText names it when net/http does not know it.
	Status     int
	StatusText string
	// Type is the API's error type, shown in parentheses when set.
	Type     string
	Message  string
	Attempts int
	Hint     string
}

// Text is "prefix: 429 Too Many Requests (type): message (after N
// attempts) — hint", leaving out what is not set.
func (r Refusal) Text() string {
	var b strings.Builder
	b.WriteString(r.Prefix)
	b.WriteString(": ")
	if r.Status > 0 {
		b.WriteString(strconv.Itoa(r.Status))
		t := r.StatusText
		if t == "" {
			t = http.StatusText(r.Status)
		}
		if t != "" {
			b.WriteString(" " + t)
		}
	} else {
		b.WriteString("error in stream")
	}
	if r.Type != "" {
		b.WriteString(" (" + r.Type + ")")
	}
	if r.Message != "" {
		b.WriteString(": " + r.Message)
	}
	if r.Attempts > 1 {
		fmt.Fprintf(&b, " (after %d attempts)", r.Attempts)
	}
	if r.Hint != "" {
		b.WriteString(" — " + r.Hint)
	}
	return b.String()
}

// TimeoutText is the text of an adapter's TimeoutError: which limit ended
// the call and the option that changes it.
func TimeoutText(prefix string, idle bool, limit time.Duration) string {
	if idle {
		return fmt.Sprintf("%s: the server sent nothing for %s (the idle timeout): raise it with WithIdleTimeout, or pass a negative value to turn it off", prefix, limit)
	}
	return fmt.Sprintf("%s: the request took longer than %s (the request timeout): raise it with WithTimeout, or pass 0 to turn it off", prefix, limit)
}

// FromContext is the error of a call whose context ended: the adapter's
// own limit when one of them ended it (the context's cause is a T), else
// the context's error under prefix.
func FromContext[T error](ctx context.Context, prefix string) error {
	var te T
	if errors.As(context.Cause(ctx), &te) {
		return te
	}
	return fmt.Errorf("%s: %w", prefix, ctx.Err())
}

// ResponseText is the text of an adapter's ResponseError.
func ResponseText(kind error, detail, data string, cause error) string {
	s := kind.Error() + ": " + detail
	if cause != nil {
		s += ": " + cause.Error()
	}
	if data != "" {
		s += " (data: " + strconv.Quote(data) + ")"
	}
	return s
}

// Unwrap is what an adapter's ResponseError unwraps to: its kind, and its
// cause when it has one.
func Unwrap(kind, cause error) []error {
	if cause != nil {
		return []error{kind, cause}
	}
	return []error{kind}
}

// Shorten cuts s to at most n bytes on a rune boundary, marking the cut.
func Shorten(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}

// Names are an adapter's sentinels, for Type.
type Names struct {
	Timeout, IdleTimeout                   error
	Incomplete, Malformed, InvalidToolCall error
}

// Type names the failures every adapter shares, for a span's error.type
// and status: its own time limits, a deadline, a cancellation and a
// response that breaks the protocol. It reports false for anything else,
// which the adapter names itself.
func (n Names) Type(err error) (string, bool) {
	switch {
	case errors.Is(err, n.IdleTimeout):
		return "idle_timeout", true
	case errors.Is(err, n.Timeout), errors.Is(err, context.DeadlineExceeded):
		return "timeout", true
	case errors.Is(err, context.Canceled):
		return "canceled", true
	case errors.Is(err, n.Incomplete):
		return "incomplete_response", true
	case errors.Is(err, n.Malformed):
		return "malformed_response", true
	case errors.Is(err, n.InvalidToolCall):
		return "invalid_tool_call", true
	}
	return "", false
}

// Other is the error.type of a failure of no known kind.
const Other = "_OTHER"

// RequestText is the text of an adapter's RequestError: "prefix: request:
// turn 2 (assistant): reason: cause", naming the turn when turn is not
// negative, else the tool when one is named.
func RequestText(prefix string, turn int, role, tool, reason string, cause error) string {
	var b strings.Builder
	b.WriteString(prefix)
	b.WriteString(": request: ")
	switch {
	case turn >= 0:
		fmt.Fprintf(&b, "turn %d (%s): ", turn, role)
	case tool != "":
		fmt.Fprintf(&b, "tool %q: ", tool)
	}
	b.WriteString(reason)
	if cause != nil {
		b.WriteString(": ")
		b.WriteString(cause.Error())
	}
	return b.String()
}

// Hints every adapter gives the same way.
const (
	HintServer = "the server failed; try again later"
)

// HintRateLimited is the hint of a 429: the wait the server asked for, if
// it named one.
func HintRateLimited(retryAfter time.Duration) string {
	if retryAfter > 0 {
		return fmt.Sprintf("rate limited; the server asked to wait %s", retryAfter)
	}
	return "rate limited: slow down or raise the limit"
}

// Closed reports whether err is a connection that closed before the
// response came.
func Closed(err error) bool { return errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) }

// Unreachable is the error of a call that never reached the server at
// baseURL.
func Unreachable(prefix, baseURL string, err error) error {
	return fmt.Errorf("%s: cannot reach the server at %s: %w", prefix, baseURL, err)
}

// StreamStatus is the HTTP status an OpenAI-style API answers an error of
// this type or code with, for an error event inside a 200 stream, which
// carries no status of its own. The server failed in any case it does not
// know: the stream was read, and it said so.
func StreamStatus(typ, code string) int {
	for _, s := range []string{code, typ} {
		switch s {
		case "invalid_api_key", "authentication_error", "unauthorized":
			return http.StatusUnauthorized
		case "permission_error", "permission_denied", "forbidden":
			return http.StatusForbidden
		case "model_not_found", "not_found_error", "not_found":
			return http.StatusNotFound
		case "rate_limit_exceeded", "rate_limit_error", "insufficient_quota", "tokens":
			return http.StatusTooManyRequests
		case "context_length_exceeded", "invalid_request_error", "invalid_prompt", "bad_request":
			return http.StatusBadRequest
		case "timeout", "timeout_error":
			return http.StatusGatewayTimeout
		case "overloaded_error", "server_overloaded", "service_unavailable":
			return http.StatusServiceUnavailable
		}
	}
	return http.StatusInternalServerError
}

// GoogleStatus is the HTTP status of a Google API status name
// ("RESOURCE_EXHAUSTED"), for an error inside a stream that gives no code;
// like StreamStatus, a name it does not know is the server failing.
func GoogleStatus(status string) int {
	switch status {
	case "INVALID_ARGUMENT", "FAILED_PRECONDITION", "OUT_OF_RANGE":
		return http.StatusBadRequest
	case "UNAUTHENTICATED":
		return http.StatusUnauthorized
	case "PERMISSION_DENIED":
		return http.StatusForbidden
	case "NOT_FOUND":
		return http.StatusNotFound
	case "RESOURCE_EXHAUSTED":
		return http.StatusTooManyRequests
	case "UNAVAILABLE":
		return http.StatusServiceUnavailable
	case "DEADLINE_EXCEEDED":
		return http.StatusGatewayTimeout
	}
	return http.StatusInternalServerError
}
