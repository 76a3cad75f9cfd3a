package temporal

import (
	"context"
	"strings"

	"go.temporal.io/sdk/activity"

	"github.com/lodeworks/lode/ledger"
)

// releaseDead releases the thread's lease when this workflow run's own
// call holds it: the call activity takes the lease while its tool runs,
// and a worker that died inside the tool never released it. Called once
// the call's attempts have ended for good, when no call of the run is in
// flight, so that the next model turn need not wait for the lease to
// expire (as long as the call's timeout).
func (a *Agent) releaseDead(ctx context.Context, st *ledger.StoredThread) {
	if !activity.IsActivity(ctx) {
		return
	}
	info := activity.GetInfo(ctx)
	prefix := a.owner + "/" + info.WorkflowExecution.ID + "/" + info.WorkflowExecution.RunID + "/"
	if l, err := st.Lease(); err == nil && strings.HasPrefix(l.Owner, prefix) {
		_ = st.ReleaseLease(ctx, l.Owner)
	}
}
