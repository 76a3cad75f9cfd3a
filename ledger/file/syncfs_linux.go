package file

import (
	"os"

	"golang.org/x/sys/unix"
)

// syncAll flushes the whole file system that holds f (syncfs(2)).
func syncAll(f *os.File) error {
	rc, err := f.SyscallConn()
	if err != nil {
		return err
	}
	var serr error
	if err := rc.Control(func(fd uintptr) { serr = unix.Syncfs(int(fd)) }); err != nil {
		return err
	}
	return serr
}

const canSyncAll = true
