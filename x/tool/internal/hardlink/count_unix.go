//go:build unix

package hardlink

import "syscall"

func count(sys any) uint64 {
	if st, ok := sys.(*syscall.Stat_t); ok {
		return uint64(st.Nlink)
	}
	return 0
}
