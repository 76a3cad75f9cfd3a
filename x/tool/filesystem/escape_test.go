package filesystem_test

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestEscapes tries every way out of the root through every tool and
// checks the exact refusal, and that nothing outside was read or changed.
func TestEscapes(t *testing.T) {
	tmp, root := fixture(t)
	f := newFS(t, root)
	const (
		outside = `leads outside the root (through a symbolic link or ".."); only paths inside the root can be used`
		lexical = `: the path leads outside the root`
		abs     = `: absolute paths are not allowed; paths are relative to the root`
		loop    = `: too many levels of symbolic links (a symbolic link loop?)`
	)
	long256 := strings.Repeat("n", 256)
	long4097 := strings.Repeat("d/", 2048) + "x"
	tests := []struct {
		path string
		want string // the error every tool gives
	}{
		{"..", `path ".."` + lexical},
		{"../secret.txt", `path "../secret.txt"` + lexical},
		{"../root/../secret.txt", `path "../root/../secret.txt"` + lexical},
		{"sub/../../secret.txt", `path "sub/../../secret.txt"` + lexical},
		{"sub/deep/../../../outside/file.txt", `path "sub/deep/../../../outside/file.txt"` + lexical},
		{"/etc/passwd", `path "/etc/passwd"` + abs},
		{"/", `path "/"` + abs},
		{filepath.Join(tmp, "secret.txt"), `path "` + filepath.Join(tmp, "secret.txt") + `"` + abs},
		{"//secret.txt", `path "//secret.txt"` + abs},
		{"link_out", `"link_out" ` + outside},
		{"link_out_abs", `"link_out_abs" ` + outside},
		{"link_out_dir/file.txt", `"link_out_dir/file.txt" ` + outside},
		{"link_dir_in/../link_out", `"link_out" ` + outside}, // lexically cleaned first
		{"loop1", `"loop1"` + loop},
		{"self/x", `"self/x"` + loop},
		{"a\x00b", `path "a\x00b": the path contains the control character U+0000 at byte 1`},
		{"hello.txt\x00.png", `path "hello.txt\x00.png": the path contains the control character U+0000 at byte 9`},
		{"a\nb", `path "a\nb": the path contains the control character U+000A at byte 1`},
		{"a\x1b[2J", `path "a\x1b[2J": the path contains the control character U+001B at byte 1`},
		{"a\u0085b", `path "a\u0085b": the path contains the control character U+0085 at byte 1`},
		{"\xff\xfe", `path "\xff\xfe": the path is not valid UTF-8`},
		{long256, `path "` + long256[:120] + `"… (256 bytes): the name "` + long256[:120] + `"… (256 bytes) is 256 bytes long; the limit is 255`},
		{long4097, `path "` + long4097[:120] + `"… (4097 bytes): the path is 4097 bytes long; the limit is 4096`},
	}
	tools := []struct {
		name string
		args func(p string) map[string]any
	}{
		{"read", func(p string) map[string]any { return map[string]any{"path": p} }},
		{"stat", func(p string) map[string]any { return map[string]any{"path": p} }},
		{"list", func(p string) map[string]any { return map[string]any{"path": p} }},
		{"glob", func(p string) map[string]any { return map[string]any{"path": p, "pattern": "**"} }},
		{"search", func(p string) map[string]any { return map[string]any{"path": p, "query": "SECRET"} }},
		{"write", func(p string) map[string]any { return map[string]any{"path": p, "content": "pwned"} }},
		{"edit", func(p string) map[string]any {
			return map[string]any{"path": p, "old_string": secret, "new_string": "pwned"}
		}},
	}
	for _, tc := range tests {
		for _, tl := range tools {
			if tl.name == "stat" && statDescribesLink[tc.path] {
				continue // stat describes the link itself; see TestStat
			}
			res := call(t, f, tl.name, tl.args(tc.path))
			if !res.IsError || res.Content != tc.want {
				t.Errorf("%s(%.40q):\n got %v %q\nwant error %q", tl.name, tc.path, res.IsError, res.Content, tc.want)
			}
		}
	}
	checkUnchanged(t, tmp)
}

// statDescribesLink lists the paths that name a link: stat reports on the
// link rather than following it.
var statDescribesLink = map[string]bool{"link_out": true, "link_out_abs": true, "loop1": true, "link_dir_in/../link_out": true}

// TestSymlinkInsideIsFollowed: a link that stays inside the root works
// like its target.
func TestSymlinkInsideIsFollowed(t *testing.T) {
	_, root := fixture(t)
	f := newFS(t, root)
	if res := call(t, f, "read", map[string]any{"path": "link_in"}); res.IsError || res.Content != "line one\nline two\nline three\n" {
		t.Errorf("read link_in: %+v", res)
	}
	if res := call(t, f, "list", map[string]any{"path": "link_dir_in"}); res.IsError || res.Content != "link_dir_in/deep/\nlink_dir_in/notes.md (18 bytes)" {
		t.Errorf("list link_dir_in: %q", res.Content)
	}
}

// TestWriteThroughLinks: writes never follow a link out, nor create
// anything outside, whatever the path.
func TestWriteThroughLinks(t *testing.T) {
	tmp, root := fixture(t)
	f := newFS(t, root)
	for _, p := range []string{"link_out", "link_out_abs", "link_out_dir/new.txt", "link_out_dir/sub/new.txt", "loop1", "self/new.txt"} {
		if res := call(t, f, "write", map[string]any{"path": p, "content": "pwned"}); !res.IsError {
			t.Errorf("write %s succeeded: %s", p, res.Content)
		}
	}
	checkUnchanged(t, tmp)
	// A dangling link inside the root is written through to its target,
	// which is inside the root too.
	if res := call(t, f, "write", map[string]any{"path": "dangling", "content": "made"}); res.IsError {
		t.Fatalf("write dangling: %s", res.Content)
	}
	if res := call(t, f, "read", map[string]any{"path": "missing.txt"}); res.Content != "made" {
		t.Errorf("missing.txt: %q", res.Content)
	}
}
