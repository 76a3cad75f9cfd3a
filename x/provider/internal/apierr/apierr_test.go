package apierr

import (
	"context"
	"errors"
	"fmt"
	"io"
	"reflect"
	"testing"
	"time"
)

func TestRefusalText(t *testing.T) {
	cases := []struct {
		name string
		r    Refusal
		want string
	}{
		{"bare status", Refusal{Prefix: "p", Status: 404}, "p: 404 Not Found"},
		{"stream", Refusal{Prefix: "p", Message: "boom"}, "p: error in stream: boom"},
		{"unknown status", Refusal{Prefix: "p", Status: 599}, "p: 599"},
		{"named status", Refusal{Prefix: "p", Status: 529, StatusText: "Overloaded"}, "p: 529 Overloaded"},
		{"everything", Refusal{Prefix: "p", Status: 429, Type: "rate_limit_error", Message: "slow", Attempts: 3, Hint: "wait"},
			"p: 429 Too Many Requests (rate_limit_error): slow (after 3 attempts) — wait"},
		{"one attempt not said", Refusal{Prefix: "p", Status: 500, Attempts: 1}, "p: 500 Internal Server Error"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.r.Text(); got != tc.want {
				t.Errorf("got  %q\nwant %q", got, tc.want)
			}
		})
	}
}

func TestTimeoutText(t *testing.T) {
	if got, want := TimeoutText("p", true, time.Minute), "p: the server sent nothing for 1m0s (the idle timeout): raise it with WithIdleTimeout, or pass a negative value to turn it off"; got != want {
		t.Errorf("idle: %q", got)
	}
	if got, want := TimeoutText("p", false, time.Second), "p: the request took longer than 1s (the request timeout): raise it with WithTimeout, or pass 0 to turn it off"; got != want {
		t.Errorf("whole: %q", got)
	}
}

type limitErr struct{}

func (*limitErr) Error() string { return "limit" }

func TestFromContext(t *testing.T) {
	ctx, cancel := context.WithCancelCause(context.Background())
	own := &limitErr{}
	cancel(own)
	if got := FromContext[*limitErr](ctx, "p"); got != own {
		t.Errorf("own limit: %v", got)
	}
	ctx, cancel2 := context.WithCancel(context.Background())
	cancel2()
	got := FromContext[*limitErr](ctx, "p")
	if got.Error() != "p: context canceled" || !errors.Is(got, context.Canceled) {
		t.Errorf("plain cancel: %v", got)
	}
}

func TestResponseText(t *testing.T) {
	kind := errors.New("p: malformed response")
	cause := errors.New("bad")
	if got, want := ResponseText(kind, "chunk", "{x\"", cause), `p: malformed response: chunk: bad (data: "{x\"")`; got != want {
		t.Errorf("got %q", got)
	}
	if got, want := ResponseText(kind, "chunk", "", nil), "p: malformed response: chunk"; got != want {
		t.Errorf("got %q", got)
	}
	if got := Unwrap(kind, cause); !reflect.DeepEqual(got, []error{kind, cause}) {
		t.Errorf("Unwrap = %v", got)
	}
	if got := Unwrap(kind, nil); !reflect.DeepEqual(got, []error{kind}) {
		t.Errorf("Unwrap = %v", got)
	}
}

func TestShorten(t *testing.T) {
	cases := []struct {
		s    string
		n    int
		want string
	}{
		{"short", 10, "short"},
		{"exactly", 7, "exactly"},
		{"abcdef", 3, "abc…"},
		{"aéb", 2, "a…"}, // never halves the é
	}
	for _, tc := range cases {
		if got := Shorten(tc.s, tc.n); got != tc.want {
			t.Errorf("Shorten(%q, %d) = %q, want %q", tc.s, tc.n, got, tc.want)
		}
	}
}

func TestNamesType(t *testing.T) {
	n := Names{
		Timeout: errors.New("timeout"), IdleTimeout: errors.New("idle"),
		Incomplete: errors.New("incomplete"), Malformed: errors.New("malformed"), InvalidToolCall: errors.New("call"),
	}
	cases := []struct {
		name string
		err  error
		want string
		ok   bool
	}{
		{"idle", errors.Join(n.IdleTimeout, n.Timeout), "idle_timeout", true},
		{"timeout", n.Timeout, "timeout", true},
		{"deadline", fmt.Errorf("x: %w", context.DeadlineExceeded), "timeout", true},
		{"canceled", fmt.Errorf("x: %w", context.Canceled), "canceled", true},
		{"incomplete", fmt.Errorf("x: %w", n.Incomplete), "incomplete_response", true},
		{"malformed", n.Malformed, "malformed_response", true},
		{"tool call", n.InvalidToolCall, "invalid_tool_call", true},
		{"other", errors.New("else"), "", false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := n.Type(tc.err)
			if got != tc.want || ok != tc.ok {
				t.Errorf("Type = %q, %v; want %q, %v", got, ok, tc.want, tc.ok)
			}
		})
	}
}

func TestRequestText(t *testing.T) {
	cause := errors.New("bad")
	cases := []struct {
		turn       int
		role, tool string
		cause      error
		want       string
	}{
		{-1, "", "", nil, "p: request: MaxTokens is -1"},
		{2, "assistant", "t", nil, "p: request: turn 2 (assistant): MaxTokens is -1"},
		{-1, "", "look", cause, `p: request: tool "look": MaxTokens is -1: bad`},
		{0, "user", "", cause, "p: request: turn 0 (user): MaxTokens is -1: bad"},
	}
	for _, tc := range cases {
		if got := RequestText("p", tc.turn, tc.role, tc.tool, "MaxTokens is -1", tc.cause); got != tc.want {
			t.Errorf("RequestText = %q, want %q", got, tc.want)
		}
	}
}

func TestHintsAndUnanswered(t *testing.T) {
	if got := HintRateLimited(0); got != "rate limited: slow down or raise the limit" {
		t.Errorf("no wait: %q", got)
	}
	if got := HintRateLimited(1500 * time.Millisecond); got != "rate limited; the server asked to wait 1.5s" {
		t.Errorf("a wait: %q", got)
	}
	for err, want := range map[error]bool{io.EOF: true, fmt.Errorf("read: %w", io.ErrUnexpectedEOF): true, errors.New("refused"): false} {
		if Closed(err) != want {
			t.Errorf("Closed(%v) = %v", err, !want)
		}
	}
	inner := errors.New("dial tcp: refused")
	err := Unreachable("p", "http://h:1/v1", inner)
	if err.Error() != "p: cannot reach the server at http://h:1/v1: dial tcp: refused" || !errors.Is(err, inner) {
		t.Errorf("Unreachable = %v", err)
	}
}
