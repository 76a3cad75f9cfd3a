package bash

import "os/exec"

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
