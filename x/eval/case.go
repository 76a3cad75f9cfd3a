package eval

import (
	"context"
	"encoding/json"
	"time"

	"github.com/lodeworks/lode/artifact"
	"github.com/lodeworks/lode/ledger"
	"github.com/lodeworks/lode/loop"
	"github.com/lodeworks/lode/provider"
	"github.com/lodeworks/lode/tool"
	"github.com/lodeworks/lode/x/output"
	"github.com/lodeworks/lode/x/policy"
)

// DefaultMaxTurns bounds every run, whatever its budgets say, so that a
// model that never stops calling tools ends the case instead of the test.
const DefaultMaxTurns = 20

// Suite is a named set of cases, run together and reported together.
type Suite struct {
	Name  string
	Cases []Case
	// ReportDir is where Run writes report.json, report.html and
	// report.txt. "" means $LODE_EVAL_REPORT, and without it a folder
	// lode-eval/<suite name> in the system's temporary folder.
	ReportDir string
	// Baseline is a report.json of an earlier run: a case whose score fell
	// below its baseline score, or that passed there and fails now, is a
	// regression and fails. "" means $LODE_EVAL_BASELINE, or none.
	Baseline string
	// Pricer prices each model turn, for the cost budget and the report
	// (x/catalog's Default is one); nil leaves costs at 0.
	Pricer loop.Pricer
	// Clock times each case; nil means time.Now. Tests give a fake one.
	Clock func() time.Time
}

// Case is one conversation to run and what it must show.
type Case struct {
	Name string
	// Thread, when set, gives the starting thread (a copy per run); From,
	// instead, starts from a fork point of a recorded thread (FromFork,
	// FromState), and its error fails the case. System and Prompt, when
	// set, are appended to the starting thread as a system and a user turn.
	Thread func() ledger.State
	From   Start
	System string
	Prompt string
	// Model answers the turns.
	Model Model
	// Tools fills the case's registry: packs mounted, Go functions
	// registered. nil means no tools.
	Tools func(ctx context.Context, reg tool.Registry) error
	// Policy, with Roles, is the rule book the calls go through, as every
	// lode door applies it (x/policy's Enforcer): its refusals are
	// recorded per call for Refused.
	Policy policy.Source
	Roles  []string
	// Guards check the run as loop.WithGuards does; TrippedBy and
	// NoTripwire read what they stopped.
	Guards []loop.Guard
	// Output asks for a typed answer (Typed) instead of prose.
	Output Output
	// MaxTurns bounds the loop (0: DefaultMaxTurns). A budget that fails
	// the case is an expectation: MaxTurns in Expect.
	MaxTurns int
	// Expect are the checks the case must pass; Scorers grade it.
	Expect  []Expectation
	Scorers []Scorer
}

// Output asks a model for a final answer of a type and returns its JSON.
// Typed gives one for a Go type through x/output.
type Output interface {
	Answer(ctx context.Context, step *loop.Step, st ledger.State, prov provider.Provider) (json.RawMessage, error)
}

// Typed asks for an answer of type T with x/output (opts are its
// options); the decoded answer is checked with Field and reported as
// JSON.
func Typed[T any](opts ...output.Option) Output { return typed[T]{opts: opts} }

type typed[T any] struct{ opts []output.Option }

func (o typed[T]) Answer(ctx context.Context, step *loop.Step, st ledger.State, prov provider.Provider) (json.RawMessage, error) {
	a, err := output.New[T](o.opts...)
	if err != nil {
		return nil, err
	}
	v, err := a.Run(ctx, step, st, prov)
	if err != nil {
		return nil, err
	}
	return json.Marshal(v)
}

// Outcome is what one run of a case did: what expectations and scorers
// read, and what the report shows.
type Outcome struct {
	Case  string
	Model string
	// Thread is the thread after the run.
	Thread ledger.State
	// Calls are the tool calls the model made, in order.
	Calls []Call
	// Text is the text of the model's last answer.
	Text string
	// Answer is the typed answer as JSON, when the case asked for one and
	// got it.
	Answer json.RawMessage
	// Turns counts the model's answers; Usage adds up what they used
	// (CostUSD included, with a Pricer).
	Turns    int
	Usage    artifact.Usage
	Duration time.Duration
	// Err is how the run failed, if it did: a *loop.TripError when a
	// guard stopped it.
	Err error
	// Tripwires are the guards' trips the run stored, in order.
	Tripwires []artifact.Tripwire
}

// Call is one tool call and what came of it.
type Call struct {
	ID        string `json:"id"`
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
	Result    string `json:"result,omitempty"`
	IsError   bool   `json:"is_error,omitempty"`
	// Refused is set when the policy refused the call; Rule says which
	// rule decided.
	Refused bool   `json:"refused,omitempty"`
	Rule    string `json:"rule,omitempty"`
}
