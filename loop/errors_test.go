package loop_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/lodeworks/lode/artifact"
	"github.com/lodeworks/lode/ledger"
	"github.com/lodeworks/lode/loop"
)

// A loop error that wraps another names each package once.
func TestErrorPrefixOnce(t *testing.T) {
	leased := &ledger.LeaseError{Thread: "t", Owner: "b", Holder: ledger.Lease{Owner: "a"}}
	cases := []struct {
		err  error
		want string
	}{
		{&loop.DecisionError{ToolCallID: "c1", Err: loop.ErrNotPending}, `loop: decision on call "c1": no such pending call`},
		{&loop.DecisionError{ToolCallID: "c1", Err: fmt.Errorf("the call was already decided: %w", ledger.ErrConflict)},
			`loop: decision on call "c1": the call was already decided: ledger: conflict`},
		{&loop.LedgerError{Err: ledger.ErrClosed}, "loop: ledger: closed"},
		{&loop.LedgerError{Err: errors.New("disk full")}, "loop: ledger: disk full"},
		{&loop.LedgerError{Err: leased}, "loop: " + leased.Error()},
		{&loop.ProviderError{Err: &loop.LimitError{Limit: loop.LimitTurns, Used: 3, Max: 3}}, "loop: provider: turns limit reached (3 of 3)"},
		{&loop.HandlerError{Artifact: artifact.Text{}, Err: &loop.PendingError{Thread: "t"}}, "loop: handler 0 on text: thread t: 0 tool call(s) wait for approval:"},
		{&loop.OptionError{Index: 1, Err: loop.ErrPaused}, "loop: preparing the turn: tool calls wait for approval"},
	}
	for _, c := range cases {
		if got := c.err.Error(); got != c.want {
			t.Errorf("%T: %q, want %q", c.err, got, c.want)
		}
	}
}
