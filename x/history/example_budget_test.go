package history_test

import (
	"context"
	"fmt"
	"strings"

	"github.com/lodeworks/lode/artifact"
	"github.com/lodeworks/lode/ledger"
	"github.com/lodeworks/lode/loop"
	"github.com/lodeworks/lode/x/history"
	"github.com/lodeworks/lode/x/provider/script"
)

// A summarizer that babbles is asked again, shorter, with the limit named;
// an answer still too long is cut to the summary's share and marked.
func Example_babblingSummarizer() {
	th := ledger.NewThread(ledger.WithClock(nil))
	for i := range 30 {
		_ = th.Append(ledger.RoleUser, artifact.Text{Content: fmt.Sprintf("note %d: %s", i, strings.Repeat("details ", 20))})
		_ = th.Append(ledger.RoleAssistant, artifact.Text{Content: "noted"})
	}
	_ = th.Append(ledger.RoleUser, artifact.Text{Content: "What did I ask first?"})

	babble := script.Text(strings.Repeat("The user wrote a note. ", 200))
	summarizer := script.Play(babble, babble, script.Text("The user dictated thirty notes."))
	pol, err := history.New(history.WithBudget(1000), history.WithSummarizer(summarizer),
		history.WithSummaryTokens(200), history.WithSummarizerBudget(8000))
	if err != nil {
		fmt.Println(err)
		return
	}
	if _, err := loop.New(loop.WithInvokeOptions(pol)).Turn(context.Background(), th, script.Play(script.Text("Your first note."))); err != nil {
		fmt.Println(err)
		return
	}
	reqs := summarizer.Requests()
	last := reqs[len(reqs)-1].Turns[1].Artifacts[0].(artifact.Text).Content
	fmt.Println("summarizer requests:", len(reqs))
	fmt.Println(last[strings.LastIndex(last, "Your last summary"):])
	s := th.Turns()[th.Len()-2].Artifacts[0].(artifact.Summary)
	fmt.Println("stored:", s.Content)
	// Output:
	// summarizer requests: 3
	// Your last summary was 4599 bytes, over the limit of 699 bytes (about 174 tokens). Write it again, shorter: at most 699 bytes.
	// stored: The user dictated thirty notes.
}
