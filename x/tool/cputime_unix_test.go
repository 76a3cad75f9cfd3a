//go:build unix

package tool_test

import (
	"syscall"
	"time"
)

// cpuTime is the CPU time this process has used, all threads together: on
// a shared machine it moves less than the wall clock with the load of
// others.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
