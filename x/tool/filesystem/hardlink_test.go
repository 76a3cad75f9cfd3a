package filesystem_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/lodeworks/lode/x/tool/filesystem"
)

// linkedFixture adds to fixture a hard link inside the root to the secret
// outside it, and a symbolic link inside the root to that hard link:
//
//	<tmp>/root/hard.txt   the same file as <tmp>/secret.txt
//	<tmp>/root/alias.txt  -> hard.txt
func linkedFixture(t *testing.T) (tmp, root string) {
	t.Helper()
	tmp, root = fixture(t)
	must(t, os.Link(filepath.Join(tmp, "secret.txt"), filepath.Join(root, "hard.txt")))
	must(t, os.Symlink("hard.txt", filepath.Join(root, "alias.txt")))
	return tmp, root
}

// Every tool that reads or writes file contents refuses a file with more
// than one hard link, saying why, and leaves the file as it was.
func TestHardLinksRefused(t *testing.T) {
	tmp, root := linkedFixture(t)
	f := newFS(t, root)
	refused := func(p string) string {
		return `"` + p + `" has 2 hard links, so it is refused: the same file may also be outside the root. Only files with a single link can be read or written here`
	}
	tests := []struct {
		tool string
		args map[string]any
		want string
	}{
		{"read", map[string]any{"path": "hard.txt"}, refused("hard.txt")},
		{"read", map[string]any{"path": "hard.txt", "offset": 1, "limit": 1}, refused("hard.txt")},
		{"read", map[string]any{"path": "hard.txt", "line_numbers": true}, refused("hard.txt")},
		{"read", map[string]any{"path": "alias.txt"}, refused("alias.txt")},
		{"write", map[string]any{"path": "hard.txt", "content": "overwritten"}, refused("hard.txt")},
		{"write", map[string]any{"path": "alias.txt", "content": ""}, refused("alias.txt")},
		{"edit", map[string]any{"path": "hard.txt", "old_string": "TOP", "new_string": "NOT"}, refused("hard.txt")},
		{"search", map[string]any{"query": "SECRET", "path": "hard.txt"}, refused("hard.txt")},
		{"search", map[string]any{"query": "SECRET", "path": "alias.txt"}, refused("alias.txt")},
	}
	for _, tc := range tests {
		res := call(t, f, tc.tool, tc.args)
		if !res.IsError || res.Content != tc.want {
			t.Errorf("%s %v:\n got %v %q\nwant %q", tc.tool, tc.args, res.IsError, res.Content, tc.want)
		}
	}
	// A search of a directory skips the file and says so.
	res := call(t, f, "search", map[string]any{"query": "SECRET"})
	want := "(no matches for \"SECRET\" in \".\")\n[skipped 1 binary files]\n[skipped 1 files with several hard links: the same file may also be outside the root]"
	if res.IsError || res.Content != want {
		t.Errorf("search of the root:\n got %v %q\nwant %q", res.IsError, res.Content, want)
	}
	checkUnchanged(t, tmp)
	// A new file, and a file with one link, are written as before.
	for _, p := range []string{"fresh.txt", "hello.txt"} {
		if res := call(t, f, "write", map[string]any{"path": p, "content": "ok"}); res.IsError {
			t.Errorf("write %s: %q", p, res.Content)
		}
	}
}

// AllowHardLinks, or allow_hard_links in the pack options, lets every tool
// use hard-linked files.
func TestHardLinksAllowed(t *testing.T) {
	fromOptions := func(t *testing.T, root string) *filesystem.FS {
		f, err := filesystem.FromOptions(map[string]any{"root": root, "allow_hard_links": true})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { f.Close() })
		return f
	}
	builds := map[string]func(*testing.T, string) *filesystem.FS{
		"AllowHardLinks":   func(t *testing.T, root string) *filesystem.FS { return newFS(t, root, filesystem.AllowHardLinks()) },
		"allow_hard_links": fromOptions,
	}
	for label, build := range builds {
		t.Run(label, func(t *testing.T) {
			tmp, root := linkedFixture(t)
			f := build(t, root)
			steps := []struct {
				tool string
				args map[string]any
				want string
			}{
				{"read", map[string]any{"path": "hard.txt"}, secret},
				{"read", map[string]any{"path": "alias.txt", "limit": 1}, secret},
				{"search", map[string]any{"query": "SECRET", "glob": "hard.txt"}, "hard.txt:1: " + secret},
				{"edit", map[string]any{"path": "hard.txt", "old_string": "TOP", "new_string": "NOT"}, "replaced 1 occurrence in hard.txt"},
				{"read", map[string]any{"path": "hard.txt"}, "NOTSECRET"},
				{"write", map[string]any{"path": "hard.txt", "content": "rewritten"}, "replaced the content of hard.txt (9 bytes)"},
			}
			for _, s := range steps {
				res := call(t, f, s.tool, s.args)
				if res.IsError || res.Content != s.want {
					t.Errorf("%s %v:\n got %v %q\nwant %q", s.tool, s.args, res.IsError, res.Content, s.want)
				}
			}
			if b, err := os.ReadFile(filepath.Join(tmp, "secret.txt")); err != nil || string(b) != "rewritten" {
				t.Errorf("the linked file holds %q, %v", b, err)
			}
		})
	}
	f := newFS(t, t.TempDir())
	if err := f.ValidateOptions(map[string]any{"root": ".", "allow_hard_links": "yes"}); err == nil ||
		err.Error() != "filesystem: option allow_hard_links must be true or false, got yes" {
		t.Errorf("allow_hard_links: yes: %v", err)
	}
}
