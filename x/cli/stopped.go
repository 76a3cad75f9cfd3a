package cli

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/lodeworks/lode/ledger"
	"github.com/lodeworks/lode/loop"
	"github.com/lodeworks/lode/x/policy"
)

// stoppedKey marks a stored thread whose run stopped on an error with the
// model's answer still due (its last turn is tool results, or a user
// message, and nothing waits for approval): the model's server was
// unreachable or failed, say. Its value is when, and why. lode recover and
// lode worker continue such a thread, as lode run --thread ID without a
// prompt does; a run that ends, or pauses, clears the mark.
const stoppedKey = "lode.run.stopped"

// answerDue reports whether the model owes st an answer: its last turn is
// tool results or a user message, and no call waits for approval.
func answerDue(st ledger.State) bool {
	turns := st.Turns()
	if len(turns) == 0 || len(loop.Pending(st)) > 0 {
		return false
	}
	switch turns[len(turns)-1].Role {
	case ledger.RoleTool, ledger.RoleUser:
		return true
	}
	return false
}

// noteStop records on st how its run ended, for lode recover: a run that
// failed with the answer due is marked (stoppedKey), one that finished or
// paused is unmarked. A limit, a policy's refusal, a refused decision, a
// guard's trip and an interruption (Ctrl-C) are how a run is meant to stop, and leave the
// mark as it was; so does a lease held by another process, which is not
// this command's to judge.
func noteStop(st ledger.State, err error) {
	if st == nil {
		return
	}
	var pe *loop.PendingError
	var le *loop.LimitError
	var se *policy.SpendError
	var de *loop.DecisionError
	switch {
	case err == nil || errors.As(err, &pe):
		if v, _ := st.Metadata(stoppedKey); v != "" {
			_ = st.SetMetadata(stoppedKey, "")
		}
	case errors.As(err, &le), errors.As(err, &se), errors.As(err, &de),
		errors.Is(err, context.Canceled), errors.Is(err, ledger.ErrLeased), errors.Is(err, loop.ErrUnpriced),
		errors.Is(err, loop.ErrTripped):
	case answerDue(st):
		// Best effort: the run's own error is what the caller reports.
		_ = st.SetMetadata(stoppedKey, time.Now().UTC().Format(time.RFC3339)+" "+oneLine(err.Error()))
	}
}

// goOn continues st from where its run stopped, without a new message:
// approved calls with no result are answered (interrupted, or run again
// when idempotent) and the model is asked for the answer it owes.
func (a *agent) goOn(ctx context.Context, st ledger.State) error {
	_, err := a.step.Resume(ctx, st, a.prov, nil)
	_ = a.step.Flush(context.WithoutCancel(ctx))
	a.printer.endLine()
	a.printer.summary()
	noteStop(st, err)
	return explain(err, a.cfg, a.baseURL)
}

// goOnCmd is the command that continues thread id of the store at dir
// without a new message.
func goOnCmd(o *options, dir, id string) string {
	words := []string{"lode", "run"}
	if o.config != "" {
		words = append(words, "--config", o.config)
	}
	words = append(words, "--store", dir)
	if o.role != "" {
		words = append(words, "--role", o.role)
	}
	words = append(words, "--thread", id)
	for i, w := range words {
		words[i] = shellQuote(w)
	}
	return strings.Join(words, " ")
}
