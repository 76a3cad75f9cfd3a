package ledger_test

import (
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/lodeworks/lode/artifact"
	"github.com/lodeworks/lode/ledger"
	"github.com/lodeworks/lode/ledger/file"
)

// Fork keeps a thread's first turns in a new thread, so the person can ask
// again from there; the parent keeps its own answer.
func ExampleFork() {
	dir, _ := os.MkdirTemp("", "fork")
	defer os.RemoveAll(dir)
	store, _ := file.Open(dir)
	defer store.Close()
	ctx := context.Background()

	parent, _ := store.Create(ctx, ledger.WithID("trip"))
	parent.Append(ledger.RoleUser, artifact.Text{Content: "Plan a day in Lyon."})
	parent.Append(ledger.RoleAssistant, artifact.Text{Content: "Start at Fourvière..."})
	parent.Close()

	// Keep the question, and answer it again on the fork.
	fork, err := ledger.Fork(ctx, store, "trip", 1, ledger.WithForkID("trip.2"))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer fork.Close()
	fork.Append(ledger.RoleAssistant, artifact.Text{Content: "Start at the market in Croix-Rousse..."})

	from, _ := fork.Metadata(ledger.ForkedFromKey)
	at, _ := fork.Metadata(ledger.ForkedAtKey)
	fmt.Printf("%s: %d turns, forked from %s at %s\n", fork.ID(), fork.Len(), from, at)
	p, _ := store.Load(ctx, "trip")
	defer p.Close()
	fmt.Printf("%s: %d turns, still ends %q\n", p.ID(), p.Len(), p.Turns()[1].Artifacts[0].(artifact.Text).Content)

	// A cut between a call and its result is refused.
	parent, _ = store.Load(ctx, "trip")
	parent.Append(ledger.RoleAssistant, artifact.ToolCall{ID: "c1", Name: "weather", Arguments: `{"city":"Lyon"}`})
	parent.Append(ledger.RoleTool, artifact.ToolResult{ToolCallID: "c1", Name: "weather", Content: "sunny"})
	parent.Close()
	_, err = ledger.Fork(ctx, store, "trip", 3)
	fmt.Println(errors.Is(err, ledger.ErrForkPoint), err)
	// Output:
	// trip.2: 2 turns, forked from trip at 1
	// trip: 2 turns, still ends "Start at Fourvière..."
	// true ledger: fork trip at 3: cannot fork there: call c1 (weather) of turn 2 has no result before turn 3; fork at 2 or after its result
}

// A store that makes forks itself (a ledger.Forker) reads the parent and
// lets Plan decide: the cut is checked and the metadata trimmed as Fork
// does for every store.
func ExampleForkRequest_Plan() {
	parent := []ledger.Turn{
		{Role: ledger.RoleUser, Artifacts: []artifact.Artifact{artifact.Text{Content: "Plan a day in Lyon."}}},
		{Role: ledger.RoleAssistant, Artifacts: []artifact.Artifact{artifact.ToolCall{ID: "c1", Name: "weather", Arguments: "{}"}}},
		{Role: ledger.RoleTool, Artifacts: []artifact.Artifact{artifact.ToolResult{ToolCallID: "c1", Name: "weather", Content: "sunny"}}},
	}
	meta := map[string]string{"tenant": "acme", ledger.LeaseKey: `{"owner":"w1"}`}
	req := ledger.ForkRequest{Parent: "trip", At: 3, ID: "trip.2"}
	forkMeta, err := req.Plan(parent[:req.At], len(parent), meta)
	fmt.Println(forkMeta, err)

	req.At = 2
	_, err = req.Plan(parent[:req.At], len(parent), meta)
	fmt.Println(errors.Is(err, ledger.ErrForkPoint))
	// Output:
	// map[lode.forked_at:3 lode.forked_from:trip tenant:acme] <nil>
	// true
}
