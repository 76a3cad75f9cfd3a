package memory_test

import (
	"context"
	"fmt"
	"net/http"
	"testing"

	"github.com/lodeworks/lode/artifact"
	"github.com/lodeworks/lode/ledger"
	"github.com/lodeworks/lode/loop"
	"github.com/lodeworks/lode/provider"
	"github.com/lodeworks/lode/x/memory"
	"github.com/lodeworks/lode/x/provider/openai"
	"github.com/lodeworks/lode/x/provider/openai/openaitest"
	"github.com/lodeworks/lode/x/provider/script"
)

// benchTurns is the length of the conversation the prefix figure holds.
const benchTurns = 20

// subjects gives each message of the conversation its own fact, so the
// facts found change with every message.
var subjects = []string{"dog", "car", "city", "language", "sister", "drink", "bike", "book", "film", "sport",
	"garden", "job", "school", "song", "holiday", "allergy", "pet", "team", "instrument", "dish"}

// prefixShares holds a benchTurns-message conversation through the openai
// adapter against a chat-completions server on loopback and returns, for
// each request after the first, the share of its body's bytes that is the
// previous request's body from the start, and how many bytes of the
// previous body were not.
func prefixShares(tb testing.TB, opt provider.InvokeOption, store memory.Store) (shares []float64, lost []int) {
	replies := make([]http.HandlerFunc, benchTurns)
	for i := range replies {
		replies[i] = openaitest.Text(fmt.Sprintf("Noted, about your %s.", subjects[i]))
	}
	srv := openaitest.NewServer(tb, replies...)
	prov, err := openai.New(openai.WithBaseURL(srv.BaseURL()), openai.WithHTTPClient(srv.Client()), openai.WithAPIKey("k"), openai.WithModel("m"))
	if err != nil {
		tb.Fatal(err)
	}
	step := loop.New(loop.WithInvokeOptions(opt))
	th := ledger.NewThread(ledger.WithMetadata(alice.Metadata()))
	for i := range benchTurns {
		_ = th.Append(ledger.RoleUser, artifact.Text{Content: fmt.Sprintf("Tell me something about my %s.", subjects[i])})
		if _, err := step.Run(context.Background(), th, prov); err != nil {
			tb.Fatal(err)
		}
	}
	reqs := srv.Requests()
	for i := 1; i < len(reqs); i++ {
		prev, cur := reqs[i-1].Raw, reqs[i].Raw
		n := 0
		for n < len(prev) && n < len(cur) && prev[n] == cur[n] {
			n++
		}
		shares = append(shares, float64(n)/float64(len(cur)))
		lost = append(lost, len(prev)-n)
	}
	return shares, lost
}

func saveTopics(tb testing.TB, store memory.Store) {
	sc, _ := memory.ScopeOf(alice)
	for _, t := range subjects {
		if _, err := store.Save(context.Background(), sc, fmt.Sprintf("Alice's %s fact: she told us about her %s at length.", t, t)); err != nil {
			tb.Fatal(err)
		}
	}
}

// BenchmarkRecallPrefix reports, over a 20-message conversation with
// alice's facts recalled for each message, the mean and the least share
// of each request's wire body that is the previous request's body: facts
// stored after the message (Recall) against the same facts in the system
// prompt.
func BenchmarkRecallPrefix(b *testing.B) {
	for _, c := range []struct {
		name string
		opt  func(memory.Store) provider.InvokeOption
	}{
		{"after-prefix", func(s memory.Store) provider.InvokeOption {
			return optionList{provider.WithSystemPrompt("You are helpful."), memory.Recall(s, memory.WithLimit(3))}
		}},
		{"in-system-prompt", factsInSystem},
	} {
		b.Run(c.name, func(b *testing.B) {
			store := openFile(b)
			defer store.Close()
			saveTopics(b, store)
			var shares []float64
			for b.Loop() {
				shares, _ = prefixShares(b, c.opt(store), store)
			}
			sum, least := 0.0, 1.0
			for _, s := range shares {
				sum += s
				least = min(least, s)
			}
			b.ReportMetric(100*sum/float64(len(shares)), "mean-prefix-%")
			b.ReportMetric(100*least, "min-prefix-%")
		})
	}
}

// optionList applies its options in order.
type optionList []provider.InvokeOption

func (l optionList) ApplyInvoke(ctx context.Context, st ledger.State, req *provider.Request) error {
	return provider.Resolve(ctx, st, req, l...)
}

// BenchmarkRecallTurn times one loop turn (a scripted model, no network)
// of a thread whose user has 1,000 facts in a file store, with and without
// Recall: the difference is what recall costs a turn.
func BenchmarkRecallTurn(b *testing.B) {
	store := openFile(b)
	defer store.Close()
	sc, _ := memory.ScopeOf(alice)
	facts := make([]string, 1000)
	for i := range facts {
		facts[i] = fmt.Sprintf("Alice's fact number %d is about her %s and her %s.", i, subjects[i%len(subjects)], subjects[(i*7)%len(subjects)])
	}
	if _, err := store.Save(context.Background(), sc, facts...); err != nil {
		b.Fatal(err)
	}
	for _, c := range []struct {
		name string
		opts []provider.InvokeOption
	}{
		{"off", nil},
		{"on", []provider.InvokeOption{memory.Recall(store)}},
	} {
		b.Run(c.name, func(b *testing.B) {
			step := loop.New(loop.WithInvokeOptions(c.opts...))
			prov := script.New(nil)
			answer := []script.Step{script.Text("ok")}
			b.ReportAllocs()
			for b.Loop() {
				th := ledger.NewThread(ledger.WithMetadata(alice.Metadata()))
				_ = th.Append(ledger.RoleUser, artifact.Text{Content: "What about my dog and my car?"})
				*prov = *script.New(answer)
				if _, err := step.Turn(context.Background(), th, prov); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// TestRecallPrefixFigure checks what BENCHMARKS.md's figure stands on:
// with recall after the prefix, every request's body begins with the
// whole previous body but the bytes after its messages (the model and
// stream settings, under 100 bytes); with the facts in the system prompt,
// the previous body is lost from inside the system message on.
func TestRecallPrefixFigure(t *testing.T) {
	store := openFile(t)
	defer store.Close()
	saveTopics(t, store)
	_, after := prefixShares(t, optionList{provider.WithSystemPrompt("You are helpful."), memory.Recall(store, memory.WithLimit(3))}, store)
	_, system := prefixShares(t, factsInSystem(store), store)
	t.Logf("bytes of the previous body not kept: recall %v, system prompt %v", after, system)
	for i := range after {
		if after[i] > 100 || system[i] < 300 {
			t.Errorf("request %d: %d bytes of the previous body not kept with recall, %d with the facts in the system prompt", i+1, after[i], system[i])
		}
	}
}
