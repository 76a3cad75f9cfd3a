//go:build !unix

package file

import "os"

// Without flock, writers in different processes are not detected; within
// one process the StoredThread already serialises its own changes.
func lock(*os.File, bool) error { return nil }

func unlock(*os.File) error { return nil }

func fileState(f *os.File) (int64, bool, error) {
	fi, err := f.Stat()
	if err != nil {
		return 0, false, err
	}
	return fi.Size(), true, nil
}
