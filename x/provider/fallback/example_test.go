package fallback_test

import (
	"context"
	"fmt"

	"github.com/lodeworks/lode/artifact"
	"github.com/lodeworks/lode/ledger"
	"github.com/lodeworks/lode/loop"
	"github.com/lodeworks/lode/provider"
	"github.com/lodeworks/lode/x/provider/fallback"
	"github.com/lodeworks/lode/x/provider/script"
)

// unavailable is a server error as an adapter reports it.
type unavailable struct{}

func (unavailable) Error() string   { return "model server: 503 Service Unavailable" }
func (unavailable) HTTPStatus() int { return 503 }

// A primary model that is down, and a backup that answers: the loop sees
// one answer, and its observers see why the backup was asked.
func Example() {
	primary := script.Play(script.Fail(unavailable{}))
	backup := script.Play(script.Text("Hello from the backup."))
	p, err := fallback.New([]provider.Provider{primary, backup})
	if err != nil {
		fmt.Println(err)
		return
	}
	step := loop.New(loop.WithObserver(loop.EmitterFunc(func(_ context.Context, ev loop.Event) {
		if a, ok := ev.(fallback.AttemptEvent); ok && a.Status != fallback.StatusStarted {
			fmt.Printf("attempt %d: %s (fell back: %v)\n", a.Attempt, a.Status, a.FellBack)
		}
	})))
	th := ledger.NewThread()
	_ = th.Append(ledger.RoleUser, artifact.Text{Content: "hi"})
	if _, err := step.Run(context.Background(), th, p); err != nil {
		fmt.Println(err)
		return
	}
	_ = step.Flush(context.Background())
	turns := th.Turns()
	fmt.Println(turns[len(turns)-1].Artifacts[0].(artifact.Text).Content)
	// Output:
	// attempt 0: failed (fell back: true)
	// attempt 1: answered (fell back: false)
	// Hello from the backup.
}
