package temporal_test

import (
	"context"
	"testing"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/testsuite"

	"github.com/lodeworks/lode/artifact"
	"github.com/lodeworks/lode/ledger"
	"github.com/lodeworks/lode/loop"
	"github.com/lodeworks/lode/x/provider/script"
	lt "github.com/lodeworks/lode/x/temporal"
)

// A worker that died inside a call left the thread's lease taken; the
// Interrupt activity that follows releases it when this run's own call
// holds it, so that the next model turn goes on at once, and leaves
// anyone else's lease alone.
func TestInterruptReleasesTheDeadCallsLease(t *testing.T) {
	// The test environment's activities run as this workflow run.
	const run = "default-test-workflow-id/default-test-run-id/"
	for _, tc := range []struct {
		name, owner string
		released    bool
	}{
		{"this run's call", "temporal/" + run + "7", true},
		{"another run", "temporal/lode-other/run-2/7", false},
		{"a loop run", "lode-run/host/1", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			store, id := thread(t, "rm it")
			ctx := context.Background()
			st, err := store.Load(ctx, id)
			if err != nil {
				t.Fatal(err)
			}
			if err := st.Append(ledger.RoleAssistant, artifact.ToolCall{ID: "c1", Name: "rm", Arguments: `{}`}); err != nil {
				t.Fatal(err)
			}
			if _, err := st.AcquireLease(ctx, tc.owner, time.Now(), time.Hour); err != nil {
				t.Fatal(err)
			}
			st.Close()
			a, err := lt.New(store, script.Play(), lt.WithHandler(&tools{}))
			if err != nil {
				t.Fatal(err)
			}
			var suite testsuite.WorkflowTestSuite
			env := suite.NewTestActivityEnvironment()
			env.RegisterActivityWithOptions(a.Interrupt, activity.RegisterOptions{Name: lt.InterruptName})
			if _, err := env.ExecuteActivity(lt.InterruptName, lt.CallInput{Thread: id, At: 1, ID: "c1"}); err != nil {
				t.Fatal(err)
			}
			st, err = store.Load(ctx, id)
			if err != nil {
				t.Fatal(err)
			}
			defer st.Close()
			l, err := st.Lease()
			held := err == nil && l.Owner == tc.owner && l.Expires.After(time.Now())
			if held == tc.released {
				t.Fatalf("lease %+v (%v) after Interrupt; want released %v", l, err, tc.released)
			}
			rs := results(t, store, id)["c1"]
			if len(rs) != 1 || rs[0].Content != loop.InterruptedMessage {
				t.Fatalf("results %+v", rs)
			}
		})
	}
}
