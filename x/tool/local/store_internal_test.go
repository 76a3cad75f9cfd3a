package local

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
)

func openRoot(t *testing.T) (*os.Root, string) {
	t.Helper()
	dir := t.TempDir()
	root, err := os.OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { root.Close() })
	return root, dir
}

func entries(t *testing.T, dir string) []string {
	t.Helper()
	es, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range es {
		out = append(out, e.Name())
	}
	return out
}

func TestWriteFailuresLoseNothing(t *testing.T) {
	root, dir := openRoot(t)

	// Replace: the new content lands whole, and no temporary file stays.
	if err := write(root, "a.md", []byte("one"), false); err != nil {
		t.Fatal(err)
	}
	if err := write(root, "a.md", []byte("two"), false); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "a.md")); string(b) != "two" {
		t.Errorf("a.md = %q", b)
	}

	// Exclusive create over an existing item fails and keeps it.
	err := write(root, "a.md", []byte("three"), true)
	if !errors.Is(err, fs.ErrExist) {
		t.Fatalf("exclusive over an item: %v", err)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "a.md")); string(b) != "two" {
		t.Errorf("a.md after a refused create = %q", b)
	}

	// A rename that fails (the target is a non-empty folder) keeps the
	// folder and cleans up.
	if err := os.MkdirAll(filepath.Join(dir, "d.md", "x"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := write(root, "d.md", []byte("x"), false); err == nil {
		t.Fatal("rename over a folder succeeded")
	}
	if got := entries(t, dir); len(got) != 2 || got[0] != "a.md" || got[1] != "d.md" {
		t.Errorf("folder after failures = %v, want [a.md d.md]", got)
	}

	// Names that leave the root are refused by os.Root itself.
	for _, name := range []string{"../out.md", "/tmp/out.md"} {
		if err := write(root, name, []byte("x"), false); err == nil {
			t.Errorf("write(%q) succeeded", name)
		}
	}
	if got := entries(t, filepath.Dir(dir)); len(got) != 1 {
		t.Errorf("parent of the root = %v", got)
	}
}

func TestSplitFrontMatter(t *testing.T) {
	tests := []struct {
		in                       string
		open, front, close, body string
		err                      string
	}{
		{"---\na: 1\n---\nbody\n", "---\n", "a: 1\n", "---\n", "body\n", ""},
		{"---\r\na: 1\r\n---\r\nbody", "---\r\n", "a: 1\r\n", "---\r\n", "body", ""},
		{"---\n---\n", "---\n", "", "---\n", "", ""},
		{"---\na: 1\n---", "---\n", "a: 1\n", "---", "", ""},
		{"---\na: ---\n--- \n", "", "", "", "", "front matter is not closed by a --- line"},
		{"---", "", "", "", "", "no front matter: the file must start with a --- line"},
		{"----\n---\n", "", "", "", "", "no front matter: the file must start with a --- line"},
		{"\n---\n---\n", "", "", "", "", "no front matter: the file must start with a --- line"},
	}
	for _, tc := range tests {
		open, front, close, body, err := splitFrontMatter([]byte(tc.in))
		if tc.err != "" {
			if err == nil || err.Error() != tc.err {
				t.Errorf("%q: err = %v, want %q", tc.in, err, tc.err)
			}
			continue
		}
		if err != nil || string(open) != tc.open || string(front) != tc.front || string(close) != tc.close || string(body) != tc.body {
			t.Errorf("%q = %q %q %q %q %v", tc.in, open, front, close, body, err)
		}
	}
}

func TestValidID(t *testing.T) {
	for _, ok := range []string{"1", "LOC-12", "a.b_c-d", "A", "x..y"} {
		if err := validID(ok); err != nil {
			t.Errorf("validID(%q) = %v", ok, err)
		}
	}
	for _, bad := range []string{"", ".", "..", "../x", "x/y", "/x", "x\x00", ".x", "_x", "-x", "a b", "ü"} {
		if validID(bad) == nil {
			t.Errorf("validID(%q) accepted", bad)
		}
	}
}
