// Package hardlink counts the names of an opened file, for the packs that
// confine files to a root (filesystem, skills). os.Root stops paths, and
// symbolic links, from leading out of the root, but a hard link is the
// file itself under a second name: one made inside the root to a file
// outside it passes every path check. A regular file with more than one
// link may be such a file, so those packs refuse it unless the application
// allows hard links.
//
// The count comes from Stat on the *os.File the caller goes on to read or
// write (fstat), never from a separate lookup by path, so the file cannot
// be swapped between the check and its use.
//
// On unix the count is the st_nlink field. Other platforms report none:
// Count returns 0 there and nothing is refused.
package hardlink

import "io/fs"

// Count returns how many hard links the file described by info has, or 0
// when the platform or the file system does not say (an embed.FS, a
// non-unix host).
func Count(info fs.FileInfo) uint64 {
	if info == nil {
		return 0
	}
	return count(info.Sys())
}

// Shared reports whether info describes a regular file that has other
// names besides the one it was opened by.
func Shared(info fs.FileInfo) bool {
	return info != nil && info.Mode().IsRegular() && Count(info) > 1
}
