package history_test

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/lodeworks/lode/artifact"
	"github.com/lodeworks/lode/ledger"
	"github.com/lodeworks/lode/loop"
	"github.com/lodeworks/lode/tool"
	"github.com/lodeworks/lode/x/history"
	"github.com/lodeworks/lode/x/provider/script"
	xtool "github.com/lodeworks/lode/x/tool"
)

// prefixShare plays the requests of a thread as it grows, one before each
// assistant turn, and returns the share of their tokens that sit in whole
// turns the previous request began with too (what a prompt cache can
// serve), the mean tokens of a request and how often the prefix changed.
func prefixShare(pol *history.Policy, turns []ledger.Turn) (share, perRequest float64, changes int) {
	var prev []ledger.Turn
	total, kept, requests := 0, 0, 0
	for n := 1; n < len(turns); n++ {
		if turns[n].Role != ledger.RoleAssistant {
			continue
		}
		v := pol.View(turns[:n])
		common := 0
		for common < len(prev) && common < len(v) && reflect.DeepEqual(prev[common], v[common]) {
			common++
		}
		if prev != nil && common < len(prev) {
			changes++
		}
		total += history.Estimate(v)
		kept += history.Estimate(v[:common])
		requests++
		prev = v
	}
	return float64(kept) / float64(total), float64(total) / float64(requests), changes
}

// BenchmarkCachePrefix: over a 2,000-turn thread of tool calls under a
// budget of 8,000 tokens, the share of request tokens in a prefix
// unchanged from the request before, for the sliding window and blocks.
func BenchmarkCachePrefix(b *testing.B) {
	turns := foxThread(2000)
	for _, k := range []int{0, 8, 16, 32, 64} {
		name := "sliding"
		if k > 0 {
			name = fmt.Sprintf("blocks=%d", k)
		}
		pol, err := history.New(history.WithBudget(8000), history.WithBlocks(k))
		if err != nil {
			b.Fatal(err)
		}
		b.Run(name, func(b *testing.B) {
			var share, per float64
			var changes int
			for b.Loop() {
				share, per, changes = prefixShare(pol, turns)
			}
			b.ReportMetric(100*share, "%cached-prefix")
			b.ReportMetric(per, "tokens/request")
			b.ReportMetric(float64(changes), "prefix-changes")
		})
	}
}

// BenchmarkSummaryRecall: a 2,000-turn thread under a budget of 8,000
// tokens, compacted by a summarizer that fills its share of the budget,
// and the tokens a model spends to answer from it with recall (the
// request, the two tools' definitions, one search and one load with
// their results) against sending the whole history.
func BenchmarkSummaryRecall(b *testing.B) {
	const n, budget = 2000, 8000
	summary := strings.Repeat("The user asked about foxes; the lookup answered. ", 40) // ≈ 2,000 bytes
	var full, recalled int
	for b.Loop() {
		full, recalled = summaryRecall(b, n, budget, summary)
	}
	b.ReportMetric(float64(full), "full-tokens")
	b.ReportMetric(float64(recalled), "summary+recall-tokens")
	b.ReportMetric(100*float64(recalled)/float64(full), "%of-full")
}

func summaryRecall(tb testing.TB, n, budget int, summary string) (full, recalled int) {
	sum := &recorder{answer: func(int) (string, error) { return summary, nil }}
	pol, err := history.New(history.WithBudget(budget), history.WithSummarizer(sum))
	if err != nil {
		tb.Fatal(err)
	}
	th := ledger.NewThread(ledger.WithClock(nil))
	for _, t := range foxThread(n) {
		_ = th.Append(t.Role, t.Artifacts...)
	}
	_ = th.Append(ledger.RoleUser, artifact.Text{Content: "What did the lookup say to question 17?"})
	full = history.Estimate(th.Turns())

	reg := tool.NewRegistry()
	if err := history.RegisterRecall(reg); err != nil {
		tb.Fatal(err)
	}
	model := script.Play(
		script.Call("s", history.RecallSearchTool, `{"query":"question 17"}`),
		script.Call("l", history.RecallTurnTool, `{"turn":71}`),
		script.Text("It said: fox facts."),
	)
	step := loop.New(loop.WithHandlers(xtool.NewHandler(reg)), loop.WithInvokeOptions(pol))
	if _, err := step.Run(context.Background(), th, model, xtool.WithFilteredTools(reg, history.RecallFilter(nil))); err != nil {
		tb.Fatal(err)
	}
	for _, r := range results(th.Turns()[len(th.Turns())-4:]) {
		if r.IsError || !strings.Contains(r.Content, "17") && !strings.Contains(r.Content, "fox facts") {
			tb.Fatalf("recall answered %q", r.Content)
		}
	}
	// Every request the model was sent, with the tools it was offered.
	for _, r := range model.Requests() {
		recalled += history.Estimate(r.Turns)
		for _, t := range r.Tools {
			def, _ := json.Marshal(t.Schema)
			recalled += (len(t.Name) + len(t.Description) + len(def) + 3) / 4
		}
	}
	return full, recalled
}
