package history

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"unicode"

	"github.com/lodeworks/lode/artifact"
	"github.com/lodeworks/lode/ledger"
	"github.com/lodeworks/lode/tool"
	xtool "github.com/lodeworks/lode/x/tool"
)

// The recall tools' names.
const (
	RecallSearchTool = "recall_search"
	RecallTurnTool   = "recall_turn"
)

// Recall limits: a query longer than MaxRecallQuery bytes is refused, a
// search lists at most RecallMatches turns, each with a snippet of about
// RecallSnippet bytes.
const (
	MaxRecallQuery = 1000
	RecallMatches  = 8
	RecallSnippet  = 160
)

var (
	recallSearchSchema = json.RawMessage(`{"type":"object","properties":{"query":{"type":"string",` +
		`"description":"Words to look for in the turns the summary stands for."}},"required":["query"],"additionalProperties":false}`)
	recallTurnSchema = json.RawMessage(`{"type":"object","properties":{"turn":{"type":"integer",` +
		`"description":"The number of a turn the summary stands for, as recall_search gives it."},` +
		`"from":{"type":"integer","description":"Where to start, in bytes of the turn's text, to read on past what an earlier answer cut; 0 by default."}},` +
		`"required":["turn"],"additionalProperties":false}`)
)

// RegisterRecall adds the recall tools to reg. Once a thread has a
// summary, they let the model read what the summary stands for, from the
// ledger, where the summarised turns stay: recall_search ranks the covered
// turns by the words of a query and lists the best with their numbers and
// a snippet; recall_turn shows one covered turn, from a byte offset when
// an earlier answer was cut to the result budget. Both read the
// caller's thread (xtool.Caller) and are ordinary tools: the Handler
// renders their answers within its result budget (opts may set the
// tools' own, tool.WithBudget) and a ToolFilter decides who sees them, so
// a role's policy that hides them also refuses them. Offer them with
// RecallFilter, which shows them only on threads that have a summary.
func RegisterRecall(reg tool.Registry, opts ...tool.FuncOption) error {
	search := tool.Tool{Name: RecallSearchTool, Schema: recallSearchSchema,
		Description: "Search the earlier turns of this conversation that were replaced by its summary. " +
			"Returns the best-matching turns by number, with a snippet of each; load one whole with " + RecallTurnTool + ".",
		Hints: tool.Hints{ReadOnly: true, Idempotent: true}}
	load := tool.Tool{Name: RecallTurnTool, Schema: recallTurnSchema,
		Description: "Show one earlier turn of this conversation, by number, that was replaced by its summary.",
		Hints:       tool.Hints{ReadOnly: true, Idempotent: true}}
	for _, o := range opts {
		if o != nil {
			o(&search)
			o(&load)
		}
	}
	return errors.Join(reg.Register(search, recallSearch), reg.Register(load, recallTurn))
}

// RecallFilter offers the recall tools only on threads that have a
// summary, after next (nil offers every tool) has chosen the turn's tools.
func RecallFilter(next xtool.ToolFilter) xtool.ToolFilter {
	return func(ctx context.Context, st ledger.State, tools []tool.Tool) []tool.Tool {
		if next != nil {
			tools = next(ctx, st, tools)
		}
		if st != nil && latestSummary(st.Turns()) != nil {
			return tools
		}
		isRecall := func(t tool.Tool) bool { return t.Name == RecallSearchTool || t.Name == RecallTurnTool }
		if !slices.ContainsFunc(tools, isRecall) {
			return tools
		}
		out := make([]tool.Tool, 0, len(tools))
		for _, t := range tools {
			if !isRecall(t) {
				out = append(out, t)
			}
		}
		return slices.Clip(out)
	}
}

// covered returns the caller's ledger and the summary it has.
func covered(ctx context.Context) ([]ledger.Turn, *artifact.Summary, error) {
	st, ok := xtool.Caller(ctx)
	if !ok {
		return nil, nil, errors.New("history: recall: this call has no thread to read")
	}
	led := st.Turns()
	sum := latestSummary(led)
	if sum == nil {
		return nil, nil, errors.New("this conversation has no summary: every turn of it is in front of you")
	}
	return led, sum, nil
}

func recallSearch(ctx context.Context, _ tool.Sandbox, args map[string]any) (any, error) {
	q, _ := args["query"].(string)
	if len(q) > MaxRecallQuery {
		return nil, fmt.Errorf("the query is %d bytes, over the limit of %d: give a few words to look for", len(q), MaxRecallQuery)
	}
	terms := queryTerms(q)
	if len(terms) == 0 {
		return nil, errors.New("the query has no words: give a few words to look for")
	}
	led, sum, err := covered(ctx)
	if err != nil {
		return nil, err
	}
	type match struct {
		turn, distinct, hits, at int
		text                     string
	}
	var ms []match
	for i := sum.First; i <= sum.Last && i < len(led); i++ {
		if isSummaryTurn(led[i]) {
			continue
		}
		text := renderTurn(led[i])
		low := strings.ToLower(text)
		m := match{turn: i, at: -1, text: text}
		for _, term := range terms {
			n := strings.Count(low, term)
			if n == 0 {
				continue
			}
			m.distinct++
			m.hits += n
			if at := strings.Index(low, term); m.at < 0 || at < m.at {
				m.at = at
			}
		}
		if m.distinct > 0 {
			ms = append(ms, m)
		}
	}
	if len(ms) == 0 {
		return fmt.Sprintf("No turn from %d to %d mentions %s.", sum.First, sum.Last, strings.Join(terms, ", ")), nil
	}
	sort.SliceStable(ms, func(a, b int) bool {
		if ms[a].distinct != ms[b].distinct {
			return ms[a].distinct > ms[b].distinct
		}
		return ms[a].hits > ms[b].hits
	})
	var b strings.Builder
	fmt.Fprintf(&b, "%d of the turns from %d to %d match", len(ms), sum.First, sum.Last)
	if len(ms) > RecallMatches {
		fmt.Fprintf(&b, "; the best %d", RecallMatches)
		ms = ms[:RecallMatches]
	}
	fmt.Fprintf(&b, " (show one with %s):\n", RecallTurnTool)
	for _, m := range ms {
		fmt.Fprintf(&b, "turn %d (%s): %s\n", m.turn, led[m.turn].Role, snippet(m.text, m.at))
	}
	return b.String(), nil
}

func recallTurn(ctx context.Context, _ tool.Sandbox, args map[string]any) (any, error) {
	n, _ := args["turn"].(float64)
	led, sum, err := covered(ctx)
	if err != nil {
		return nil, err
	}
	if n < float64(sum.First) || n > float64(sum.Last) || n >= float64(len(led)) || isSummaryTurn(led[int(n)]) {
		return nil, fmt.Errorf("turn %g is not one the summary stands for: give a turn from %d to %d", n, sum.First, sum.Last)
	}
	i := int(n)
	text := renderTurn(led[i])
	from, _ := args["from"].(float64)
	if from < 0 || from >= float64(max(1, len(text))) {
		return nil, fmt.Errorf("from %g is outside turn %d, which has %d bytes: give a byte from 0 to %d", from, i, len(text), max(0, len(text)-1))
	}
	at := int(from)
	for at > 0 && !utf8RuneStart(text[at]) {
		at--
	}
	if at > 0 {
		return fmt.Sprintf("turn %d (%s), from byte %d of %d:\n%s", i, led[i].Role, at, len(text), text[at:]), nil
	}
	return fmt.Sprintf("turn %d (%s):\n%s", i, led[i].Role, text), nil
}

// queryTerms are the distinct lower-case words of q.
func queryTerms(q string) []string {
	words := strings.FieldsFunc(strings.ToLower(q), func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) })
	var terms []string
	for _, w := range words {
		if !slices.Contains(terms, w) {
			terms = append(terms, w)
		}
	}
	return terms
}

// renderTurn is what a turn said, as a transcript shows it; a tool result
// is given whole, as the ledger kept it.
func renderTurn(t ledger.Turn) string {
	var b strings.Builder
	for _, a := range t.Artifacts {
		switch a := a.(type) {
		case artifact.Text:
			b.WriteString(a.Content)
			b.WriteByte('\n')
		case artifact.ToolCall:
			fmt.Fprintf(&b, "called %s(%s)\n", a.Name, a.Arguments)
		case artifact.ToolResult:
			c := a.Content
			if a.Full != "" {
				c = a.Full
			}
			fmt.Fprintf(&b, "result of %s: %s\n", a.Name, c)
		}
	}
	return strings.TrimSuffix(b.String(), "\n")
}

// snippet is about RecallSnippet bytes of text around byte at, on one line.
func snippet(text string, at int) string {
	// at indexes the lower-cased text, which a few letters lengthen.
	from := max(0, min(at, len(text))-RecallSnippet/4)
	for from > 0 && !utf8RuneStart(text[from]) {
		from--
	}
	to := min(len(text), from+RecallSnippet)
	for to < len(text) && !utf8RuneStart(text[to]) {
		to--
	}
	s := strings.Join(strings.Fields(text[from:to]), " ")
	if from > 0 {
		s = "…" + s
	}
	if to < len(text) {
		s += "…"
	}
	return s
}
