package filesystem

import (
	"errors"
	"fmt"
	"io/fs"
	"path"
	"path/filepath"
	"strings"
	"syscall"
	"unicode"
	"unicode/utf8"
)

// Limits on the paths a model may give; beyond them the kernel would refuse
// anyway, with a less helpful message.
const (
	MaxPathBytes = 4096
	MaxNameBytes = 255
)

// PathError is a path refused before it reached the file system.
type PathError struct {
	Path   string
	Reason string
}

func (e *PathError) Error() string { return fmt.Sprintf("path %s: %s", quote(e.Path), e.Reason) }

// Clean checks a path given by a model and returns it in canonical form:
// relative to the root, slash-separated, without "." or ".." elements, and
// satisfying fs.ValidPath ("." is the root). It refuses empty, absolute and
// escaping paths, invalid UTF-8, control characters (NUL included), and
// paths or names longer than the kernel allows. Clean is lexical; the
// os.Root the filesystem opens every path through catches what only the
// disk knows, such as a symbolic link leading out.
func Clean(p string) (string, error) {
	if p == "" {
		return "", &PathError{p, "the path is empty; use \".\" for the root"}
	}
	if len(p) > MaxPathBytes {
		return "", &PathError{p, fmt.Sprintf("the path is %d bytes long; the limit is %d", len(p), MaxPathBytes)}
	}
	if !utf8.ValidString(p) {
		return "", &PathError{p, "the path is not valid UTF-8"}
	}
	for i, r := range p {
		if unicode.IsControl(r) {
			return "", &PathError{p, fmt.Sprintf("the path contains the control character %U at byte %d", r, i)}
		}
	}
	if filepath.IsAbs(p) || strings.HasPrefix(p, "/") {
		return "", &PathError{p, "absolute paths are not allowed; paths are relative to the root"}
	}
	c := filepath.ToSlash(filepath.Clean(p))
	if !filepath.IsLocal(c) {
		return "", &PathError{p, "the path leads outside the root"}
	}
	for name := range strings.SplitSeq(c, "/") {
		if len(name) > MaxNameBytes {
			return "", &PathError{p, fmt.Sprintf("the name %s is %d bytes long; the limit is %d", quote(name), len(name), MaxNameBytes)}
		}
	}
	if !fs.ValidPath(c) {
		// Not reachable after the checks above; kept so a change to them
		// cannot let an invalid path through.
		return "", &PathError{p, "the path is not valid"}
	}
	return c, nil
}

// quote shows a path in a message, shortened when very long.
func quote(p string) string {
	const max = 120
	if len(p) > max {
		cut := max
		for cut > 0 && !utf8.RuneStart(p[cut]) {
			cut--
		}
		return fmt.Sprintf("%q… (%d bytes)", p[:cut], len(p))
	}
	return fmt.Sprintf("%q", p)
}

// describe turns an error from the root into a sentence about rel, without
// the host's path to the root.
func (f *FS) describe(rel string, err error) string {
	q := quote(rel)
	switch {
	case f.escape != nil && errors.Is(err, f.escape):
		return q + " leads outside the root (through a symbolic link or \"..\"); only paths inside the root can be used"
	case errors.Is(err, syscall.ELOOP):
		return q + ": too many levels of symbolic links (a symbolic link loop?)"
	case errors.Is(err, fs.ErrNotExist):
		return q + " does not exist"
	case errors.Is(err, syscall.ENOTDIR):
		return q + ": a part of the path is not a directory"
	case errors.Is(err, syscall.EISDIR):
		return q + " is a directory"
	case errors.Is(err, fs.ErrPermission):
		return q + ": permission denied"
	case errors.Is(err, syscall.ENAMETOOLONG):
		return q + ": a name in the path is too long"
	case errors.Is(err, syscall.ENOSPC):
		return q + ": no space left on the device"
	case errors.Is(err, syscall.EROFS):
		return q + ": the file system is read-only"
	case errors.Is(err, fs.ErrExist):
		return q + " already exists"
	}
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return q + ": " + pe.Err.Error()
	}
	return q + ": " + err.Error()
}

// resolve reads and cleans a path argument; def is used when it is absent.
func (a *argReader) path(key, def string) (string, *PathError) {
	p := a.str(key, def == "")
	if a.err != "" {
		return "", nil
	}
	if p == "" && def != "" {
		p = def
	}
	c, err := Clean(p)
	if err != nil {
		var pe *PathError
		errors.As(err, &pe)
		return "", pe
	}
	return c, nil
}

// display is how a cleaned path appears in results.
func display(rel string) string {
	if rel == "." {
		return "."
	}
	return rel
}

func join(dir, name string) string {
	if dir == "." {
		return name
	}
	return path.Join(dir, name)
}

// kindOf names a file mode's type.
func kindOf(m fs.FileMode) string {
	switch {
	case m.IsDir():
		return "directory"
	case m.IsRegular():
		return "file"
	case m&fs.ModeSymlink != 0:
		return "symbolic link"
	case m&fs.ModeNamedPipe != 0:
		return "named pipe"
	case m&fs.ModeSocket != 0:
		return "socket"
	case m&fs.ModeDevice != 0:
		return "device"
	}
	return "special file"
}
