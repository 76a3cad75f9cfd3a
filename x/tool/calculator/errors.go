package calculator

import (
	"errors"
	"fmt"
)

// The kinds of evaluation failure; every error Eval returns is an *Error
// that matches exactly one of them with errors.Is.
var (
	// ErrSyntax: the text is not an expression the calculator understands.
	ErrSyntax = errors.New("calculator: syntax error")
	// ErrUnknownName: a name that is neither a function nor a constant.
	ErrUnknownName = errors.New("calculator: unknown name")
	// ErrDivisionByZero: division or modulo by zero, or 0 to a negative power.
	ErrDivisionByZero = errors.New("calculator: division by zero")
	// ErrDomain: a function or operator applied outside its domain
	// (sqrt(-1), ln(0), a fractional power of a negative number).
	ErrDomain = errors.New("calculator: outside the domain")
	// ErrRange: a result too large or too small to represent within the
	// limits (exact values are bounded in bits, approximations by float64).
	ErrRange = errors.New("calculator: out of range")
	// ErrTooLong: the expression is longer than the input limit.
	ErrTooLong = errors.New("calculator: expression too long")
	// ErrTooDeep: the expression nests deeper than the depth limit.
	ErrTooDeep = errors.New("calculator: expression nested too deeply")
)

// Error is an evaluation failure: what went wrong, in words a model can act
// on, and where (Column counts characters from 1; 0 when it concerns the
// whole expression).
type Error struct {
	Kind   error
	Column int
	Msg    string
}

func (e *Error) Error() string {
	if e.Column > 0 {
		return fmt.Sprintf("calculator: %s (column %d)", e.Msg, e.Column)
	}
	return "calculator: " + e.Msg
}

// Unwrap returns the kind, so errors.Is(err, ErrDivisionByZero) works.
func (e *Error) Unwrap() error { return e.Kind }
