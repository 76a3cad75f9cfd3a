package history_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"iter"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"unicode/utf8"

	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/lodeworks/lode/artifact"
	"github.com/lodeworks/lode/ledger"
	"github.com/lodeworks/lode/loop"
	"github.com/lodeworks/lode/provider"
	"github.com/lodeworks/lode/x/history"
	"github.com/lodeworks/lode/x/provider/script"
)

// recorder is a summarizer that answers with answer(n) on its n-th call
// (from 1) and records each request's estimated tokens and text.
type recorder struct {
	mu     sync.Mutex
	answer func(n int) (string, error)
	sizes  []int
	texts  []string
}

func (r *recorder) Invoke(_ context.Context, req *provider.Request) iter.Seq2[artifact.Artifact, error] {
	r.mu.Lock()
	r.sizes = append(r.sizes, history.Estimate(req.Turns))
	r.texts = append(r.texts, req.Turns[len(req.Turns)-1].Artifacts[0].(artifact.Text).Content)
	n := len(r.sizes)
	r.mu.Unlock()
	text, err := r.answer(n)
	return func(yield func(artifact.Artifact, error) bool) {
		if err != nil {
			yield(nil, err)
			return
		}
		yield(artifact.Text{Content: text}, nil)
	}
}

func (r *recorder) largest() int {
	m := 0
	for _, s := range r.sizes {
		m = max(m, s)
	}
	return m
}

// notes is a thread of n notes answered "noted", then a question.
func notes(n int) *ledger.Thread {
	th := ledger.NewThread(ledger.WithClock(nil))
	for i := range n {
		_ = th.Append(ledger.RoleUser, artifact.Text{Content: fmt.Sprintf("note %d: %s", i, strings.Repeat("details ", 20))})
		_ = th.Append(ledger.RoleAssistant, artifact.Text{Content: "noted"})
	}
	_ = th.Append(ledger.RoleUser, artifact.Text{Content: "What did I ask first?"})
	return th
}

func storedSummaries(turns []ledger.Turn) []artifact.Summary {
	var out []artifact.Summary
	for _, t := range turns {
		for _, a := range t.Artifacts {
			if s, ok := a.(artifact.Summary); ok {
				out = append(out, s)
			}
		}
	}
	return out
}

// TestBabblingSummarizer: a summary over its share is asked for again
// with the limit named, and cut and marked when the answers stay long.
func TestBabblingSummarizer(t *testing.T) {
	const budget = 2000
	// A quarter of the budget for the summary turn, less its overhead
	// and the prefix the request puts before it.
	maxBytes := (budget/4-4)*4 - len(history.SummaryPrefix)
	babble := strings.Repeat("and then the user said something else; ", budget*20*4/40) + "the end."
	short := "The user dictated notes."
	cases := []struct {
		name     string
		babbles  int // answers that babble before a short one
		retries  int
		requests int
		want     string
	}{
		{"short at once", 0, 0, 1, short},
		{"short on the first correction", 1, 0, 2, short},
		{"short on the second correction", 2, 0, 3, short},
		{"babbles on: cut and marked", 10, 0, 3, ""},
		{"no retries: cut at once", 10, -1, 1, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			sum := &recorder{answer: func(n int) (string, error) {
				if n <= c.babbles {
					return babble, nil
				}
				return short, nil
			}}
			pol, err := history.New(history.WithBudget(budget), history.WithSummarizer(sum), history.WithSummaryRetries(c.retries),
				// One chunk, so that the requests counted are the retries.
				history.WithSummarizerBudget(20000))
			if err != nil {
				t.Fatal(err)
			}
			th := notes(60)
			model := script.Play(script.Text("Your first note."))
			if _, err := loop.New(loop.WithInvokeOptions(pol)).Turn(context.Background(), th, model); err != nil {
				t.Fatal(err)
			}
			if len(sum.sizes) != c.requests {
				t.Fatalf("%d summarizer requests, want %d", len(sum.sizes), c.requests)
			}
			for i, text := range sum.texts {
				if !strings.Contains(text, fmt.Sprintf("Write the summary in at most %d bytes.", maxBytes)) {
					t.Fatalf("request %d does not name the limit: %q", i, text[len(text)-200:])
				}
				correction := fmt.Sprintf("Your last summary was %d bytes, over the limit of %d bytes (about %d tokens). Write it again, shorter: at most %d bytes.",
					len(babble), maxBytes, maxBytes/4, maxBytes)
				if got := strings.Contains(text, correction); got != (i > 0) {
					t.Fatalf("request %d carries the correction: %v, want %v", i, got, i > 0)
				}
				if strings.Contains(text, "something else") {
					t.Fatalf("request %d sends the babble back", i)
				}
			}
			if largest := sum.largest(); largest > 20000 {
				t.Fatalf("a summarizer request of %d tokens, over %d", largest, budget)
			}
			sums := storedSummaries(th.Turns())
			if len(sums) != 1 {
				t.Fatalf("%d summaries stored, want 1", len(sums))
			}
			got := sums[0].Content
			if c.babbles > c.requests-1 {
				marker := strings.LastIndex(got, "\n[… summary cut to fit its share of the context window: ")
				if len(got) > maxBytes || marker < 0 || !strings.HasSuffix(got, " bytes left out …]") {
					t.Fatalf("summary of %d bytes (limit %d) ends %q; want it cut and marked", len(got), maxBytes, got[max(0, len(got)-120):])
				}
				wantCut := fmt.Sprintf("\n"+history.SummaryCutMarker, len(babble)-marker)
				if got != babble[:marker]+wantCut {
					t.Fatalf("summary ends %q, want %q", got[marker:], wantCut)
				}
				if len(got) < maxBytes-8 {
					t.Fatalf("summary cut to %d bytes, well under the limit of %d", len(got), maxBytes)
				}
			} else if got != c.want {
				t.Fatalf("summary = %q, want %q", got, c.want)
			}
			sent := model.Requests()[0].Turns
			if n := history.Estimate(sent); n > budget {
				t.Fatalf("request of %d tokens, over the budget of %d", n, budget)
			}
		})
	}
}

// TestFailingSummarizer: an error or an empty answer leaves the turn
// working on a trimmed request, says so once in the log and on the span,
// stores nothing, and the next turn compacts again.
func TestFailingSummarizer(t *testing.T) {
	const budget = 1000
	down := errors.New("summarizer down")
	cases := []struct {
		name    string
		fail    func() (string, error)
		kind    string
		wantErr string
	}{
		{"error", func() (string, error) { return "", down }, "summarizer_error", "history: summarise turns 1 to "},
		{"empty", func() (string, error) { return " \n", nil }, "empty_summary", ": the summarizer answered with no text\""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			healthy := false
			sum := &recorder{answer: func(int) (string, error) {
				if healthy {
					return "The user dictated notes.", nil
				}
				return c.fail()
			}}
			var logs bytes.Buffer
			pol, err := history.New(history.WithBudget(budget), history.WithSummarizer(sum),
				history.WithLogger(slog.New(slog.NewTextHandler(&logs, nil))))
			if err != nil {
				t.Fatal(err)
			}
			spans := tracetest.NewSpanRecorder()
			tracer := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(spans)).Tracer("test")
			th := notes(40)
			before := th.Len()
			model := script.Play(script.Text("Your first note."), script.Text("Still your first note."))
			step := loop.New(loop.WithInvokeOptions(pol), loop.WithTracer(tracer))
			if _, err := step.Turn(context.Background(), th, model); err != nil {
				t.Fatalf("the turn failed with the summarizer: %v", err)
			}
			if th.Len() != before+1 || len(storedSummaries(th.Turns())) != 0 {
				t.Fatalf("ledger has %d turns (%d summaries), want %d and none", th.Len(), len(storedSummaries(th.Turns())), before+1)
			}
			sent := model.Requests()[0].Turns
			if n := history.Estimate(sent); n > budget {
				t.Fatalf("request of %d tokens, over the budget of %d", n, budget)
			}
			if !strings.HasPrefix(sent[0].Artifacts[0].(artifact.Text).Content, "note 0:") ||
				sent[len(sent)-1].Artifacts[0].(artifact.Text).Content != "What did I ask first?" {
				t.Fatalf("request = %s; want the pinned message through the question", roleList(sent))
			}
			for _, tt := range sent {
				if strings.HasPrefix(tt.Artifacts[0].(artifact.Text).Content, history.SummaryPrefix) {
					t.Fatal("the trimmed request carries a summary")
				}
			}
			if len(sum.sizes) != 1 {
				t.Fatalf("%d summarizer requests, want 1 (a failure is not retried in the turn)", len(sum.sizes))
			}
			if n := strings.Count(logs.String(), "history: compaction failed"); n != 1 {
				t.Fatalf("%d log records, want 1:\n%s", n, logs.String())
			}
			if !strings.Contains(logs.String(), "error.type="+c.kind) || !strings.Contains(logs.String(), c.wantErr) {
				t.Fatalf("log = %s; want error.type=%s and %q", logs.String(), c.kind, c.wantErr)
			}
			ended := spans.Ended()
			if len(ended) != 1 {
				t.Fatalf("%d spans, want the turn's", len(ended))
			}
			var events int
			for _, ev := range ended[0].Events() {
				if ev.Name != "history.compaction_failed" {
					continue
				}
				events++
				if !hasAttr(ev.Attributes, attribute.String("error.type", c.kind)) || !hasAttr(ev.Attributes, attribute.Int("history.first", 1)) {
					t.Fatalf("event attributes = %v", ev.Attributes)
				}
			}
			if events != 1 || !hasAttr(ended[0].Attributes(), attribute.String("history.compaction", "failed")) {
				t.Fatalf("%d compaction events, span attributes %v; want one event and history.compaction=failed", events, ended[0].Attributes())
			}

			// The next turn tries again, and this time the summarizer answers.
			healthy = true
			_ = th.Append(ledger.RoleUser, artifact.Text{Content: "And now?"})
			if _, err := step.Turn(context.Background(), th, model); err != nil {
				t.Fatal(err)
			}
			sums := storedSummaries(th.Turns())
			if len(sums) != 1 || sums[0].Content != "The user dictated notes." || sums[0].First != 1 {
				t.Fatalf("summaries after the second turn = %+v, want the one it made", sums)
			}
			again := model.Requests()[1].Turns
			if !strings.HasPrefix(again[1].Artifacts[0].(artifact.Text).Content, history.SummaryPrefix) {
				t.Fatalf("second request = %s; want the pinned message, then the summary", roleList(again))
			}
			if n := strings.Count(logs.String(), "history: compaction failed"); n != 1 {
				t.Fatalf("%d log records after a good compaction, want still 1", n)
			}
		})
	}
}

func hasAttr(kvs []attribute.KeyValue, want attribute.KeyValue) bool {
	for _, kv := range kvs {
		if kv == want {
			return true
		}
	}
	return false
}

// TestCancelledCompactionFails: a cancelled context is not a failing
// summarizer: the turn stops.
func TestCancelledCompactionFails(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	sum := &recorder{answer: func(int) (string, error) { cancel(); return "", context.Canceled }}
	pol, err := history.New(history.WithBudget(1000), history.WithSummarizer(sum))
	if err != nil {
		t.Fatal(err)
	}
	model := script.Play(script.Text("never"))
	_, err = loop.New(loop.WithInvokeOptions(pol)).Turn(ctx, notes(40), model)
	if !errors.Is(err, context.Canceled) || len(model.Requests()) != 0 {
		t.Fatalf("err = %v after %d model requests; want context.Canceled and none", err, len(model.Requests()))
	}
}

// compactLongThread turns compaction on for a thread of n turns that never
// had it and runs one turn, returning the summarizer.
func compactLongThread(tb testing.TB, n, budget int) (*recorder, *ledger.Thread, []ledger.Turn) {
	sum := &recorder{answer: func(k int) (string, error) {
		return fmt.Sprintf("summary %d: the user asked about foxes and the lookup answered each time.", k), nil
	}}
	pol, err := history.New(history.WithBudget(budget), history.WithSummarizer(sum))
	if err != nil {
		tb.Fatal(err)
	}
	th := ledger.NewThread(ledger.WithClock(nil))
	for _, t := range foxThread(n) {
		_ = th.Append(t.Role, t.Artifacts...)
	}
	_ = th.Append(ledger.RoleUser, artifact.Text{Content: "What was the first question?"})
	model := script.Play(script.Text("question 0"))
	if _, err := loop.New(loop.WithInvokeOptions(pol)).Turn(context.Background(), th, model); err != nil {
		tb.Fatal(err)
	}
	return sum, th, model.Requests()[0].Turns
}

// TestLongThreadCompactedInChunks: a 10,000-turn thread that turns
// compaction on is summarised in requests that each fit the summarizer's
// budget, each carrying the summary so far.
func TestLongThreadCompactedInChunks(t *testing.T) {
	const n, budget = 10000, 4000
	whole := history.Estimate(foxThread(n))
	sum, th, sent := compactLongThread(t, n, budget)
	// The transcript shortens old tool results, so it is smaller than the
	// thread; chunks should still be well filled.
	if len(sum.sizes) < whole/(2*budget) || sum.largest() < budget/2 {
		t.Fatalf("%d summarizer requests for a transcript of %d tokens and a window of %d", len(sum.sizes), whole, budget)
	}
	for i, s := range sum.sizes {
		if s > budget {
			t.Fatalf("summarizer request %d: %d tokens, over the window of %d", i, s, budget)
		}
	}
	for i, text := range sum.texts {
		if got := strings.HasPrefix(text, "Summary so far:\nsummary "+fmt.Sprint(i)+":"); got != (i > 0) {
			t.Fatalf("summarizer request %d starts %q", i, text[:60])
		}
	}
	sums := storedSummaries(th.Turns())
	if len(sums) != 1 || sums[0].First != 2 || sums[0].Content != fmt.Sprintf("summary %d: the user asked about foxes and the lookup answered each time.", len(sum.sizes)) {
		t.Fatalf("stored summaries = %+v, want one from the last chunk covering from turn 2, after the pinned system turn and question", sums)
	}
	if sums[0].Last < n-budget/2 {
		t.Fatalf("the summary covers turns 1 to %d of %d", sums[0].Last, n)
	}
	if got := history.Estimate(sent); got > budget {
		t.Fatalf("model request of %d tokens, over the budget of %d", got, budget)
	}
	if want := len(foxThread(n)) + 3; th.Len() != want {
		t.Fatalf("ledger has %d turns, want %d: the thread, the question, the summary and the answer", th.Len(), want)
	}
	t.Logf("%d summarizer requests, largest %d tokens of a %d window, for a %d-token transcript", len(sum.sizes), sum.largest(), budget, whole)
}

func TestSummaryOptions(t *testing.T) {
	cases := []struct {
		name string
		opts []history.Option
		want string
	}{
		{"negatives", []history.Option{history.WithBudget(1000), history.WithSummaryTokens(-1), history.WithSummarizerBudget(-2)},
			"history: invalid option: summary tokens -1 is negative: give a number of tokens, or 0 for a quarter of the budget\n" +
				"history: invalid option: summarizer budget -2 is negative: give a number of tokens, or 0 for the policy's budget"},
		{"summary share too small", []history.Option{history.WithBudget(1000), history.WithSummaryTokens(30), history.WithSummarizer(&recorder{})},
			"history: invalid option: a summary share of 30 tokens leaves 19 bytes for a summary, under 64: raise WithSummaryTokens or the budget"},
		{"summarizer window too small", []history.Option{history.WithBudget(1000), history.WithSummarizerBudget(300), history.WithSummarizer(&recorder{})},
			"history: invalid option: a summarizer budget of 300 tokens leaves -448 bytes of transcript per request, under 256: raise WithSummarizerBudget or lower WithSummaryTokens"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := history.New(c.opts...)
			if err == nil || err.Error() != c.want || !errors.Is(err, history.ErrOption) {
				t.Fatalf("err = %v\nwant %q wrapping ErrOption", err, c.want)
			}
		})
	}
}

// FuzzSummaryBounded: whatever the summarizer answers, the stored summary
// fits its share, and a cut summary is marked.
func FuzzSummaryBounded(f *testing.F) {
	f.Add("The user dictated notes.", 1000, 0)
	f.Add(strings.Repeat("babble ", 5000), 1000, 0)
	f.Add(strings.Repeat("é", 3000), 800, -1)
	f.Add(strings.Repeat("日本語", 2000), 2000, 1)
	f.Add("\x00\xff\xfe", 600, 2)
	f.Fuzz(func(t *testing.T, answer string, budget, retries int) {
		budget = 600 + (budget%4000+4000)%4000
		retries = retries % 4
		sum := &recorder{answer: func(int) (string, error) { return answer, nil }}
		pol, err := history.New(history.WithBudget(budget), history.WithSummarizer(sum), history.WithSummaryRetries(retries))
		if err != nil {
			t.Fatal(err)
		}
		th := notes(80)
		model := script.Play(script.Text("ok"))
		if _, err := loop.New(loop.WithInvokeOptions(pol)).Turn(context.Background(), th, model); err != nil {
			t.Fatal(err)
		}
		maxBytes := max(64, (budget/4-4)*4-len(history.SummaryPrefix))
		for _, s := range storedSummaries(th.Turns()) {
			if len(s.Content) > maxBytes {
				t.Fatalf("summary of %d bytes, over %d", len(s.Content), maxBytes)
			}
			if len(strings.TrimSpace(answer)) > maxBytes && !strings.HasSuffix(s.Content, " bytes left out …]") {
				t.Fatalf("a cut summary without its marker: %q", s.Content[max(0, len(s.Content)-80):])
			}
			if utf8.ValidString(answer) && !utf8.ValidString(s.Content) {
				t.Fatal("a cut split a rune")
			}
		}
		if strings.TrimSpace(answer) == "" && len(storedSummaries(th.Turns())) != 0 {
			t.Fatal("an empty answer was stored")
		}
		for i, s := range sum.sizes {
			if s > budget {
				t.Fatalf("summarizer request %d: %d tokens, over %d", i, s, budget)
			}
		}
	})
}

// TestRetryWithFailingSummarizer: a request refused as too long is
// trimmed to half when the summarizer fails, and the turn goes on.
func TestRetryWithFailingSummarizer(t *testing.T) {
	sum := &recorder{answer: func(int) (string, error) { return "", errors.New("summarizer down") }}
	var logs bytes.Buffer
	pol, err := history.New(history.WithBudget(100000), history.WithSummarizer(sum),
		history.WithLogger(slog.New(slog.NewTextHandler(&logs, nil))))
	if err != nil {
		t.Fatal(err)
	}
	th := notes(40)
	model := script.Play(script.Fail(refusal{}), script.Text("fine"))
	if _, err := loop.New(loop.WithInvokeOptions(pol)).Turn(context.Background(), th, pol.Provider(model)); err != nil {
		t.Fatal(err)
	}
	reqs := model.Requests()
	if len(reqs) != 2 || len(sum.sizes) != 1 || len(storedSummaries(th.Turns())) != 0 {
		t.Fatalf("%d model requests, %d summarizer requests, %d summaries; want 2, 1 and none",
			len(reqs), len(sum.sizes), len(storedSummaries(th.Turns())))
	}
	if first, retried := history.Estimate(reqs[0].Turns), history.Estimate(reqs[1].Turns); retried > first/2 {
		t.Fatalf("retried request of %d tokens, first %d: want at most half", retried, first)
	}
	if n := strings.Count(logs.String(), "history: compaction failed"); n != 1 {
		t.Fatalf("%d log records, want 1", n)
	}
}
