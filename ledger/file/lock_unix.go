//go:build unix

package file

import (
	"os"
	"syscall"
)

// lock takes the journal's advisory lock, shared or exclusive. The kernel
// drops it when the holder dies, so a crashed writer never blocks others.
func lock(f *os.File, exclusive bool) error {
	how := syscall.LOCK_SH
	if exclusive {
		how = syscall.LOCK_EX
	}
	for {
		err := syscall.Flock(int(f.Fd()), how)
		if err != syscall.EINTR {
			return err
		}
	}
}

func unlock(f *os.File) error { return syscall.Flock(int(f.Fd()), syscall.LOCK_UN) }

// fileState returns the size of the open journal and whether it still has
// a name in the directory (false once the thread was deleted).
func fileState(f *os.File) (size int64, linked bool, err error) {
	var st syscall.Stat_t
	if err := syscall.Fstat(int(f.Fd()), &st); err != nil {
		return 0, false, err
	}
	return st.Size, st.Nlink > 0, nil
}
