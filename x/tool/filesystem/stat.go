package filesystem

import (
	"errors"
	"fmt"
	"io/fs"
	"syscall"
	"time"

	"github.com/lodeworks/lode/tool"
)

// StatResult is the Value of a successful stat.
type StatResult struct {
	Path     string    `json:"path"`
	Type     string    `json:"type"`
	Size     int64     `json:"size"`
	Mode     string    `json:"mode"`
	Modified time.Time `json:"modified"`
	// Target describes where a symbolic link leads.
	Target string `json:"target,omitempty"`
}

func (f *FS) stat(a *argReader) *tool.Result {
	rel, perr := a.path("path", "")
	if res := a.done("stat", "path"); res != nil {
		return res
	}
	if perr != nil {
		return failf("%s", perr.Error())
	}
	info, err := f.root.Lstat(rel)
	if err != nil {
		return failf("%s", f.describe(rel, err))
	}
	v := StatResult{Path: rel, Type: kindOf(info.Mode()), Size: info.Size(), Mode: info.Mode().String(), Modified: info.ModTime().UTC()}
	text := fmt.Sprintf("%s: %s, %d bytes, mode %s, modified %s", rel, v.Type, v.Size, v.Mode, v.Modified.Format(time.RFC3339))
	if info.Mode()&fs.ModeSymlink != 0 {
		// Where a link points is told only as far as the root allows: the
		// host path of a link leading out is never shown.
		target, err := f.root.Stat(rel)
		switch {
		case err == nil:
			v.Target = fmt.Sprintf("a %s of %d bytes inside the root", kindOf(target.Mode()), target.Size())
		case f.escape != nil && errors.Is(err, f.escape):
			v.Target = "outside the root (it cannot be followed)"
		case errors.Is(err, syscall.ELOOP):
			v.Target = "a symbolic link loop"
		case errors.Is(err, fs.ErrNotExist):
			v.Target = "nothing (the link is dangling)"
		default:
			v.Target = "somewhere that cannot be read"
		}
		text = fmt.Sprintf("%s: symbolic link to %s; modified %s", rel, v.Target, v.Modified.Format(time.RFC3339))
	}
	return &tool.Result{Content: text, Value: v}
}
