package a2a

import (
	"context"
	"errors"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2asrv"
)

// handler is the SDK's request handler with CancelTask retried while the
// task is still cancelable. The SDK sends a cancel to an execution it
// still holds; one that has just ended input-required (its cleanup not
// yet done) makes it refuse the cancel as not cancelable, though the
// task waits and nothing runs. The retry waits out that cleanup.
type handler struct {
	a2asrv.RequestHandler
	tasks *tasks
}

// cancelRetries bounds the retry: 50 times 10ms.
const (
	cancelRetries = 50
	cancelBackoff = 10 * time.Millisecond
)

func (h handler) CancelTask(ctx context.Context, req *a2a.CancelTaskRequest) (*a2a.Task, error) {
	for i := 0; ; i++ {
		t, err := h.RequestHandler.CancelTask(ctx, req)
		if err == nil || !errors.Is(err, a2a.ErrTaskNotCancelable) || i == cancelRetries {
			return t, err
		}
		stored, gerr := h.tasks.Get(ctx, req.ID)
		if gerr != nil || stored.Task.Status.State.Terminal() {
			return t, err
		}
		select {
		case <-time.After(cancelBackoff):
		case <-ctx.Done():
			return t, err
		}
	}
}
