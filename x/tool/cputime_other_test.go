//go:build !unix

package tool_test

import "time"

// cpuTime is not measured here; the ratio test reports wall time only.
func cpuTime() time.Duration { return 0 }
