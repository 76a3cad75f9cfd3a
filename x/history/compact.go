package history

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"strings"

	"github.com/lodeworks/lode/artifact"
	"github.com/lodeworks/lode/ledger"
	"github.com/lodeworks/lode/loop"
	"github.com/lodeworks/lode/provider"
)

// SummaryInstruction is the system prompt of a compaction request.
const SummaryInstruction = "You compact a conversation between a user, an assistant and its tools so that the assistant can continue it. " +
	"Write a summary of the transcript you are given: the user's goals and constraints, decisions taken, facts and results the tools returned that still matter, and what is left to do. " +
	"Keep names, numbers and identifiers exactly. Write the summary only."

// Summary bounds. A summary's share of the budget is SummaryShare of it
// unless WithSummaryTokens says otherwise; an answer over it is asked for
// again, shorter, up to DefaultSummaryRetries times, then cut and marked.
const (
	SummaryShare          = 4 // the summary gets 1/SummaryShare of the budget
	DefaultSummaryRetries = 2
)

// ErrEmptySummary is wrapped by a *CompactionError when the summarizer
// answered with no text.
var ErrEmptySummary = errors.New("history: the summarizer answered with no text")

// CompactionError reports a compaction that failed: the request went out
// trimmed, without a new summary, and a later turn tries again.
type CompactionError struct {
	// First and Last are the ledger indexes of the turns being summarised.
	First, Last int
	// Err is the summarizer's error, or ErrEmptySummary.
	Err error
}

func (e *CompactionError) Error() string {
	// ErrEmptySummary already names the package: say it once.
	return fmt.Sprintf("history: summarise turns %d to %d: %s", e.First, e.Last, strings.TrimPrefix(fmt.Sprint(e.Err), "history: "))
}

func (e *CompactionError) Unwrap() error { return e.Err }

// compact summarises the oldest part of src that is not pinned, together
// with the summary stored before, so that what stays fits in half the
// budget: compactions then come once per half a budget of new turns, not
// on every turn. It returns nil when nothing is old enough to summarise.
//
// The old turns go to the summarizer in chunks that each fit its budget,
// each request carrying the summary so far: a thread that turns
// compaction on late is summarised in many bounded requests, not one
// that no model accepts.
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

	// A retry's budget can be tiny; a summary keeps a useful minimum.
	maxBytes := max(minSummaryBytes, summaryBytes(p.summaryTokens(budget)))
	so := ""
	if prev != nil {
		// A summary stored under a larger share (or by a babbler before
		// summaries were bounded) is cut before it is sent again.
		so = cutSummary(prev.Content, maxBytes)
	}
	for _, chunk := range p.chunks(old, p.chunkBytes(maxBytes)) {
		text, err := p.summarise(ctx, so, chunk, maxBytes)
		if err != nil {
			return nil, &CompactionError{First: first, Last: last, Err: err}
		}
		so = text
	}
	return &artifact.Summary{Content: so, First: first, Last: last}, nil
}

// summaryTokens is the share of budget a summary turn may take.
func (p *Policy) summaryTokens(budget int) int {
	if p.cfg.summaryTokens > 0 {
		return min(p.cfg.summaryTokens, budget)
	}
	return budget / SummaryShare
}

// summaryBytes is how long a summary's text may be for its request turn
// (prefix and overhead included) to stay within tokens.
func summaryBytes(tokens int) int {
	return (tokens-turnOverhead)*bytesPerToken - len(SummaryPrefix)
}

// Fixed parts of a summarizer request, counted when chunks are sized.
const (
	soFarHeader     = "Summary so far:\n"
	followHeader    = "\n\nWhat followed:\n"
	limitNote       = "\n\nWrite the summary in at most %d bytes."
	noteRoom        = 320 // a correction, at most
	minChunkBytes   = 256
	minSummaryBytes = 64
)

// chunkBytes is the transcript that fits in one summarizer request beside
// the instruction, a summary so far of up to maxBytes and a correction.
func (p *Policy) chunkBytes(maxBytes int) int {
	room := p.summarizerBudget() - 2*turnOverhead - (len(SummaryInstruction)+bytesPerToken-1)/bytesPerToken - 1
	return room*bytesPerToken - len(soFarHeader) - len(followHeader) - maxBytes - noteRoom
}

func (p *Policy) summarizerBudget() int {
	if p.cfg.summarizerBudget > 0 {
		return p.cfg.summarizerBudget
	}
	return p.budget
}

// chunks renders turns as transcript lines and groups them into texts of
// at most size bytes; a line longer than size on its own is cut, marked.
func (p *Policy) chunks(turns []ledger.Turn, size int) []string {
	var out []string
	var b, line strings.Builder
	for _, t := range turns {
		line.Reset()
		p.transcript(&line, []ledger.Turn{t})
		l := line.String()
		if len(l) > size {
			l = cutText(l, size, "[… %d bytes of this turn left out to fit the summarizer's window …]\n")
		}
		if b.Len()+len(l) > size && b.Len() > 0 {
			out = append(out, b.String())
			b.Reset()
		}
		b.WriteString(l)
	}
	if b.Len() > 0 {
		out = append(out, b.String())
	}
	return out
}

// summarise asks for the summary of chunk after so, within maxBytes: an
// answer over it is asked for again with a correction naming the limit,
// then cut and marked. A babbled answer is not sent back, so each request
// stays as small as the first.
func (p *Policy) summarise(ctx context.Context, so, chunk string, maxBytes int) (string, error) {
	note := ""
	for attempt := 0; ; attempt++ {
		var b strings.Builder
		if so != "" {
			b.WriteString(soFarHeader)
			b.WriteString(so)
			b.WriteString(followHeader)
		}
		b.WriteString(chunk)
		fmt.Fprintf(&b, limitNote, maxBytes)
		b.WriteString(note)
		req := &provider.Request{Turns: []ledger.Turn{
			{Role: ledger.RoleSystem, Artifacts: []artifact.Artifact{artifact.Text{Content: SummaryInstruction}}},
			{Role: ledger.RoleUser, Artifacts: []artifact.Artifact{artifact.Text{Content: b.String()}}},
		}}
		text, err := p.collectText(ctx, p.cfg.summarizer.Invoke(ctx, req))
		if err != nil {
			return "", err
		}
		text = strings.TrimSpace(text)
		if text == "" {
			return "", ErrEmptySummary
		}
		if len(text) <= maxBytes {
			return text, nil
		}
		if attempt >= p.retries() {
			return cutSummary(text, maxBytes), nil
		}
		note = fmt.Sprintf("\n\nYour last summary was %d bytes, over the limit of %d bytes (about %d tokens). Write it again, shorter: at most %d bytes.",
			len(text), maxBytes, maxBytes/bytesPerToken, maxBytes)
	}
}

func (p *Policy) retries() int {
	if p.cfg.summaryRetries < 0 {
		return 0
	}
	if p.cfg.summaryRetries == 0 {
		return DefaultSummaryRetries
	}
	return p.cfg.summaryRetries
}

// SummaryUsage is what the loop.UsageEvent of a summary's usage says the
// call was for.
const SummaryUsage = "history summary"

// SummaryCutMarker ends a summary that was cut to its share of the budget.
const SummaryCutMarker = "[… summary cut to fit its share of the context window: %d bytes left out …]"

func cutSummary(s string, maxBytes int) string {
	if len(s) <= maxBytes {
		return s
	}
	return cutText(s, maxBytes, "\n"+SummaryCutMarker)
}

// cutText cuts s, on a rune boundary, so that it and the marker (which
// takes the count of bytes left out) fit in size.
func cutText(s string, size int, marker string) string {
	m := fmt.Sprintf(marker, len(s))
	cut := max(0, size-len(m))
	for cut > 0 && !utf8RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + fmt.Sprintf(marker, len(s)-cut)
}

// collectText reads the summarizer's answer, counting its usage toward the
// turn (loop.Charge): its cost binds the run's cost limit as the model's
// own answers do.
func (p *Policy) collectText(ctx context.Context, seq iter.Seq2[artifact.Artifact, error]) (string, error) {
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
		switch a := artifact.Normalize(a).(type) {
		case artifact.Text:
			b.WriteString(a.Content)
		case artifact.Usage:
			loop.Charge(ctx, p.cfg.summarizer, SummaryUsage, a)
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
	// view is the history ApplyInvoke sent, which CacheWatch compares
	// with the one it sent before.
	view []ledger.Turn
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

// Model is the wrapped provider's model name ("" when it names none), so
// a page or a report that asks the provider for it still finds it.
func (r retrying) Model() string {
	if m, ok := r.next.(interface{ Model() string }); ok {
		return m.Model()
	}
	return ""
}

// Unwrap returns the wrapped provider, for code that looks for an
// optional method of its own.
func (r retrying) Unwrap() provider.Provider { return r.next }

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
