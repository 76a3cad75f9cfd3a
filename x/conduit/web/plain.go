package web

import (
	"context"
	"errors"
	"net"
	"net/http"
	"syscall"

	"github.com/lodeworks/lode/loop"
)

// plainError is the one sentence a person is shown for a failed turn; the
// error's text, with its whole chain, goes with it as the detail (see
// stream.end). The sentence says what happened in words a person reading
// the page knows, and what to do when there is something to do.
func plainError(err error) string {
	if le, ok := errors.AsType[*loop.LimitError](err); ok {
		return "The answer stopped at its " + string(le.Limit) + " limit."
	}
	if s, ok := errors.AsType[interface {
		error
		HTTPStatus() int
	}](err); ok {
		switch code := s.HTTPStatus(); {
		case code == http.StatusUnauthorized || code == http.StatusForbidden:
			return "The model server refused the API key."
		case code == http.StatusNotFound:
			return "The model server does not know the model asked for."
		case code == http.StatusTooManyRequests:
			return "The model server is rate limiting requests: try again in a moment."
		case code >= 500:
			return "The model server failed: try again later."
		case code >= 400:
			return "The model server refused the request."
		}
	}
	var ne net.Error
	switch {
	case errors.Is(err, context.DeadlineExceeded), errors.As(err, &ne) && ne.Timeout():
		return "The model server did not answer in time."
	case errors.Is(err, syscall.ECONNREFUSED), isType[*net.OpError](err), isType[*net.DNSError](err):
		return "The model server could not be reached."
	case isType[*loop.ProviderError](err):
		return "The model server's answer could not be read."
	case isType[*loop.OptionError](err):
		return "The turn could not be prepared."
	case isType[*loop.LedgerError](err):
		return "The conversation could not be stored."
	case isType[*loop.HandlerError](err):
		return "A tool failed unexpectedly."
	}
	return "The answer failed."
}

func isType[T error](err error) bool {
	_, ok := errors.AsType[T](err)
	return ok
}
