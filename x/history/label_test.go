package history_test

import (
	"context"
	"slices"
	"testing"

	"github.com/lodeworks/lode/ledger"
	"github.com/lodeworks/lode/loop"
	"github.com/lodeworks/lode/x/history"
	"github.com/lodeworks/lode/x/provider/script"
)

// Compaction changes the request and stores a summary turn, never the
// thread's metadata: the flow labels a thread took in stay, so what the
// summary hides from the model still narrows what it may do.
func TestCompactionKeepsLabels(t *testing.T) {
	sum := &recorder{answer: func(int) (string, error) { return "The user dictated notes.", nil }}
	pol, err := history.New(history.WithBudget(2000), history.WithSummarizer(sum))
	if err != nil {
		t.Fatal(err)
	}
	th := notes(60)
	if err := ledger.AddLabel(th, ledger.LabelUntrusted, "web__fetch"); err != nil {
		t.Fatal(err)
	}
	before := th.Len()
	if _, err := loop.New(loop.WithInvokeOptions(pol)).Turn(context.Background(), th, script.Play(script.Text("Your first note."))); err != nil {
		t.Fatal(err)
	}
	if len(sum.sizes) == 0 || th.Len() < before+2 {
		t.Fatalf("no compaction: %d summarizer requests, %d turns from %d", len(sum.sizes), th.Len(), before)
	}
	if got := ledger.Labels(th); !slices.Equal(got, []ledger.Label{ledger.LabelUntrusted}) {
		t.Fatalf("labels after compaction: %v", got)
	}
}
