package providertest

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/lodeworks/lode/artifact"
	"github.com/lodeworks/lode/ledger"
	"github.com/lodeworks/lode/loop"
	"github.com/lodeworks/lode/provider"
)

// Stopped is a history that guards left behind (see loop's guards), as a
// request carries it: what a guard stopped is taken out and every turn
// keeps its place, so some turns have nothing left to send.
type Stopped struct {
	Name  string
	Turns []ledger.Turn
}

// The names of the histories StoppedHistories returns, for an adapter's
// test to key its expected bodies by.
const (
	StoppedAnswer    = "stopped answer"         // an output guard left Usage alone
	StoppedInput     = "stopped input"          // an input guard emptied the user turn
	StoppedResult    = "stopped result"         // a result guard replaced a tool's result
	TripwireAnywhere = "tripwire in every role" // a request built from stored turns by hand
)

// StoppedHistories returns the histories every adapter must send with no
// empty message and no tripwire: each adapter's test says what its server
// is sent for each.
func StoppedHistories() []Stopped {
	user := func(arts ...artifact.Artifact) ledger.Turn {
		return ledger.Turn{Role: ledger.RoleUser, Artifacts: arts}
	}
	text := func(s string) artifact.Text { return artifact.Text{Content: s} }
	usage := artifact.Usage{InputTokens: 12, OutputTokens: 3}
	return []Stopped{
		{StoppedAnswer, []ledger.Turn{
			user(text("hi")),
			{Role: ledger.RoleAssistant, Artifacts: []artifact.Artifact{usage}},
			user(text("next")),
		}},
		{StoppedInput, []ledger.Turn{
			user(),
			{Role: ledger.RoleAssistant, Artifacts: []artifact.Artifact{
				artifact.Tripwire{Guard: "pii", At: artifact.AtInput, Reason: "the message holds a card number"}, usage,
			}},
			user(text("next")),
		}},
		{StoppedResult, []ledger.Turn{
			user(text("a")),
			{Role: ledger.RoleAssistant, Artifacts: []artifact.Artifact{
				artifact.ToolCall{ID: "c1", Name: "lookup", Arguments: `{"q":"x"}`},
			}},
			{Role: ledger.RoleTool, Artifacts: []artifact.Artifact{
				artifact.ToolResult{ToolCallID: "c1", Name: "lookup", IsError: true,
					Content: `stopped: guard "secrets" withheld this result: it holds a key`},
				artifact.Tripwire{Guard: "secrets", At: artifact.AtResult, Reason: "it holds a key", ToolCallID: "c1"},
			}},
			user(text("b")),
		}},
		{TripwireAnywhere, []ledger.Turn{
			{Role: ledger.RoleSystem, Artifacts: []artifact.Artifact{
				text("Be brief."), artifact.Tripwire{Guard: "g", At: artifact.AtInput},
			}},
			user(artifact.Tripwire{Guard: "g", At: artifact.AtInput}, text("hi")),
			{Role: ledger.RoleAssistant, Artifacts: []artifact.Artifact{
				text("hello"), artifact.Tripwire{Guard: "g", At: artifact.AtOutput}, artifact.Finish{Reason: "stop"},
			}},
			user(text("next")),
		}},
	}
}

// StoppedTurns returns the turns of the history StoppedHistories names
// name, or nil.
func StoppedTurns(name string) []ledger.Turn {
	for _, s := range StoppedHistories() {
		if s.Name == name {
			return s.Turns
		}
	}
	return nil
}

// Forbidden is the word RunGuarded's guard stops.
const Forbidden = "FORBIDDEN"

// wordGuard stops, at every checkpoint, what holds Forbidden.
type wordGuard struct{}

func (wordGuard) Name() string { return "word" }

func (wordGuard) Check(_ context.Context, c loop.Check) error {
	for _, s := range []string{c.Text, c.Call.Arguments, c.Result.Content} {
		if strings.Contains(s, Forbidden) {
			return loop.Trip("word", "it says "+Forbidden)
		}
	}
	return nil
}

// RunGuarded drives p through loop.Run with a guard that stops what says
// Forbidden. The user says "hi" and p's server answers with its first
// reply, which must say Forbidden and is stopped; the user's "FORBIDDEN?"
// is stopped before any request; the user's "next" is answered with the
// server's second reply. What the server was sent second is the adapter's
// test to check: "hi" and "next", and nothing else.
func RunGuarded(t *testing.T, p provider.Provider) {
	t.Helper()
	step := loop.New(loop.WithGuards(wordGuard{}))
	th := ledger.NewThread()
	for i, say := range []string{"hi", Forbidden + "?", "next"} {
		if err := th.Append(ledger.RoleUser, artifact.Text{Content: say}); err != nil {
			t.Fatal(err)
		}
		_, err := step.Run(t.Context(), th, p)
		if i < 2 && !errors.Is(err, loop.ErrTripped) {
			t.Fatalf("run %d: %v, want a trip", i+1, err)
		}
		if i == 2 && err != nil {
			t.Fatalf("run after the trips: %v", err)
		}
	}
}
