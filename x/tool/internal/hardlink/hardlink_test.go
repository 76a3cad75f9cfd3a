package hardlink_test

import (
	"io/fs"
	"os"
	"path/filepath"
	"testing"
	"testing/fstest"

	"github.com/lodeworks/lode/x/tool/internal/hardlink"
)

func TestCount(t *testing.T) {
	dir := t.TempDir()
	single := filepath.Join(dir, "single")
	first := filepath.Join(dir, "first")
	if err := os.WriteFile(single, []byte("a"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(first, []byte("b"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Link(first, filepath.Join(dir, "second")); err != nil {
		t.Fatal(err)
	}
	stat := func(p string) fs.FileInfo {
		t.Helper()
		f, err := os.Open(p)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		info, err := f.Stat()
		if err != nil {
			t.Fatal(err)
		}
		return info
	}
	mem, err := fstest.MapFS{"m": {Data: []byte("c")}}.Stat("m")
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name   string
		info   fs.FileInfo
		count  int64 // -1: depends on the file system
		shared bool
	}{
		{"one link", stat(single), 1, false},
		{"two links", stat(first), 2, true},
		{"a directory", stat(dir), -1, false},
		{"no count reported", mem, 0, false},
		{"nil", nil, 0, false},
	}
	for _, c := range cases {
		if got := hardlink.Count(c.info); c.count >= 0 && got != uint64(c.count) {
			t.Errorf("%s: Count = %d, want %d", c.name, got, c.count)
		}
		if got := hardlink.Shared(c.info); got != c.shared {
			t.Errorf("%s: Shared = %v, want %v", c.name, got, c.shared)
		}
	}
}
