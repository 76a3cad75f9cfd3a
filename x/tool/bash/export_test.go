package bash

import (
	"context"
	"os/exec"
)

// WithContainment forces a containment, so each one is tested whatever
// the host would choose.
var WithContainment = withContainment

// Available reports whether the host allows containment c.
func Available(c Containment) bool {
	sh, err := exec.LookPath("bash")
	if err != nil {
		return false
	}
	return available(c, sh)
}

// TimeoutNow makes a Run on the returned context time out, as if its
// timeout had passed, when now is closed: a test times the call out once
// the command has reached a point, rather than guessing how long that
// takes.
func TimeoutNow(ctx context.Context, now <-chan struct{}) context.Context {
	return context.WithValue(ctx, timeoutNowKey{}, now)
}
