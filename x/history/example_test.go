package history_test

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/lodeworks/lode/artifact"
	"github.com/lodeworks/lode/ledger"
	"github.com/lodeworks/lode/loop"
	"github.com/lodeworks/lode/x/history"
	"github.com/lodeworks/lode/x/provider/script"
)

// A long thread is compacted: the model sees the first message, a summary
// and the newest turns, while the ledger keeps every turn plus the summary.
func Example() {
	th := ledger.NewThread(ledger.WithClock(nil))
	for i := range 30 {
		_ = th.Append(ledger.RoleUser, artifact.Text{Content: fmt.Sprintf("note %d: %s", i, strings.Repeat("details ", 20))})
		_ = th.Append(ledger.RoleAssistant, artifact.Text{Content: "noted"})
	}
	_ = th.Append(ledger.RoleUser, artifact.Text{Content: "What did I ask first?"})

	// The old turns reach the summarizer in chunks that fit its budget,
	// each with the summary so far: it answers once per chunk.
	summarizer := script.Play(slices.Repeat([]script.Step{script.Text("The user dictated thirty notes.")}, 20)...)
	pol, err := history.New(history.WithBudget(400), history.WithSummarizer(summarizer))
	if err != nil {
		fmt.Println(err)
		return
	}
	model := script.Play(script.Text("Your first note."))
	step := loop.New(loop.WithInvokeOptions(pol))
	if _, err := step.Turn(context.Background(), th, pol.Provider(model)); err != nil {
		fmt.Println(err)
		return
	}
	sent := model.Requests()[0].Turns
	fmt.Println("turns in the ledger:", th.Len())
	fmt.Println("turns sent:", len(sent))
	fmt.Println(strings.TrimPrefix(sent[1].Artifacts[0].(artifact.Text).Content, history.SummaryPrefix))
	s := th.Turns()[61].Artifacts[0].(artifact.Summary)
	fmt.Printf("the summary covers turns %d to %d\n", s.First, s.Last)
	fmt.Println("summarizer requests:", len(summarizer.Requests()))
	// Output:
	// turns in the ledger: 63
	// turns sent: 8
	// The user dictated thirty notes.
	// the summary covers turns 1 to 54
	// summarizer requests: 14
}
