package web

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"syscall"
	"testing"

	"github.com/lodeworks/lode/loop"
)

type statusError int

func (s statusError) Error() string   { return fmt.Sprintf("adapter: %d", int(s)) }
func (s statusError) HTTPStatus() int { return int(s) }

// TestPlainError: each kind of failure a turn meets is one sentence.
func TestPlainError(t *testing.T) {
	refused := &net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}
	provider := func(err error) error {
		return &loop.ProviderError{Err: fmt.Errorf("openai: cannot reach the server at http://x: %w", err)}
	}
	cases := []struct {
		err  error
		want string
	}{
		{provider(refused), "The model server could not be reached."},
		{provider(syscall.ECONNREFUSED), "The model server could not be reached."},
		{provider(&net.DNSError{Err: "no such host", Name: "x", IsNotFound: true}), "The model server could not be reached."},
		{provider(context.DeadlineExceeded), "The model server did not answer in time."},
		{provider(&net.OpError{Op: "read", Err: os.ErrDeadlineExceeded}), "The model server did not answer in time."},
		{&loop.ProviderError{Err: statusError(401)}, "The model server refused the API key."},
		{&loop.ProviderError{Err: statusError(403)}, "The model server refused the API key."},
		{&loop.ProviderError{Err: statusError(404)}, "The model server does not know the model asked for."},
		{&loop.ProviderError{Err: statusError(429)}, "The model server is rate limiting requests: try again in a moment."},
		{&loop.ProviderError{Err: statusError(503)}, "The model server failed: try again later."},
		{&loop.ProviderError{Err: statusError(400)}, "The model server refused the request."},
		{&loop.ProviderError{Err: errors.New("stream ended early")}, "The model server's answer could not be read."},
		{&loop.LimitError{Limit: loop.LimitTurns, Used: 9, Max: 8}, "The answer stopped at its turns limit."},
		{&loop.LimitError{Limit: loop.LimitTime, Err: context.DeadlineExceeded}, "The answer stopped at its time limit."},
		{&loop.OptionError{Err: errors.New("bad filter")}, "The turn could not be prepared."},
		{&loop.LedgerError{Err: errors.New("disk full")}, "The conversation could not be stored."},
		{&loop.HandlerError{Err: errors.New("panic")}, "A tool failed unexpectedly."},
		{errors.New("something else"), "The answer failed."},
	}
	for _, c := range cases {
		if got := plainError(c.err); got != c.want {
			t.Errorf("plainError(%v) = %q, want %q", c.err, got, c.want)
		}
	}
}
