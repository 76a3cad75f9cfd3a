package fallback

import (
	"errors"
	"fmt"
	"strings"
)

// ErrExhausted is what an *Error matches when every provider was tried and
// each failed before answering.
var ErrExhausted = errors.New("fallback: every provider failed")

// AttemptError is the failure of one attempt.
type AttemptError struct {
	// Attempt counts the attempts of one invocation from 0, in the order
	// they started; Provider is the index of the provider it went to, in
	// the order New was given them.
	Attempt, Provider int
	// Model is the provider's Model(), when it has that method.
	Model string
	Class Class
	Err   error
}

func (e *AttemptError) Error() string {
	name := fmt.Sprintf("provider %d", e.Provider)
	if e.Model != "" {
		name += " (" + e.Model + ")"
	}
	return fmt.Sprintf("attempt %d to %s: %v", e.Attempt+1, name, e.Err)
}

// Unwrap returns the attempt's error.
func (e *AttemptError) Unwrap() error { return e.Err }

// Error is an invocation of several attempts that all failed before one
// answered: every provider was tried (Exhausted), or the last failure was
// one that does not fall back. Through Unwrap it matches each attempt's
// error, so that errors.Is and errors.As find any of them, and
// ErrExhausted when Exhausted.
type Error struct {
	Attempts  []*AttemptError
	Exhausted bool
}

func (e *Error) Error() string {
	var b strings.Builder
	if e.Exhausted {
		fmt.Fprintf(&b, "fallback: every provider failed (%d attempts)", len(e.Attempts))
	} else {
		fmt.Fprintf(&b, "fallback: %d attempts failed, the last with an error that does not fall back", len(e.Attempts))
	}
	for _, a := range e.Attempts {
		b.WriteString("; ")
		b.WriteString(a.Error())
	}
	return b.String()
}

// Unwrap returns every attempt's error, in order, after ErrExhausted when
// Exhausted.
func (e *Error) Unwrap() []error {
	errs := make([]error, 0, len(e.Attempts)+1)
	if e.Exhausted {
		errs = append(errs, ErrExhausted)
	}
	for _, a := range e.Attempts {
		errs = append(errs, a)
	}
	return errs
}

// ErrNoProviders is New's error when it is given no provider.
var ErrNoProviders = errors.New("fallback: no providers given")
