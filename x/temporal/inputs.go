package temporal

import (
	"time"

	sdk "go.temporal.io/sdk/temporal"

	"github.com/lodeworks/lode/artifact"
)

// TurnInput asks for the model turn that follows turn After.
type TurnInput struct {
	Thread string
	// Agent names the child agent whose turn it is; "" is the root.
	Agent string `json:",omitempty"`
	// After is the index of the last turn the workflow knows of; an
	// assistant turn stored after it means the turn already landed (the
	// activity is being retried) and the model is not asked again.
	After int
	// Deadline is when the run's time limit ends: the model's answer
	// still streaming then is cut short. Zero means no limit.
	Deadline time.Time `json:",omitzero"`
}

// CallRef is one tool call of an answer, as the workflow needs it.
type CallRef struct {
	ID, Name   string
	Idempotent bool
	// Timeout bounds one attempt at the call; 0 means
	// RunInput.CallTimeout.
	Timeout time.Duration `json:",omitempty"`
	// Retry is the retry policy of an idempotent call (WithCallPolicy);
	// nil means RunInput.CallAttempts attempts.
	Retry *sdk.RetryPolicy `json:",omitempty"`
	// Child says the call starts a child agent (WithChildAgents).
	Child bool `json:",omitempty"`
}

// TurnResult is a model turn as the workflow keeps it: where it is in the
// thread and the calls it made, never the transcript.
type TurnResult struct {
	At    int
	Calls []CallRef
	// Answer is the turn's text when it made no calls.
	Answer string
	// Paused says that the server paused the answer
	// (artifact.FinishPauseTurn): the next turn carries it on.
	Paused bool `json:",omitempty"`
	// Tokens is what the turn used, as its provider reported it
	// (artifact.Usage), for the run's MaxTokens.
	Tokens int64 `json:",omitempty"`
	// Tripped is the tripwire the thread ends with when a guard stopped
	// the turn (loop.WithGuards): at the user's message, the answer, or
	// one of its calls, before any ran. The run ends with ErrTypeTripped.
	Tripped *artifact.Tripwire `json:",omitempty"`
}

// CallInput names a call of the answer at turn At to run, with the
// decision on it when it waited for approval.
type CallInput struct {
	Thread   string
	Agent    string `json:",omitempty"`
	At       int
	ID       string
	Decision *artifact.Decision
	// Stage keeps the call's result aside, for CommitName to append in
	// the calls' order: the turn's calls run in parallel.
	Stage bool `json:",omitempty"`
	// Deadline is when the run's time limit ends: the call still running
	// then is cancelled, as in a loop run. Zero means no limit.
	Deadline time.Time `json:",omitzero"`
}

// CommitInput appends the staged results of the parallel calls IDs of the
// answer at turn At, in that order; each of Failed, whose attempts failed
// for good and that has no result, gets loop.InterruptedMessage.
type CommitInput struct {
	Thread string
	Agent  string `json:",omitempty"`
	At     int
	IDs    []string
	Failed []string `json:",omitempty"`
}

// CallResult is what became of a call.
type CallResult struct {
	IsError bool
	// Pending is set when the call waits for a person's decision.
	Pending *artifact.Pending
	// Len is the thread's length afterwards.
	Len int
	// Waiting lists, in a commit's result, the failed calls that wait
	// for a decision: they need approval and never ran (see recovered).
	Waiting []artifact.Pending `json:",omitempty"`
	// Tripped is the tripwire stored after the call's result when a
	// guard stopped it (loop.WithGuards): the run ends with
	// ErrTypeTripped.
	Tripped *artifact.Tripwire `json:",omitempty"`
}
