package fallback

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"syscall"
)

// Class is a kind of failure, for choosing which ones move on to the next
// provider (WithFallbackOn). Classes combine with |.
type Class uint

// The classes Classify tells apart.
const (
	// ClassServer: the server failed (a 5xx status other than 529).
	ClassServer Class = 1 << iota
	// ClassRateLimit: the server refused for now (429).
	ClassRateLimit
	// ClassOverloaded: the server is overloaded (529, Anthropic's
	// overloaded_error).
	ClassOverloaded
	// ClassTimeout: one of the provider's own time limits, or the
	// network's, ended the attempt; never the caller's own deadline.
	ClassTimeout
	// ClassConnection: the server could not be reached, or closed the
	// connection before it answered.
	ClassConnection
	// ClassAuth: the key was refused (401, 403).
	ClassAuth
	// ClassRequest: the request was refused as it is (400, 404, 413, 422,
	// a context window exceeded, any other 4xx).
	ClassRequest
	// ClassOther: anything else, such as a broken response.
	ClassOther
)

// DefaultClasses are the failures that fall back when WithFallbackOn is not
// given: those another server may well not have. A refused request
// (ClassRequest) or key (ClassAuth) is not among them: the next provider
// gets the same request, which is mostly refused the same way (a
// conversation too long for the window must reach the history policy that
// shortens it), and a wrong key or model name is a mistake that a silent
// fallback would hide while every call pays for it.
const DefaultClasses = ClassServer | ClassRateLimit | ClassOverloaded | ClassTimeout | ClassConnection

var classNames = []struct {
	c    Class
	name string
}{
	{ClassServer, "server"}, {ClassRateLimit, "rate_limit"}, {ClassOverloaded, "overloaded"},
	{ClassTimeout, "timeout"}, {ClassConnection, "connection"}, {ClassAuth, "auth"},
	{ClassRequest, "request"}, {ClassOther, "other"},
}

// String names the classes in c, joined by "|".
func (c Class) String() string {
	var names []string
	for _, n := range classNames {
		if c&n.c != 0 {
			names = append(names, n.name)
		}
	}
	if len(names) == 0 {
		return "none"
	}
	return strings.Join(names, "|")
}

// statusError is what the adapters' APIError implement: the HTTP status of
// a refusal, or for an error event inside a stream the status the API
// gives that kind of error (0 when it has none).
type statusError interface {
	HTTPStatus() int
}

// Classify says which class err is, for an attempt made with ctx (the
// caller's context): a deadline that is the caller's own is ClassOther,
// since it leaves no time for another attempt. A status comes from the
// first error in the chain with a method HTTPStatus() int, as the
// adapters' APIError have.
func Classify(ctx context.Context, err error) Class {
	if err == nil {
		return 0
	}
	if ctx.Err() != nil {
		return ClassOther
	}
	var se statusError
	if errors.As(err, &se) {
		if c := statusClass(se.HTTPStatus()); c != 0 {
			return c
		}
	}
	var ne net.Error
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		return ClassTimeout
	case errors.As(err, &ne) && ne.Timeout():
		return ClassTimeout
	case errors.Is(err, context.Canceled):
		// Not the caller's cancel (ctx is live): a provider's own.
		return ClassOther
	case errors.Is(err, syscall.ECONNREFUSED), errors.Is(err, syscall.ECONNRESET),
		errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return ClassConnection
	}
	var oe *net.OpError
	var de *net.DNSError
	if errors.As(err, &oe) || errors.As(err, &de) {
		return ClassConnection
	}
	return ClassOther
}

func statusClass(status int) Class {
	switch {
	case status == 529:
		return ClassOverloaded
	case status == http.StatusTooManyRequests:
		return ClassRateLimit
	case status == http.StatusRequestTimeout:
		return ClassTimeout
	case status == http.StatusUnauthorized, status == http.StatusForbidden:
		return ClassAuth
	case status >= 500:
		return ClassServer
	case status >= 400:
		return ClassRequest
	}
	return 0
}
