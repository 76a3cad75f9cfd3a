package history

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"strings"

	"github.com/lodeworks/lode/artifact"
	"github.com/lodeworks/lode/ledger"
	"github.com/lodeworks/lode/provider"
)

// SummaryInstruction is the system prompt of a compaction request.
const SummaryInstruction = "You compact a conversation between a user, an assistant and its tools so that the assistant can continue it. " +
	"Write a summary of the transcript you are given: the user's goals and constraints, decisions taken, facts and results the tools returned that still matter, and what is left to do. " +
	"Keep names, numbers and identifiers exactly. Write the summary only."

// compact summarises the oldest part of src that is not pinned, together
// with the summary stored before, so that what stays fits in half the
// budget: compactions then come once per half a budget of new turns, not
// on every turn. It returns nil when nothing is old enough to summarise.
func (p *Policy) compact(ctx context.Context, src []ledger.Turn, idx []int, led []ledger.Turn, budget int) (*artifact.Summary, error) {
	prev := latestSummary(led)
	pin := p.pinnedEnd(src)
	var pos []int // positions in src of the turns a view may hold
	for i := pin; i < len(src); i++ {
		if isSummaryTurn(src[i]) || (prev != nil && ledgerIndex(idx, i) >= prev.First && ledgerIndex(idx, i) <= prev.Last) {
			continue
		}
		pos = append(pos, i)
	}
	rest := make([]ledger.Turn, len(pos))
	for k, i := range pos {
		rest[k] = src[i]
	}
	groups := groupTurns(rest)
	if len(groups) < 2 {
		return nil, nil
	}
	keepFrom := len(groups) - 1
	used := Estimate(src[:pin]) + Estimate(rest[groups[keepFrom][0]:])
	for g := keepFrom - 1; g >= 1; g-- {
		n := Estimate(rest[groups[g][0]:groups[g][1]])
		if used+n > budget/2 {
			break
		}
		used += n
		keepFrom = g
	}
	old := rest[:groups[keepFrom][0]]
	first := ledgerIndex(idx, pos[0])
	if prev != nil {
		first = prev.First
	}
	last := ledgerIndex(idx, pos[groups[keepFrom][0]-1])
	if first < 0 || last < first {
		return nil, nil
	}

	var b strings.Builder
	if prev != nil {
		b.WriteString("Summary so far:\n")
		b.WriteString(prev.Content)
		b.WriteString("\n\nWhat followed:\n")
	}
	p.transcript(&b, old)
	req := &provider.Request{Turns: []ledger.Turn{
		{Role: ledger.RoleSystem, Artifacts: []artifact.Artifact{artifact.Text{Content: SummaryInstruction}}},
		{Role: ledger.RoleUser, Artifacts: []artifact.Artifact{artifact.Text{Content: b.String()}}},
	}}
	text, err := collectText(ctx, p.cfg.summarizer.Invoke(ctx, req))
	if err != nil {
		return nil, fmt.Errorf("history: summarise turns %d to %d: %w", first, last, err)
	}
	if strings.TrimSpace(text) == "" {
		return nil, fmt.Errorf("history: summarise turns %d to %d: the summarizer answered with no text", first, last)
	}
	return &artifact.Summary{Content: text, First: first, Last: last}, nil
}

func collectText(ctx context.Context, seq iter.Seq2[artifact.Artifact, error]) (string, error) {
	if seq == nil {
		return "", errors.New("the provider returned no stream")
	}
	var b strings.Builder
	var err error
	for a, serr := range seq {
		if serr != nil {
			err = serr
			break
		}
		if t, ok := artifact.Normalize(a).(artifact.Text); ok {
			b.WriteString(t.Content)
		}
	}
	if err == nil {
		err = ctx.Err()
	}
	return b.String(), err
}

// ErrContextLength matches a *ContextError with errors.Is.
var ErrContextLength = errors.New("history: context length exceeded")

// ContextError reports that the server refused a request as too long even
// after the policy compacted (or trimmed) the history and retried once.
type ContextError struct {
	// Budget is the policy's budget and Sent the estimated tokens of the
	// retried request.
	Budget, Sent int
	// Err is the server's refusal of the retry.
	Err error
}

func (e *ContextError) Error() string {
	return fmt.Sprintf("history: the server refused the request as too long even after compacting it to about %d tokens (budget %d): "+
		"lower the budget (history.budget, WithBudget) or raise the reserve (WithReserve), since this model's window is smaller than configured: %v",
		e.Sent, e.Budget, e.Err)
}

// Unwrap returns ErrContextLength and the server's error.
func (e *ContextError) Unwrap() []error { return []error{ErrContextLength, e.Err} }

// contextLengthExceeded reports whether err is a server saying the
// request is longer than the model's window. Adapters mark such errors
// with a ContextLengthExceeded method, so this package imports none.
func contextLengthExceeded(err error) bool {
	var m interface{ ContextLengthExceeded() bool }
	return errors.As(err, &m) && m.ContextLengthExceeded()
}

type viewKey struct{}

// viewSource is what ApplyInvoke leaves in the request for the retrying
// provider: where the view came from.
type viewSource struct {
	policy *Policy
	state  ledger.State
	turns  []ledger.Turn
}

// Provider wraps prov so that a request the server refuses as too long,
// before any of the answer arrived, is compacted (or, without a
// summarizer, trimmed) to half its estimated size and sent once more; a
// second refusal is a *ContextError. Requests the policy did not shape are
// passed through.
func (p *Policy) Provider(prov provider.Provider) provider.Provider {
	return retrying{policy: p, next: prov}
}

type retrying struct {
	policy *Policy
	next   provider.Provider
}

func (r retrying) Invoke(ctx context.Context, req *provider.Request) iter.Seq2[artifact.Artifact, error] {
	return func(yield func(artifact.Artifact, error) bool) {
		got := false
		for a, err := range r.next.Invoke(ctx, req) {
			if err != nil && !got && contextLengthExceeded(err) {
				r.retry(ctx, req, err, yield)
				return
			}
			got = true
			if !yield(a, err) || err != nil {
				return
			}
		}
	}
}

func (r retrying) retry(ctx context.Context, req *provider.Request, refused error, yield func(artifact.Artifact, error) bool) {
	v, _ := req.Extension(viewKey{})
	src, ok := v.(*viewSource)
	if !ok || src.policy != r.policy {
		yield(nil, refused)
		return
	}
	// The server counts more than the estimate did: aim at half of what
	// was sent.
	half := max(1, min(r.policy.budget, Estimate(req.Turns))/2)
	view, _, err := r.policy.fit(ctx, src.state, src.turns, half, true)
	if err != nil {
		yield(nil, errors.Join(refused, err))
		return
	}
	again := *req
	again.Turns = view
	for a, err := range r.next.Invoke(ctx, &again) {
		if err != nil && contextLengthExceeded(err) {
			yield(nil, &ContextError{Budget: r.policy.budget, Sent: Estimate(view), Err: err})
			return
		}
		if !yield(a, err) || err != nil {
			return
		}
	}
}
