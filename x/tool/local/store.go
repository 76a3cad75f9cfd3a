package local

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"slices"
	"strings"
)

// maxItemSize bounds an item file; a larger one is reported, not read.
const maxItemSize = 1 << 20

// maxIDLen bounds an item id.
const maxIDLen = 100

// validID reports whether id can name an item file: 1 to 100 letters,
// digits, '.', '_' or '-', starting with a letter or digit. That rules out
// separators, "..", absolute paths, NUL and hidden files by construction.
func validID(id string) error {
	bad := len(id) == 0 || len(id) > maxIDLen
	for i := 0; i < len(id) && !bad; i++ {
		c := id[i]
		alnum := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
		bad = !alnum && (i == 0 || c != '.' && c != '_' && c != '-')
	}
	if bad {
		return fmt.Errorf("invalid id %q: an id is 1 to %d letters, digits, '.', '_' or '-', starting with a letter or digit", clip(id), maxIDLen)
	}
	return nil
}

func clip(s string) string {
	if len(s) > 60 {
		return s[:60] + "..."
	}
	return s
}

func fileName(id string) string { return id + ".md" }

// Skipped is an item file that could not be read, and why.
type Skipped struct {
	File   string `json:"file"`
	Reason string `json:"reason"`
}

// errNotFound is returned by read for an id with no file.
var errNotFound = errors.New("not found")

// read loads one item through root.
func read(root *os.Root, id string) (*item, error) {
	f, err := root.Open(fileName(id))
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, errNotFound
		}
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !st.Mode().IsRegular() {
		return nil, errors.New("not a regular file")
	}
	data, err := io.ReadAll(io.LimitReader(f, maxItemSize+1))
	if err != nil {
		return nil, err
	}
	if len(data) > maxItemSize {
		return nil, fmt.Errorf("the file is larger than %d bytes", maxItemSize)
	}
	return parseItem(id, data)
}

// list loads every item of the folder, in file name order. Files that are
// not items are skipped and reported; hidden files and files without the
// .md extension are ignored.
func list(root *os.Root) ([]*item, []Skipped, error) {
	dir, err := root.Open(".")
	if err != nil {
		return nil, nil, err
	}
	entries, err := dir.ReadDir(-1)
	dir.Close()
	if err != nil {
		return nil, nil, err
	}
	slices.SortFunc(entries, func(a, b fs.DirEntry) int { return strings.Compare(a.Name(), b.Name()) })
	var items []*item
	var skipped []Skipped
	for _, e := range entries {
		name := e.Name()
		id, ok := strings.CutSuffix(name, ".md")
		if !ok || strings.HasPrefix(name, ".") || e.IsDir() {
			continue
		}
		if err := validID(id); err != nil {
			skipped = append(skipped, Skipped{File: name, Reason: "the file name is not a valid item id"})
			continue
		}
		it, err := read(root, id)
		if err != nil {
			skipped = append(skipped, Skipped{File: name, Reason: err.Error()})
			continue
		}
		items = append(items, it)
	}
	return items, skipped, nil
}

// write stores data as the item file name atomically: a temporary file in
// the same folder is written and synced, then renamed over name (or, when
// exclusive, linked to name, which fails if it exists), then the folder is
// synced. A crash leaves either the old file or the new one, never a
// partial one; at worst a hidden temporary file stays behind.
func write(root *os.Root, name string, data []byte, exclusive bool) (err error) {
	tmp := fmt.Sprintf(".%s.%016x.tmp", name, rand.Uint64())
	f, err := root.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return err
	}
	defer func() {
		if f != nil {
			f.Close()
		}
		if err != nil || exclusive {
			root.Remove(tmp)
		}
	}()
	if _, err = f.Write(data); err != nil {
		return err
	}
	if err = f.Sync(); err != nil {
		return err
	}
	err = f.Close()
	f = nil
	if err != nil {
		return err
	}
	if exclusive {
		err = root.Link(tmp, name)
	} else {
		err = root.Rename(tmp, name)
	}
	if err != nil {
		return err
	}
	return syncDir(root)
}

func syncDir(root *os.Root) error {
	d, err := root.Open(".")
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}
