package guard

import (
	"context"
	"fmt"
	"slices"

	"github.com/lodeworks/lode/artifact"
	"github.com/lodeworks/lode/loop"
)

// CheckFunc decides about one piece of content: "" lets it pass, any
// other reason stops the turn with it. An error is the check failing,
// which stops the turn too; loop.ErrHold asks to see a partial answer
// whole.
type CheckFunc func(ctx context.Context, c loop.Check) (reason string, err error)

// Guard is a named check at some of the four checkpoints. It implements
// loop.Guard and loop.Checkpoints.
type Guard struct {
	name  string
	at    []string
	check CheckFunc
}

// Checkpoints is every checkpoint, in the order a turn meets them.
var Checkpoints = []string{artifact.AtInput, artifact.AtCall, artifact.AtResult, artifact.AtOutput}

// New returns a guard named name that asks check at the checkpoints in at
// (artifact.AtInput, AtCall, AtResult, AtOutput); none means all four.
func New(name string, check CheckFunc, at ...string) *Guard {
	if len(at) == 0 {
		at = Checkpoints
	}
	return &Guard{name: name, at: slices.Clone(at), check: check}
}

// Name returns the guard's name.
func (g *Guard) Name() string { return g.name }

// Checks reports whether the guard checks at.
func (g *Guard) Checks(at string) bool { return slices.Contains(g.at, at) }

// Check asks the guard's function; a reason becomes a *loop.TripError.
func (g *Guard) Check(ctx context.Context, c loop.Check) error {
	if g.check == nil {
		return nil
	}
	reason, err := g.check(ctx, c)
	if err != nil {
		return err
	}
	if reason != "" {
		return loop.Trip(g.name, reason)
	}
	return nil
}

// Content is the text a check reads at c's checkpoint: the message, the
// call's arguments, the result's content (and its text parts), the
// answer.
func Content(c loop.Check) string {
	switch c.At {
	case artifact.AtCall:
		return c.Call.Arguments
	case artifact.AtResult:
		s := c.Result.Content
		for _, p := range c.Result.Parts {
			switch p := p.(type) {
			case artifact.Text:
				s += "\n" + p.Content
			case artifact.Resource:
				s += "\n" + p.Text
			}
		}
		return s
	default:
		return c.Text
	}
}

// checkErr wraps the failure of a check for the trip's reason.
func checkErr(name string, err error) error { return fmt.Errorf("guard %s: %w", name, err) }
