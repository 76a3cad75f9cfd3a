package loop_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/lodeworks/lode/artifact"
	"github.com/lodeworks/lode/ledger"
	"github.com/lodeworks/lode/ledger/file"
	"github.com/lodeworks/lode/loop"
	"github.com/lodeworks/lode/x/provider/script"
)

// Run and Resume hold the stored thread's lease while they work. A resumer
// that meets another owner's live lease is refused and changes nothing;
// once that lease has expired (its owner died), the next one takes over.
func ExampleWithLease() {
	dir, _ := os.MkdirTemp("", "lease")
	defer os.RemoveAll(dir)
	store, _ := file.Open(dir)
	defer store.Close()
	ctx := context.Background()
	start := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

	thread, _ := store.Create(ctx, ledger.WithID("tidy"))
	_ = thread.Append(ledger.RoleUser, artifact.Text{Content: "remove the logs"})
	step := loop.New(loop.WithHandlers(asker), loop.WithClock(func() time.Time { return start }))
	_, err := step.Run(ctx, thread, script.Play(script.Call("call_1", "rm", `{"path":"logs"}`)))
	fmt.Println(errors.Is(err, loop.ErrPaused))

	// A process that claimed the call holds the lease, then dies.
	_, _ = thread.AcquireLease(ctx, "worker-1", start, time.Minute)

	next, _ := store.Load(ctx, "tidy")
	_, err = step.Resume(ctx, next, script.Play(), []artifact.Decision{loop.Approve("call_1")})
	fmt.Println(errors.Is(err, ledger.ErrLeased), errors.Is(err, ledger.ErrConflict))

	later := loop.New(loop.WithHandlers(asker), loop.WithLease(time.Minute),
		loop.WithClock(func() time.Time { return start.Add(2 * time.Minute) }))
	_, err = later.Resume(ctx, next, script.Play(script.Text("Removed.")), []artifact.Decision{loop.Approve("call_1")})
	fmt.Println("after expiry:", err)
	// Output:
	// true
	// true true
	// after expiry: <nil>
}
