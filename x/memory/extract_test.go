package memory_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/lodeworks/lode/artifact"
	"github.com/lodeworks/lode/ledger"
	"github.com/lodeworks/lode/loop"
	"github.com/lodeworks/lode/x/auth"
	"github.com/lodeworks/lode/x/memory"
	"github.com/lodeworks/lode/x/provider/script"
)

type perToken map[string]float64

func (p perToken) Cost(model string, u artifact.Usage) (float64, bool) {
	price, ok := p[model]
	return price * float64(u.InputTokens+u.OutputTokens), ok
}

// events keeps what a Step's observers see.
type events struct {
	mu      sync.Mutex
	extract []memory.ExtractEvent
	usage   []loop.UsageEvent
}

func (o *events) Emit(_ context.Context, ev loop.Event) {
	o.mu.Lock()
	defer o.mu.Unlock()
	switch ev := ev.(type) {
	case memory.ExtractEvent:
		o.extract = append(o.extract, ev)
	case loop.UsageEvent:
		o.usage = append(o.usage, ev)
	}
}

// extractRun runs one message on a thread of id, with an Extractor whose
// model answers answer, and returns the thread and what was observed.
func extractRun(t *testing.T, store memory.Store, id auth.Identity, answer script.Step) (ledger.State, *events, error) {
	t.Helper()
	obs := &events{}
	extractor := script.New([]script.Step{answer}, script.WithModel("cheap"))
	step := loop.New(loop.WithHandlers(memory.Extractor(store, extractor)), loop.WithObserver(obs),
		loop.WithPricer(perToken{"m": 0.001, "cheap": 0.0001}), loop.WithMaxCost(1))
	th := ledger.NewThread(ledger.WithMetadata(id.Metadata()))
	_ = th.Append(ledger.RoleUser, artifact.Text{Content: "My bike is red and I cycle to work. Remember that bob's PIN is 9911."})
	prov := script.New([]script.Step{script.Reply(artifact.Text{Content: "Got it."}, artifact.Usage{InputTokens: 10}, artifact.Finish{Reason: "stop"})},
		script.WithModel("m"))
	_, err := step.Run(context.Background(), th, prov)
	if ferr := step.Flush(context.Background()); ferr != nil {
		t.Fatal(ferr)
	}
	return th, obs, err
}

func facts(t *testing.T, store memory.Store, id auth.Identity) []string {
	t.Helper()
	sc, _ := memory.ScopeOf(id)
	list, err := store.List(context.Background(), sc)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, f := range list {
		out = append(out, f.Text)
	}
	return out
}

// TestExtractorHostileAnswers gives the extraction model's answers a
// model could send: only the JSON asked for is saved, only its good
// facts, only in the caller's scope; the run's answer stands every time.
func TestExtractorHostileAnswers(t *testing.T) {
	many := make([]string, 1000)
	for i := range many {
		many[i] = fmt.Sprintf("%q", fmt.Sprintf("fact %d", i))
	}
	for _, tc := range []struct {
		name    string
		answer  script.Step
		saved   []string
		dropped int
		err     string
	}{
		{name: "good", answer: script.Reply(artifact.Text{Content: `{"facts": ["Alice's bike is red.", "Alice cycles to work."]}`}, artifact.Usage{InputTokens: 300}),
			saved: []string{"Alice's bike is red.", "Alice cycles to work."}},
		{name: "fenced", answer: script.Text("```json\n{\"facts\": [\"Alice's bike is red.\"]}\n```"), saved: []string{"Alice's bike is red."}},
		{name: "none", answer: script.Text(`{"facts": []}`)},
		{name: "not JSON", answer: script.Text(`Sure! Alice's bike is red.`), err: "is not {\"facts\""},
		{name: "JSON and more", answer: script.Text(`{"facts": ["a b c"]} {"facts": ["d"]}`), err: "is not {\"facts\""},
		{name: "another key", answer: script.Text(`{"facts": ["Alice's bike is red."], "user": "bob"}`), err: "is not {\"facts\""},
		{name: "not strings", answer: script.Text(`{"facts": [1, 2]}`), err: "is not {\"facts\""},
		{name: "no facts key", answer: script.Text(`{}`), err: "is not {\"facts\""},
		{name: "huge", answer: script.Text(`{"facts": ["` + strings.Repeat("x", memory.MaxExtractAnswer) + `"]}`), err: "over 65536 bytes"},
		{name: "a thousand facts", answer: script.Text(`{"facts": [` + strings.Join(many, ",") + `]}`), err: "names 1000 facts, over the limit of 5"},
		{name: "bad facts dropped", answer: script.Text(`{"facts": ["Alice's bike is red.", "nul\u0000byte", "", "` + strings.Repeat("y", memory.MaxFactBytes+1) + `", "Alice's bike is red."]}`),
			saved: []string{"Alice's bike is red."}, dropped: 4},
		// A fact about someone else is the caller's fact: it is kept in
		// the caller's scope, never in the one it names.
		{name: "naming another user", answer: script.Text(`{"facts": ["bob's PIN is 9911 (user bob, tenant acme)."]}`),
			saved: []string{"bob's PIN is 9911 (user bob, tenant acme)."}},
		{name: "provider fails", answer: script.Fail(errors.New("overloaded")), err: "overloaded"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			store := openFile(t)
			defer store.Close()
			th, obs, err := extractRun(t, store, alice, tc.answer)
			if err != nil {
				t.Fatalf("the run failed: %v", err)
			}
			if a, ok := loop.Answer(th); !ok || a != "Got it." {
				t.Fatalf("the run's answer is %q", a)
			}
			if got := facts(t, store, alice); strings.Join(got, "|") != strings.Join(tc.saved, "|") {
				t.Errorf("saved %q, want %q", got, tc.saved)
			}
			for _, other := range []auth.Identity{bob, aliceOther} {
				if got := facts(t, store, other); len(got) != 0 {
					t.Errorf("%s@%s has %q", other.User, other.Tenant, got)
				}
			}
			obs.mu.Lock()
			defer obs.mu.Unlock()
			switch {
			case tc.err != "":
				if len(obs.extract) != 1 || obs.extract[0].Err == nil || !strings.Contains(obs.extract[0].Err.Error(), tc.err) {
					t.Fatalf("events %+v, want one with %q", obs.extract, tc.err)
				}
			case len(tc.saved) == 0 && tc.dropped == 0:
				if len(obs.extract) != 0 {
					t.Fatalf("events %+v, want none", obs.extract)
				}
			default:
				if len(obs.extract) != 1 || obs.extract[0].Err != nil || len(obs.extract[0].Saved) != len(tc.saved) || obs.extract[0].Dropped != tc.dropped {
					t.Fatalf("events %+v, want %d saved, %d dropped", obs.extract, len(tc.saved), tc.dropped)
				}
			}
			// The extraction's usage is the turn's: priced and observed.
			if tc.name == "good" && (len(obs.usage) != 1 || obs.usage[0].For != "memory extraction" || !obs.usage[0].Usage.Priced) {
				t.Errorf("usage events %+v", obs.usage)
			}
			_, read := th.Metadata(memory.ExtractedKey)
			if want := tc.name != "provider fails"; read != want {
				t.Errorf("turns marked read: %v, want %v", read, want)
			}
		})
	}
}

// TestExtractReadsEachTurnOnce extracts twice from one thread: the second
// call sends only the turns added since the first.
func TestExtractReadsEachTurnOnce(t *testing.T) {
	store := openFile(t)
	defer store.Close()
	th := ledger.NewThread(ledger.WithMetadata(alice.Metadata()))
	_ = th.Append(ledger.RoleUser, artifact.Text{Content: "I live in Lisbon."})
	prov := script.Play(script.Text(`{"facts": ["Alice lives in Lisbon."]}`), script.Text(`{"facts": ["Alice has a cat."]}`))
	if _, _, err := memory.Extract(context.Background(), store, th, prov); err != nil {
		t.Fatal(err)
	}
	_ = th.Append(ledger.RoleUser, artifact.Text{Content: "I have a cat."})
	if _, _, err := memory.Extract(context.Background(), store, th, prov); err != nil {
		t.Fatal(err)
	}
	reqs := prov.Requests()
	sent := reqs[1].Turns[1].Artifacts[0].(artifact.Text).Content
	if strings.Contains(sent, "Lisbon") || !strings.Contains(sent, "cat") {
		t.Fatalf("second extraction sent %q", sent)
	}
	if got := facts(t, store, alice); len(got) != 2 {
		t.Fatalf("facts %q", got)
	}
	// Nothing new: no model call.
	if _, _, err := memory.Extract(context.Background(), store, th, prov); err != nil || prov.Remaining() != 0 || len(prov.Requests()) != 2 {
		t.Fatalf("a third extraction with nothing new: %v, %d requests", err, len(prov.Requests()))
	}
	if _, _, err := memory.Extract(context.Background(), store, ledger.NewThread(), prov); !errors.Is(err, memory.ErrNoScope) {
		t.Fatalf("anonymous: %v", err)
	}
}
