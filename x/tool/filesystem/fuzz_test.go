package filesystem_test

import (
	"io/fs"
	"path/filepath"
	"strings"
	"testing"
	"unicode"

	"github.com/lodeworks/lode/tool"
	"github.com/lodeworks/lode/x/tool/filesystem"
)

// FuzzPath feeds arbitrary paths (and glob patterns) to Clean and to every
// tool on a root with links leading out, and checks that a cleaned path is
// local and valid, that a refused path is refused by every tool with the
// same message, and that nothing outside the root is ever read or changed.
func FuzzPath(f *testing.F) {
	for _, s := range []string{
		"hello.txt", ".", "..", "../secret.txt", "/etc/passwd", "sub/../../secret.txt", "link_out",
		"link_out_abs", "link_out_dir/file.txt", "link_dir_in/../link_out", "loop1", "self/x", "a\x00b",
		"\xff", "sub//deep/./x.go", "fifo", "dangling", "new/dir/file", strings.Repeat("a", 256),
		strings.Repeat("a/", 2049), "C:\\windows", "~/x", "\u202e", "link_out/..", "sub/deep/../../..",
	} {
		f.Add(s, "**/*")
	}
	// Writes go to a root of their own, so the trees the read tools walk
	// stay the same size however long the fuzzer runs.
	tmp, root := fixture(f)
	fsys, err := filesystem.New(root, filesystem.ReadOnly())
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { fsys.Close() })
	wtmp, wroot := fixture(f)
	wfs, err := filesystem.New(wroot)
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { wfs.Close() })
	f.Fuzz(func(t *testing.T, p, pattern string) {
		c, cerr := filesystem.Clean(p)
		if cerr == nil {
			if !fs.ValidPath(c) || !filepath.IsLocal(c) || len(c) > filesystem.MaxPathBytes || strings.ContainsFunc(c, unicode.IsControl) {
				t.Fatalf("Clean(%q) = %q, which is not a valid local path", p, c)
			}
			if again, err := filesystem.Clean(c); err != nil || again != c {
				t.Fatalf("Clean is not idempotent: %q -> %q -> %q, %v", p, c, again, err)
			}
		}
		calls := []struct {
			fs   *filesystem.FS
			name string
			args map[string]any
		}{
			{fsys, "read", map[string]any{"path": p}},
			{fsys, "read", map[string]any{"path": p, "offset": 2, "line_numbers": true}},
			{fsys, "stat", map[string]any{"path": p}},
			{fsys, "list", map[string]any{"path": p, "depth": 3}},
			{fsys, "glob", map[string]any{"path": p, "pattern": pattern}},
			{fsys, "search", map[string]any{"path": p, "query": "T"}},
			{wfs, "write", map[string]any{"path": p, "content": "fuzz"}},
			{wfs, "edit", map[string]any{"path": p, "old_string": secret, "new_string": "fuzz"}},
			{wfs, "read", map[string]any{"path": p}},
		}
		for _, cl := range calls {
			res := call(t, cl.fs, cl.name, cl.args)
			if strings.Contains(res.Content, secret) {
				t.Fatalf("%s(%q) revealed the secret: %q", cl.name, p, res.Content)
			}
			if strings.Contains(res.Content, tmp) || strings.Contains(res.Content, wtmp) {
				t.Fatalf("%s(%q) revealed the host path: %q", cl.name, p, res.Content)
			}
			// list, glob and search take an empty path for the root.
			optional := p == "" && (cl.name == "list" || cl.name == "glob" || cl.name == "search")
			if cerr != nil && !optional && (!res.IsError || res.Content != cerr.Error()) {
				t.Fatalf("%s(%q) = %q, want the refusal %q", cl.name, p, res.Content, cerr.Error())
			}
			if v, ok := res.Value.(filesystem.ListResult); ok {
				for _, e := range v.Entries {
					name, _, _ := strings.Cut(e, " (")
					name = strings.TrimSuffix(name, "/")
					if name, _, _ = strings.Cut(name, ":"); !filepath.IsLocal(name) {
						t.Fatalf("%s(%q) listed %q, not a local path", cl.name, p, e)
					}
				}
			}
			if _, ok := res.Value.(*tool.Result); ok {
				t.Fatal("nested result")
			}
		}
		checkUnchanged(t, tmp)
		checkUnchanged(t, wtmp)
	})
}
