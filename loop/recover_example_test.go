package loop_test

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/lodeworks/lode/artifact"
	"github.com/lodeworks/lode/ledger"
	"github.com/lodeworks/lode/ledger/file"
	"github.com/lodeworks/lode/loop"
	"github.com/lodeworks/lode/x/provider/script"
)

// A process died while the model was answering: its thread keeps the
// lease it never released. Once the lease has expired, Recover, in any
// process that opens the store, asks the model again and finishes the run.
func ExampleStep_Recover() {
	dir, _ := os.MkdirTemp("", "lode-recover")
	defer os.RemoveAll(dir)
	store, _ := file.Open(dir)
	defer store.Close()
	ctx := context.Background()

	died := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	st, _ := store.Create(ctx, ledger.WithID("order-66"), ledger.WithTurns(
		ledger.Turn{Role: ledger.RoleUser, Artifacts: []artifact.Artifact{artifact.Text{Content: "Say hello."}}}))
	_, _ = st.AcquireLease(ctx, "web-1/4242", died, loop.DefaultLeaseTTL)
	st.Close()

	step := loop.New(loop.WithClock(func() time.Time { return died.Add(time.Minute) }))
	recs, err := step.Recover(ctx, store, script.Play(script.Text("Hello!")))
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, r := range recs {
		fmt.Printf("%s: from %s, after %s, ended with %v\n", r.Thread, r.From, r.PreviousOwner, r.Err)
	}
	st, _ = store.Load(ctx, "order-66")
	turns := st.Turns()
	fmt.Println(turns[len(turns)-1].Artifacts[0].(artifact.Text).Content)
	// Output:
	// order-66: from turn, after web-1/4242, ended with <nil>
	// Hello!
}
