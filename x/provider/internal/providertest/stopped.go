package providertest

import (
	"github.com/lodeworks/lode/artifact"
	"github.com/lodeworks/lode/ledger"
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
