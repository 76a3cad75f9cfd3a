package skills

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path"
	"path/filepath"
	"strings"
	"syscall"
	"unicode"
	"unicode/utf8"

	"github.com/lodeworks/lode/x/tool/internal/hardlink"
)

// Files lists the files in a skill's folder besides SKILL.md, relative to
// it, sorted; at most 100, and whether there were more. Links and
// anything else that is not a regular file are left out.
func (s *Skills) Files(name string) ([]string, bool, error) {
	e, err := s.lookup(name)
	if err != nil {
		return nil, false, err
	}
	fsys, closeFn, err := e.folder()
	if err != nil {
		return nil, false, err
	}
	defer closeFn()
	var files []string
	more := false
	visited := 0
	err = fs.WalkDir(fsys, e.base(), func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil // an unreadable corner is left out of the list
		}
		if visited++; visited > maxVisit {
			more = true
			return fs.SkipAll
		}
		rel := e.rel(p)
		if d.IsDir() && strings.Count(rel, "/") >= maxDepth {
			return fs.SkipDir
		}
		if !d.Type().IsRegular() || rel == skillFile {
			return nil
		}
		if len(files) == maxListedFiles {
			more = true
			return fs.SkipAll
		}
		files = append(files, rel)
		return nil
	})
	return files, more, err
}

// folder returns a file system holding the skill's folder: for a directory
// source an os.Root opened on the folder itself, so no link can lead out of
// it; otherwise the source's file system, with base() the folder in it.
func (e *entry) folder() (fs.FS, func(), error) {
	if e.src.root != nil {
		r, err := e.src.root.OpenRoot(e.Dir)
		if err != nil {
			return nil, nil, fmt.Errorf("the folder of skill %q cannot be opened: %w", e.Name, err)
		}
		return r.FS(), func() { r.Close() }, nil
	}
	return e.src.fsys, func() {}, nil
}

func (e *entry) base() string {
	if e.src.root != nil {
		return "."
	}
	return e.Dir
}

// rel makes a path in folder() relative to the skill's folder.
func (e *entry) rel(p string) string {
	b := e.base()
	if b == "." {
		return p
	}
	if p == b {
		return "."
	}
	return strings.TrimPrefix(p, b+"/")
}

// ReadFile returns a file of a skill's folder by its path relative to the
// folder. Paths that are absolute, lead out of the folder, contain control
// characters or pass through a symbolic link out of it are refused.
func (s *Skills) ReadFile(name, rel string) (string, error) {
	e, err := s.lookup(name)
	if err != nil {
		return "", err
	}
	c, err := cleanRel(rel)
	if err != nil {
		return "", err
	}
	fsys, closeFn, err := e.folder()
	if err != nil {
		return "", err
	}
	defer closeFn()
	full := path.Join(e.base(), c)
	if e.src.root == nil {
		// A file system that knows links is walked element by element:
		// no link is followed, wherever it leads.
		if _, ok := fsys.(fs.ReadLinkFS); ok {
			p := e.base()
			for elem := range strings.SplitSeq(c, "/") {
				p = path.Join(p, elem)
				info, err := fs.Lstat(fsys, p)
				if err != nil {
					return "", describe(c, err, e.src.escape)
				}
				if info.Mode()&fs.ModeSymlink != 0 {
					return "", fmt.Errorf("%q passes through a symbolic link; skill files cannot be read through links", c)
				}
			}
		}
	}
	f, err := fsys.Open(full)
	if err != nil {
		return "", describe(c, err, e.src.escape)
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return "", describe(c, err, e.src.escape)
	}
	if info.IsDir() {
		return "", fmt.Errorf("%q is a directory; give the path of a file (load lists them)", c)
	}
	if !info.Mode().IsRegular() {
		return "", fmt.Errorf("%q is not a regular file", c)
	}
	if !s.hardLinks && hardlink.Shared(info) {
		return "", fmt.Errorf("%q has %d hard links, so it is refused: the same file may also be outside the skill's folder. Only files with a single link can be read here", c, hardlink.Count(info))
	}
	if info.Size() > s.maxBytes {
		return "", fmt.Errorf("%q is %d bytes; the limit is %d", c, info.Size(), s.maxBytes)
	}
	data, err := io.ReadAll(io.LimitReader(f, s.maxBytes+1))
	if err != nil {
		return "", describe(c, err, e.src.escape)
	}
	if int64(len(data)) > s.maxBytes {
		return "", fmt.Errorf("%q is larger than the %d-byte limit", c, s.maxBytes)
	}
	if bytes.IndexByte(data, 0) >= 0 {
		return "", fmt.Errorf("%q is a binary file; read handles text files only", c)
	}
	return string(data), nil
}

// cleanRel checks a path a model gave, relative to a skill's folder.
func cleanRel(p string) (string, error) {
	const maxPath, maxName = 4096, 255
	switch {
	case p == "":
		return "", errors.New("the path is empty; give a file path relative to the skill's folder")
	case len(p) > maxPath:
		return "", fmt.Errorf("the path is %d bytes long; the limit is %d", len(p), maxPath)
	case !utf8.ValidString(p):
		return "", errors.New("the path is not valid UTF-8")
	case strings.ContainsFunc(p, unicode.IsControl):
		return "", fmt.Errorf("the path %q contains a control character", p)
	case strings.HasPrefix(p, "/") || filepath.IsAbs(p):
		return "", fmt.Errorf("%q is absolute; paths are relative to the skill's folder", p)
	}
	c := path.Clean(p)
	if c == ".." || strings.HasPrefix(c, "../") {
		return "", fmt.Errorf("%q leads outside the skill's folder", p)
	}
	if c == "." {
		return "", errors.New("the path names the skill's folder itself; give a file path (load lists the files)")
	}
	for elem := range strings.SplitSeq(c, "/") {
		if len(elem) > maxName {
			return "", fmt.Errorf("a name in the path is %d bytes long; the limit is %d", len(elem), maxName)
		}
	}
	if !fs.ValidPath(c) {
		return "", fmt.Errorf("%q is not a valid path", p)
	}
	return c, nil
}

// describe turns a file error into a sentence without host paths.
func describe(rel string, err error, escape error) error {
	var pe *fs.PathError
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("%q does not exist in the skill's folder (load lists its files)", rel)
	case errors.Is(err, syscall.ELOOP):
		return fmt.Errorf("%q: too many levels of symbolic links", rel)
	case errors.Is(err, syscall.ENOTDIR):
		return fmt.Errorf("%q: a part of the path is not a directory", rel)
	case errors.Is(err, fs.ErrPermission):
		return fmt.Errorf("%q: permission denied", rel)
	case escape != nil && errors.Is(err, escape):
		return fmt.Errorf("%q leads outside the skill's folder (through a symbolic link)", rel)
	case errors.As(err, &pe):
		return fmt.Errorf("%q: %v", rel, pe.Err)
	}
	return fmt.Errorf("%q: %v", rel, err)
}
