package loop

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/lodeworks/lode/artifact"
)

// ProviderError reports that the turn could not get a whole answer: the
// provider failed (or panicked) before or during the stream, or the turn's
// context ended, in which case Err is the context's error. Partial holds
// the whole artifacts received before the failure; they are not appended
// to the ledger.
type ProviderError struct {
	Err     error
	Partial []artifact.Artifact
	// Started says the provider yielded something (a delta, an artifact)
	// before it failed: the server may bill the request.
	Started bool
}

func (e *ProviderError) Error() string { return "loop: provider: " + errText(e.Err) }
func (e *ProviderError) Unwrap() error { return e.Err }

// panicError describes a recovered panic; a panic with an error stays
// reachable with errors.Is and errors.As.
func panicError(v any) error {
	if err, ok := v.(error); ok {
		return fmt.Errorf("panic: %w", err)
	}
	return fmt.Errorf("panic: %v", v)
}

// errText is the message of an error a loop error wraps, without a
// leading "loop: ": the wrapper names the package once.
func errText(err error) string {
	if err == nil {
		return "unknown error"
	}
	return strings.TrimPrefix(err.Error(), "loop: ")
}

func kindOf(a artifact.Artifact) string {
	if a = artifact.Normalize(a); a == nil {
		return "nil artifact"
	}
	return a.Kind()
}

// OptionError reports that an invoke option returned an error or panicked
// while the turn's request was being resolved (x/tool's WithFilteredTools
// runs its ToolFilter there); the provider was not called and the ledger
// is as the turn found it. Index is the option's position among those
// resolved: the Step's own (WithInvokeOptions) first, then those given to
// Turn or Run. Panic holds the recovered value and Stack the stack when it
// panicked.
type OptionError struct {
	Index int
	Err   error
	Panic any
	Stack []byte
}

func (e *OptionError) Error() string {
	if e.Panic != nil {
		return fmt.Sprintf("loop: preparing the turn: invoke option %d panicked: %v", e.Index, e.Panic)
	}
	// An option's refusal (a policy's, a spend limit's) names itself; its
	// index would tell a person nothing.
	return "loop: preparing the turn: " + errText(e.Err)
}
func (e *OptionError) Unwrap() error { return e.Err }

// HandlerError reports that a handler returned an error, panicked, or
// emitted a turn with an invalid role while handling Artifact. Handler is
// its index in WithHandlers. Panic holds the recovered value and Stack the
// stack when it panicked.
type HandlerError struct {
	Handler  int
	Artifact artifact.Artifact
	Err      error
	Panic    any
	Stack    []byte
}

func (e *HandlerError) Error() string {
	if e.Panic != nil {
		return fmt.Sprintf("loop: handler %d panicked on %s: %v", e.Handler, kindOf(e.Artifact), e.Panic)
	}
	return fmt.Sprintf("loop: handler %d on %s: %s", e.Handler, kindOf(e.Artifact), errText(e.Err))
}
func (e *HandlerError) Unwrap() error { return e.Err }

// LedgerError reports that the ledger.State failed: appending a turn
// returned an error, or one of its methods panicked. Panic holds the
// recovered value and Stack the stack when it panicked.
type LedgerError struct {
	Err   error
	Panic any
	Stack []byte
}

func (e *LedgerError) Error() string {
	if e.Panic != nil {
		return fmt.Sprintf("loop: ledger panicked: %v", e.Panic)
	}
	// A ledger error names the ledger already.
	if msg := errText(e.Err); strings.HasPrefix(msg, "ledger: ") {
		return "loop: " + msg
	}
	return "loop: ledger: " + errText(e.Err)
}
func (e *LedgerError) Unwrap() error { return e.Err }

// Limit names what stopped a run.
type Limit string

// The limits a Run enforces.
const (
	LimitTurns  Limit = "turns"
	LimitTokens Limit = "tokens"
	LimitTime   Limit = "time"
)

// ErrLimit matches every *LimitError with errors.Is.
var ErrLimit = errors.New("loop: limit reached")

// LimitError reports that Run stopped at a limit while the model still had
// work to do. Used and Max are in the limit's unit (turns, tokens,
// milliseconds, millionths of a US dollar).
type LimitError struct {
	Limit Limit
	Used  int64
	Max   int64
	// UsedUSD and MaxUSD are set for LimitCost.
	UsedUSD, MaxUSD float64
	// NextUSD, for LimitCost, is set when the limit refused a request
	// before it was sent: what the request could cost at the least (its
	// input and MinAnswerTokens of answer), more than the limit had left.
	NextUSD float64
	// Err is the cause, e.g. context.DeadlineExceeded for LimitTime.
	Err error
}

func (e *LimitError) Error() string {
	if e.Limit == LimitCost {
		if e.NextUSD > 0 {
			return fmt.Sprintf("loop: cost limit reached ($%.4f of $%.4f spent; the next request may cost $%.4f)", e.UsedUSD, e.MaxUSD, e.NextUSD)
		}
		return fmt.Sprintf("loop: cost limit reached ($%.4f of $%.4f)", e.UsedUSD, e.MaxUSD)
	}
	return fmt.Sprintf("loop: %s limit reached (%d of %d)", e.Limit, e.Used, e.Max)
}

// Unwrap returns the cause and ErrLimit.
func (e *LimitError) Unwrap() []error {
	if e.Err != nil {
		return []error{ErrLimit, e.Err}
	}
	return []error{ErrLimit}
}

// wrapCause turns a cancellation caused by a run's time limit into that
// *LimitError, keeping the original error reachable.
func wrapCause(ctx context.Context, err error) error {
	var le *LimitError
	if errors.As(context.Cause(ctx), &le) && !errors.As(err, new(*LimitError)) {
		return &LimitError{Limit: le.Limit, Used: le.Used, Max: le.Max, Err: err}
	}
	return err
}
