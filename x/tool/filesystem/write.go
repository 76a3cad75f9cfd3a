package filesystem

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"strings"
	"syscall"

	"github.com/lodeworks/lode/tool"
)

// WriteResult is the Value of a successful write or edit.
type WriteResult struct {
	Path    string `json:"path"`
	Bytes   int    `json:"bytes"`
	Created bool   `json:"created,omitempty"`
	// Replaced is the number of occurrences an edit replaced.
	Replaced int `json:"replaced,omitempty"`
}

func (f *FS) write(a *argReader) *tool.Result {
	rel, perr := a.path("path", "")
	content := a.str("content", true)
	if res := a.done("write", "path", "content"); res != nil {
		return res
	}
	if perr != nil {
		return failf("%s", perr.Error())
	}
	if rel == "." {
		return failf("\".\" is the root directory; give the path of a file")
	}
	if int64(len(content)) > f.maxWrite {
		return failf("the content is %d bytes; write takes at most %d", len(content), f.maxWrite)
	}
	created := false
	info, err := f.root.Stat(rel)
	switch {
	case err == nil && info.IsDir():
		return failf("%s is a directory; give the path of a file", quote(rel))
	case err == nil && !info.Mode().IsRegular():
		return failf("%s is not a regular file (%s); write replaces regular files only", quote(rel), kindOf(info.Mode()))
	case err != nil && !errors.Is(err, fs.ErrNotExist):
		return failf("%s", f.describe(rel, err))
	case err != nil:
		created = true
		if dir := path.Dir(rel); dir != "." {
			if err := f.root.MkdirAll(dir, 0o755); err != nil {
				return failf("cannot create the directory %s: %s", quote(dir), f.describe(dir, err))
			}
		}
	}
	if res := f.writeFile(rel, []byte(content), 0o644); res != nil {
		return res
	}
	verb := "replaced the content of"
	if created {
		verb = "created"
	}
	return &tool.Result{
		Content: fmt.Sprintf("%s %s (%d bytes)", verb, rel, len(content)),
		Value:   WriteResult{Path: rel, Bytes: len(content), Created: created},
	}
}

// writeFile truncates and writes rel, creating it if needed. The file is
// checked once open, before it is truncated: O_NONBLOCK keeps a named pipe
// that appeared since any earlier check from blocking, and an existing
// file with several hard links is refused unless they are allowed.
func (f *FS) writeFile(rel string, data []byte, perm fs.FileMode) *tool.Result {
	file, err := f.root.OpenFile(rel, os.O_WRONLY|os.O_CREATE|syscall.O_NONBLOCK, perm)
	if err != nil {
		return failf("%s", f.describe(rel, err))
	}
	info, err := file.Stat()
	switch {
	case err != nil:
		file.Close()
		return failf("%s", f.describe(rel, err))
	case !info.Mode().IsRegular():
		file.Close()
		return failf("%s is not a regular file (%s); write replaces regular files only", quote(rel), kindOf(info.Mode()))
	}
	if res := f.refuseLinked(rel, info); res != nil {
		file.Close()
		return res
	}
	err = file.Truncate(0)
	if err == nil {
		_, err = file.Write(data)
	}
	if cerr := file.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return failf("writing %s failed: %s", quote(rel), f.describe(rel, err))
	}
	return nil
}

func (f *FS) edit(a *argReader) *tool.Result {
	rel, perr := a.path("path", "")
	old := a.str("old_string", true)
	repl := a.str("new_string", true)
	all := a.bool("replace_all")
	if res := a.done("edit", "path", "old_string", "new_string", "replace_all"); res != nil {
		return res
	}
	if perr != nil {
		return failf("%s", perr.Error())
	}
	if old == "" {
		return failf("old_string is empty; give the exact text to replace")
	}
	if old == repl {
		return failf("old_string and new_string are the same; there is nothing to change")
	}
	file, info, res := f.openRegular(rel)
	if res != nil {
		return res
	}
	if info.Size() > f.maxRead {
		file.Close()
		return failf("%s is %d bytes; edit handles files up to %d bytes", quote(rel), info.Size(), f.maxRead)
	}
	data, err := io.ReadAll(io.LimitReader(file, f.maxRead+1))
	file.Close()
	if err != nil {
		return failf("%s", f.describe(rel, err))
	}
	if int64(len(data)) > f.maxRead {
		return failf("%s is larger than %d bytes; edit handles files up to that size", quote(rel), f.maxRead)
	}
	if bytes.IndexByte(data[:min(len(data), binaryProbe)], 0) >= 0 {
		return binaryFile(rel, int64(len(data)))
	}
	content := string(data)
	n := strings.Count(content, old)
	switch {
	case n == 0:
		return failf("old_string was not found in %s; it must match the file exactly, whitespace and indentation included (read the file to copy it)", quote(rel))
	case n > 1 && !all:
		return failf("old_string occurs %d times in %s; include more of the surrounding text to make it unique, or set replace_all to replace every occurrence", n, quote(rel))
	}
	if !all {
		n = 1
	}
	updated := strings.Replace(content, old, repl, n)
	if int64(len(updated)) > f.maxWrite {
		return failf("the edited file would be %d bytes; the write limit is %d", len(updated), f.maxWrite)
	}
	if res := f.writeFile(rel, []byte(updated), info.Mode().Perm()); res != nil {
		return res
	}
	word := "occurrence"
	if n > 1 {
		word += "s"
	}
	return &tool.Result{
		Content: fmt.Sprintf("replaced %d %s in %s", n, word, rel),
		Value:   WriteResult{Path: rel, Bytes: len(updated), Replaced: n},
	}
}
