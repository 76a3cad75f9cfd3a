package ledger_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/lodeworks/lode/ledger"
	"github.com/lodeworks/lode/ledger/file"
)

// A lease says who works on a stored thread. Only an expired one is taken
// over, and the store's compare-and-swap decides between owners racing.
func ExampleStoredThread_AcquireLease() {
	dir, _ := os.MkdirTemp("", "lease")
	defer os.RemoveAll(dir)
	store, _ := file.Open(dir)
	defer store.Close()
	ctx := context.Background()
	start := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

	first, _ := store.Create(ctx, ledger.WithID("job-7"))
	_, _ = first.AcquireLease(ctx, "worker-1", start, time.Minute)

	// Another worker, as another process would, loads the thread.
	second, _ := store.Load(ctx, "job-7")
	_, err := second.AcquireLease(ctx, "worker-2", start.Add(30*time.Second), time.Minute)
	fmt.Println(errors.Is(err, ledger.ErrLeased), errors.Is(err, ledger.ErrConflict))
	fmt.Println(err)

	// worker-1 stopped renewing; once its lease expires it is taken over.
	prev, err := second.AcquireLease(ctx, "worker-2", start.Add(2*time.Minute), time.Minute)
	fmt.Println("took over from", prev.Owner, "expired", prev.Expires.Format(time.TimeOnly), err)

	// worker-1 finds out when it next renews.
	err = first.RenewLease(ctx, "worker-1", start.Add(2*time.Minute), time.Minute)
	var le *ledger.LeaseError
	fmt.Println(errors.As(err, &le) && le.Lost)
	_ = second.ReleaseLease(ctx, "worker-2")
	// Output:
	// true true
	// ledger: thread job-7 is leased to worker-1 since 2026-03-01T12:00:00Z, until 2026-03-01T12:01:00Z; wait for it to finish or for the lease to expire
	// took over from worker-1 expired 12:01:00 <nil>
	// true
}
