package eval_test

import (
	"context"
	"fmt"
	"os"

	"github.com/lodeworks/lode/artifact"
	"github.com/lodeworks/lode/ledger"
	"github.com/lodeworks/lode/ledger/file"
	"github.com/lodeworks/lode/loop"
	"github.com/lodeworks/lode/x/eval"
	"github.com/lodeworks/lode/x/provider/script"
)

// The counterfactual: a thread recorded in a store (here by a scripted
// model) answered wrongly at turn 1. Cases from that fork point ask what
// the agent does from there: the recorded answer fails, another passes;
// the recorded thread stays as it was.
func ExampleFromFork() {
	ctx := context.Background()
	dir, _ := os.MkdirTemp("", "lode-eval-fork")
	defer os.RemoveAll(dir)
	store, _ := file.Open(dir)
	defer store.Close()

	// The recorded thread: question, wrong answer, follow-up, answer.
	st, _ := store.Create(ctx, ledger.WithID("support-42"))
	model := script.New([]script.Step{script.Text("9.11 is bigger."), script.Text("Yes, I am sure.")})
	for _, q := range []string{"Which is bigger, 9.11 or 9.9?", "Are you sure?"} {
		_ = st.Append(ledger.RoleUser, artifact.Text{Content: q})
		_, _ = loop.New().Run(ctx, st, model)
	}

	// From turn 1: the question kept, the answer the model's to give.
	answer := func(name, text string) eval.Case {
		return eval.Case{
			Name:   name,
			From:   eval.FromFork(store, "support-42", 1),
			Model:  eval.Scripted("", script.Text(text)),
			Expect: []eval.Expectation{eval.TextContains("9.9 is bigger")},
		}
	}
	r := eval.RunSuite(ctx, &eval.Suite{Name: "counterfactual", Cases: []eval.Case{
		answer("as recorded", "9.11 is bigger."),
		answer("otherwise", "9.9 is bigger."),
	}})
	for _, c := range r.Cases {
		fmt.Printf("%-12s %s  %s (%d turns)\n", c.Name, c.Status, c.Text, len(c.Transcript))
	}
	recorded, _ := store.Load(ctx, "support-42")
	fmt.Println("recorded thread:", recorded.Len(), "turns")
	// Output:
	// as recorded  fail  9.11 is bigger. (2 turns)
	// otherwise    pass  9.9 is bigger. (2 turns)
	// recorded thread: 4 turns
}
