package output

import (
	"errors"
	"fmt"
)

var (
	// ErrInvalid is what an *InvalidError matches: the model gave no answer
	// that matches the schema.
	ErrInvalid = errors.New("output: no valid answer")
	// ErrOption is what every configuration error New reports matches.
	ErrOption = errors.New("output: invalid option")
	// ErrToolName is returned when a turn offers a tool under the name of
	// the final-answer tool; WithToolName picks another.
	ErrToolName = errors.New("output: the final-answer tool's name is taken")
)

// InvalidError reports that the model gave no valid answer in Attempts
// tries. Last is its last answer as it wrote it, for logs or for a caller
// that can still use part of it; Err says why it was refused.
type InvalidError struct {
	Attempts int
	Last     string
	Err      error
}

func (e *InvalidError) Error() string {
	return fmt.Sprintf("output: no valid answer after %d attempt(s): %v; the last answer is in InvalidError.Last (WithMaxAttempts allows more tries)", e.Attempts, e.Err)
}

// Unwrap returns ErrInvalid and the reason the last answer was refused.
func (e *InvalidError) Unwrap() []error { return []error{ErrInvalid, e.Err} }
