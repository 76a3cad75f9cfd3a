package filesystem_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lodeworks/lode/tool"
	"github.com/lodeworks/lode/x/tool/filesystem"
)

func TestNew(t *testing.T) {
	if _, err := filesystem.New(""); !errors.Is(err, filesystem.ErrNoRoot) {
		t.Errorf("empty root: %v", err)
	}
	dir := t.TempDir()
	if _, err := filesystem.New(filepath.Join(dir, "missing")); err == nil || !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing root: %v", err)
	}
	file := filepath.Join(dir, "f")
	must(t, os.WriteFile(file, nil, 0o644))
	if _, err := filesystem.New(file); err == nil {
		t.Error("a file as root was accepted")
	}
	if _, err := filesystem.New(dir, filesystem.WithName("bad name")); err == nil {
		t.Error("an invalid name was accepted")
	}
}

func toolNames(t *testing.T, f *filesystem.FS) string {
	tools, err := f.Tools(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tl := range tools {
		names = append(names, tl.Name)
	}
	return strings.Join(names, " ")
}

func TestToolsAndReadOnly(t *testing.T) {
	_, root := fixture(t)
	if got := toolNames(t, newFS(t, root)); got != "edit glob list read search stat write" {
		t.Errorf("tools: %s", got)
	}
	ro := newFS(t, root, filesystem.ReadOnly())
	if got := toolNames(t, ro); got != "glob list read search stat" {
		t.Errorf("read-only tools: %s", got)
	}
	for _, name := range []string{"write", "edit"} {
		res := call(t, ro, name, map[string]any{"path": "hello.txt", "content": "x", "old_string": "line", "new_string": "x"})
		if !res.IsError || res.Content != name+" is not available: this filesystem is read-only" {
			t.Errorf("read-only %s: %+v", name, res)
		}
	}
	if b, _ := os.ReadFile(filepath.Join(root, "hello.txt")); string(b) != "line one\nline two\nline three\n" {
		t.Errorf("read-only filesystem changed a file: %q", b)
	}
	res := call(t, ro, "delete", map[string]any{"path": "hello.txt"})
	if !res.IsError || res.Content != `the filesystem source has no tool "delete"; its tools are glob, list, read, search, stat` {
		t.Errorf("unknown tool: %q", res.Content)
	}
}

func TestToolPrefixFlat(t *testing.T) {
	_, root := fixture(t)
	f, err := filesystem.FromOptions(map[string]any{"root": root, "read_only": true, "tool_prefix": "fs_"})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if got := toolNames(t, f); got != "fs_glob fs_list fs_read fs_search fs_stat" {
		t.Errorf("prefixed tools: %s", got)
	}
	if res := call(t, f, "fs_read", map[string]any{"path": "hello.txt", "limit": 1}); res.IsError || !strings.HasPrefix(res.Content, "line one\n") {
		t.Errorf("fs_read: %+v", res)
	}
	if res := call(t, f, "fs_write", map[string]any{"path": "x", "content": "y"}); res.Content != "fs_write is not available: this filesystem is read-only" {
		t.Errorf("fs_write: %+v", res)
	}
	if res := call(t, f, "read", map[string]any{"path": "hello.txt"}); !res.IsError || res.Content != `the filesystem source has no tool "read"; its tools are fs_glob, fs_list, fs_read, fs_search, fs_stat` {
		t.Errorf("unprefixed read: %+v", res)
	}
}

func TestMountAndValidate(t *testing.T) {
	_, root := fixture(t)
	reg := tool.NewRegistry()
	if err := reg.Mount(context.Background(), newFS(t, root, filesystem.ReadOnly())); err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tl := range reg.Tools() {
		names = append(names, tl.Name)
	}
	if got := strings.Join(names, " "); got != "filesystem__glob filesystem__list filesystem__read filesystem__search filesystem__stat" {
		t.Errorf("mounted: %s", got)
	}
	b, _ := reg.Lookup("filesystem__read")
	out, err := b.Call(context.Background(), tool.NoSandbox(), `{"path":"hello.txt","offset":2,"limit":1}`)
	if err != nil {
		t.Fatal(err)
	}
	if res := out.(*tool.Result); res.Content != "line two\n[more lines follow; continue with offset=3]" {
		t.Errorf("read through the registry: %q", res.Content)
	}
	for _, args := range []string{`{}`, `{"path":3}`, `{"path":"a","offset":0}`, `{"path":"a","limit":-1}`, `{"path":"a","follow":true}`} {
		if _, err := b.Call(context.Background(), tool.NoSandbox(), args); !errors.As(err, new(*tool.ArgumentsError)) {
			t.Errorf("read %s: %v, want an ArgumentsError", args, err)
		}
	}
	l, _ := reg.Lookup("filesystem__list")
	if _, err := l.Call(context.Background(), tool.NoSandbox(), `{"depth":11}`); !errors.As(err, new(*tool.ArgumentsError)) {
		t.Errorf("list depth 11: %v", err)
	}
}

// TestBadArgumentsDirect covers Call used without a registry.
func TestBadArgumentsDirect(t *testing.T) {
	_, root := fixture(t)
	f := newFS(t, root)
	tests := []struct {
		tool string
		args map[string]any
		want string
	}{
		{"read", map[string]any{}, `invalid arguments for read: "path" is required`},
		{"read", map[string]any{"path": 1.0}, `invalid arguments for read: "path" must be a string`},
		{"read", map[string]any{"path": "a", "offset": 1.5}, `invalid arguments for read: "offset" must be an integer from 1 to 2147483647, got 1.5`},
		{"read", map[string]any{"path": "a", "line_numbers": "yes"}, `invalid arguments for read: "line_numbers" must be true or false`},
		{"read", map[string]any{"path": "a", "b": 1, "a": 2}, `invalid arguments for read: read takes no argument "a"; its arguments are path, offset, limit, line_numbers`},
		{"write", map[string]any{"path": "a"}, `invalid arguments for write: "content" is required`},
		{"list", map[string]any{"depth": 11.0}, `invalid arguments for list: "depth" must be an integer from 1 to 10, got 11`},
		{"glob", map[string]any{}, `invalid arguments for glob: "pattern" is required`},
	}
	for _, tc := range tests {
		res := call(t, f, tc.tool, tc.args)
		if !res.IsError || res.Content != tc.want {
			t.Errorf("%s(%v) = %q, want %q", tc.tool, tc.args, res.Content, tc.want)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := f.Call(ctx, "read", map[string]any{"path": "hello.txt"}); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: %v", err)
	}
}

func TestRead(t *testing.T) {
	_, root := fixture(t)
	lines := make([]string, 10)
	for i := range lines {
		lines[i] = fmt.Sprintf("row %d", i+1)
	}
	must(t, os.WriteFile(filepath.Join(root, "ten.txt"), []byte(strings.Join(lines, "\n")), 0o644)) // no final newline
	must(t, os.WriteFile(filepath.Join(root, "empty.txt"), nil, 0o644))
	f := newFS(t, root)
	tests := []struct {
		args    map[string]any
		want    string
		isError bool
	}{
		{map[string]any{"path": "ten.txt"}, strings.Join(lines, "\n"), false},
		{map[string]any{"path": "./sub/../ten.txt", "offset": 9}, "row 9\nrow 10", false},
		{map[string]any{"path": "ten.txt", "limit": 2}, "row 1\nrow 2\n[more lines follow; continue with offset=3]", false},
		{map[string]any{"path": "ten.txt", "offset": 3, "limit": 2, "line_numbers": true}, "     3\trow 3\n     4\trow 4\n[more lines follow; continue with offset=5]", false},
		{map[string]any{"path": "ten.txt", "offset": 10, "limit": 5}, "row 10", false},
		{map[string]any{"path": "ten.txt", "offset": 10, "limit": 1}, "row 10", false},
		{map[string]any{"path": "hello.txt", "line_numbers": true}, "     1\tline one\n     2\tline two\n     3\tline three\n", false},
		{map[string]any{"path": "ten.txt", "offset": 11}, `offset 11 is past the end of "ten.txt", which has 10 lines`, true},
		{map[string]any{"path": "hello.txt", "offset": 5}, `offset 5 is past the end of "hello.txt", which has 3 lines`, true},
		{map[string]any{"path": "empty.txt"}, "", false},
		{map[string]any{"path": "bin.dat"}, `"bin.dat" looks like a binary file (11 bytes, containing NUL bytes); read handles text files only`, true},
		{map[string]any{"path": "bin.dat", "offset": 2}, `"bin.dat" looks like a binary file (11 bytes, containing NUL bytes); read handles text files only`, true},
		{map[string]any{"path": "sub"}, `"sub" is a directory; use list to see what it holds`, true},
		{map[string]any{"path": "fifo"}, `"fifo" is not a regular file (named pipe)`, true},
		{map[string]any{"path": "nope.txt"}, `"nope.txt" does not exist`, true},
		{map[string]any{"path": "hello.txt/x"}, `"hello.txt/x": a part of the path is not a directory`, true},
	}
	for _, tc := range tests {
		res := call(t, f, "read", tc.args)
		if res.Content != tc.want || res.IsError != tc.isError {
			t.Errorf("read %v:\n got %v %q\nwant %v %q", tc.args, res.IsError, res.Content, tc.isError, tc.want)
		}
	}
	res := call(t, f, "read", map[string]any{"path": "ten.txt", "offset": 2, "limit": 3})
	if v := res.Value.(filesystem.ReadResult); v != (filesystem.ReadResult{Path: "ten.txt", Offset: 2, Bytes: 18, NextOffset: 5}) {
		t.Errorf("value: %+v", v)
	}
}

func TestReadLimits(t *testing.T) {
	_, root := fixture(t)
	var sb strings.Builder
	for i := range 100 {
		fmt.Fprintf(&sb, "line %03d\n", i+1) // 9 bytes each
	}
	must(t, os.WriteFile(filepath.Join(root, "big.txt"), []byte(sb.String()), 0o644))
	must(t, os.WriteFile(filepath.Join(root, "wide.txt"), []byte(strings.Repeat("é", 40)+"\nnext\n"), 0o644))
	f := newFS(t, root, filesystem.WithMaxReadBytes(30))
	tests := []struct {
		args map[string]any
		want string
	}{
		// The whole file is beyond the limit: whole lines up to it, and
		// where to go on.
		{map[string]any{"path": "big.txt"}, "line 001\nline 002\nline 003\n[stopped at the 30-byte read limit; continue with offset=4]"},
		{map[string]any{"path": "big.txt", "offset": 98}, "line 098\nline 099\nline 100\n"},
		// A line longer than the limit is cut on a character boundary.
		{map[string]any{"path": "wide.txt"}, strings.Repeat("é", 15) + "\n[line 1 is longer than the 30-byte read limit and was cut; continue with offset=2]"},
		{map[string]any{"path": "wide.txt", "offset": 2}, "next\n"},
	}
	for _, tc := range tests {
		res := call(t, f, "read", tc.args)
		if res.IsError || res.Content != tc.want {
			t.Errorf("read %v:\n got %v %q\nwant %q", tc.args, res.IsError, res.Content, tc.want)
		}
	}
}

// TestReadLongLines reads lines longer than the reader's buffer.
func TestReadLongLines(t *testing.T) {
	_, root := fixture(t)
	long := strings.Repeat("x", 200_000)
	must(t, os.WriteFile(filepath.Join(root, "long.txt"), []byte("a\n"+long+"\nb\n"), 0o644))
	f := newFS(t, root)
	res := call(t, f, "read", map[string]any{"path": "long.txt", "offset": 2, "limit": 1})
	if res.IsError || res.Content != long+"\n[more lines follow; continue with offset=3]" {
		t.Errorf("long line: error=%v len=%d", res.IsError, len(res.Content))
	}
	res = call(t, f, "read", map[string]any{"path": "long.txt", "offset": 3, "line_numbers": true})
	if res.Content != "     3\tb\n" {
		t.Errorf("after the long line: %q", res.Content)
	}
}

func TestWrite(t *testing.T) {
	tmp, root := fixture(t)
	f := newFS(t, root, filesystem.WithMaxWriteBytes(10))
	tests := []struct {
		args    map[string]any
		want    string
		isError bool
	}{
		{map[string]any{"path": "new/dir/a.txt", "content": "hi"}, "created new/dir/a.txt (2 bytes)", false},
		{map[string]any{"path": "hello.txt", "content": "replaced"}, "replaced the content of hello.txt (8 bytes)", false},
		{map[string]any{"path": "blank.txt", "content": ""}, "created blank.txt (0 bytes)", false},
		{map[string]any{"path": "big.txt", "content": "0123456789a"}, "the content is 11 bytes; write takes at most 10", true},
		{map[string]any{"path": "sub", "content": "x"}, `"sub" is a directory; give the path of a file`, true},
		{map[string]any{"path": ".", "content": "x"}, `"." is the root directory; give the path of a file`, true},
		{map[string]any{"path": "fifo", "content": "x"}, `"fifo" is not a regular file (named pipe); write replaces regular files only`, true},
		{map[string]any{"path": "hello.txt/x", "content": "x"}, `"hello.txt/x": a part of the path is not a directory`, true},
		{map[string]any{"path": "bin.dat/a/b", "content": "x"}, `"bin.dat/a/b": a part of the path is not a directory`, true},
	}
	for _, tc := range tests {
		res := call(t, f, "write", tc.args)
		if res.Content != tc.want || res.IsError != tc.isError {
			t.Errorf("write %v:\n got %v %q\nwant %v %q", tc.args, res.IsError, res.Content, tc.isError, tc.want)
		}
	}
	for p, want := range map[string]string{"new/dir/a.txt": "hi", "hello.txt": "replaced", "blank.txt": ""} {
		if b, err := os.ReadFile(filepath.Join(root, p)); err != nil || string(b) != want {
			t.Errorf("%s = %q, %v; want %q", p, b, err, want)
		}
	}
	if _, err := os.Stat(filepath.Join(root, "big.txt")); !os.IsNotExist(err) {
		t.Errorf("a refused write left a file: %v", err)
	}
	checkUnchanged(t, tmp)
}

func TestEdit(t *testing.T) {
	_, root := fixture(t)
	must(t, os.WriteFile(filepath.Join(root, "code.go"), []byte("a := 1\nb := 1\nc := 2\n"), 0o600))
	f := newFS(t, root)
	tests := []struct {
		args    map[string]any
		want    string
		isError bool
	}{
		{map[string]any{"path": "code.go", "old_string": ":= 1", "new_string": ":= 9"}, `old_string occurs 2 times in "code.go"; include more of the surrounding text to make it unique, or set replace_all to replace every occurrence`, true},
		{map[string]any{"path": "code.go", "old_string": "d := 4", "new_string": "x"}, `old_string was not found in "code.go"; it must match the file exactly, whitespace and indentation included (read the file to copy it)`, true},
		{map[string]any{"path": "code.go", "old_string": "c := 2", "new_string": "c := 2"}, "old_string and new_string are the same; there is nothing to change", true},
		{map[string]any{"path": "code.go", "old_string": "", "new_string": "x"}, "old_string is empty; give the exact text to replace", true},
		{map[string]any{"path": "code.go", "old_string": "b := 1", "new_string": "b := 5"}, "replaced 1 occurrence in code.go", false},
		{map[string]any{"path": "code.go", "old_string": "2", "new_string": "3", "replace_all": true}, "replaced 1 occurrence in code.go", false},
		{map[string]any{"path": "code.go", "old_string": " := ", "new_string": "=", "replace_all": true}, "replaced 3 occurrences in code.go", false},
		{map[string]any{"path": "bin.dat", "old_string": "ab", "new_string": "x"}, `"bin.dat" looks like a binary file (11 bytes, containing NUL bytes); read handles text files only`, true},
		{map[string]any{"path": "missing.go", "old_string": "a", "new_string": "b"}, `"missing.go" does not exist`, true},
		{map[string]any{"path": "sub", "old_string": "a", "new_string": "b"}, `"sub" is a directory; use list to see what it holds`, true},
	}
	for _, tc := range tests {
		res := call(t, f, "edit", tc.args)
		if res.Content != tc.want || res.IsError != tc.isError {
			t.Errorf("edit %v:\n got %v %q\nwant %v %q", tc.args, res.IsError, res.Content, tc.isError, tc.want)
		}
	}
	b, _ := os.ReadFile(filepath.Join(root, "code.go"))
	if string(b) != "a=1\nb=5\nc=3\n" {
		t.Errorf("code.go = %q", b)
	}
	if info, _ := os.Stat(filepath.Join(root, "code.go")); info.Mode().Perm() != 0o600 {
		t.Errorf("edit changed the mode to %v", info.Mode())
	}
	small := newFS(t, root, filesystem.WithMaxReadBytes(5), filesystem.WithMaxWriteBytes(12))
	if res := call(t, small, "edit", map[string]any{"path": "hello.txt", "old_string": "one", "new_string": "1"}); res.Content != `"hello.txt" is 29 bytes; edit handles files up to 5 bytes` {
		t.Errorf("edit of a file beyond the read limit: %q", res.Content)
	}
	small = newFS(t, root, filesystem.WithMaxWriteBytes(12))
	if res := call(t, small, "edit", map[string]any{"path": "code.go", "old_string": "a=1", "new_string": "a=1000"}); res.Content != "the edited file would be 15 bytes; the write limit is 12" {
		t.Errorf("edit beyond the write limit: %q", res.Content)
	}
}

func TestList(t *testing.T) {
	_, root := fixture(t)
	f := newFS(t, root)
	tests := []struct {
		args map[string]any
		want string
	}{
		{map[string]any{}, "bin.dat (11 bytes)\ndangling (symbolic link)\nempty/\nfifo (named pipe)\nhello.txt (29 bytes)\nlink_dir_in (symbolic link)\nlink_in (symbolic link)\nlink_out (symbolic link)\nlink_out_abs (symbolic link)\nlink_out_dir (symbolic link)\nloop1 (symbolic link)\nloop2 (symbolic link)\nself (symbolic link)\nsub/"},
		{map[string]any{"path": "sub", "depth": 2}, "sub/deep/\nsub/deep/x.go (27 bytes)\nsub/notes.md (18 bytes)"},
		{map[string]any{"path": "sub", "depth": 1}, "sub/deep/\nsub/notes.md (18 bytes)"},
		{map[string]any{"path": "empty"}, "(the directory is empty)"},
	}
	for _, tc := range tests {
		res := call(t, f, "list", tc.args)
		if res.IsError || res.Content != tc.want {
			t.Errorf("list %v:\n got %v %q\nwant %q", tc.args, res.IsError, res.Content, tc.want)
		}
	}
	// Deep listing never follows links out of or around the root.
	res := call(t, f, "list", map[string]any{"depth": 10})
	if strings.Contains(res.Content, "file.txt") || !strings.Contains(res.Content, "sub/deep/x.go (27 bytes)") {
		t.Errorf("deep list: %q", res.Content)
	}
	capped := newFS(t, root, filesystem.WithMaxResults(2))
	res = call(t, capped, "list", map[string]any{})
	if res.Content != "bin.dat (11 bytes)\ndangling (symbolic link)\n[listing stopped at 2 entries; list a subdirectory or lower the depth]" {
		t.Errorf("capped list: %q", res.Content)
	}
	if v := res.Value.(filesystem.ListResult); !v.More || len(v.Entries) != 2 {
		t.Errorf("capped list value: %+v", v)
	}
	visits := newFS(t, root, filesystem.WithMaxVisit(3))
	res = call(t, visits, "list", map[string]any{"depth": 3})
	if res.Content != "bin.dat (11 bytes)\ndangling (symbolic link)\nempty/\n[stopped after visiting 3 entries; narrow the path]" {
		t.Errorf("visit-limited list: %q", res.Content)
	}
}

func TestGlob(t *testing.T) {
	_, root := fixture(t)
	must(t, os.WriteFile(filepath.Join(root, "sub", "deep", "y.go"), []byte("package x\n"), 0o644))
	f := newFS(t, root)
	tests := []struct {
		args    map[string]any
		want    string
		isError bool
	}{
		{map[string]any{"pattern": "*.txt"}, "hello.txt", false},
		{map[string]any{"pattern": "**/*.go"}, "sub/deep/x.go\nsub/deep/y.go", false},
		{map[string]any{"pattern": "**/x.go"}, "sub/deep/x.go", false},
		{map[string]any{"pattern": "sub/**"}, "sub/deep/\nsub/deep/x.go\nsub/deep/y.go\nsub/notes.md", false},
		{map[string]any{"pattern": "**/deep"}, "sub/deep/", false},
		{map[string]any{"pattern": "*/*/[xz].go"}, "sub/deep/x.go", false},
		{map[string]any{"pattern": "deep/*.go", "path": "sub"}, "sub/deep/x.go\nsub/deep/y.go", false},
		{map[string]any{"pattern": "./**/./notes.md"}, "sub/notes.md", false},
		{map[string]any{"pattern": "**/file.txt"}, `(nothing matches "**/file.txt" under ".")`, false},
		{map[string]any{"pattern": "["}, `invalid pattern "[": "[" is not a valid glob: check its [ ] brackets and \ escapes`, true},
		{map[string]any{"pattern": "../*"}, `invalid pattern "../*": ".." is not allowed in a pattern; set path instead`, true},
		{map[string]any{"pattern": "/etc/*"}, `invalid pattern "/etc/*": the pattern is absolute; patterns are relative to path`, true},
		{map[string]any{"pattern": "a**b"}, `invalid pattern "a**b": "a**b": ** must be a whole path element (as in **/*.go)`, true},
		{map[string]any{"pattern": "x\x00"}, `invalid pattern "x\x00": the pattern contains a control character or invalid UTF-8`, true},
		{map[string]any{"pattern": ""}, `invalid pattern "": the pattern is empty`, true},
		{map[string]any{"pattern": "./"}, `invalid pattern "./": the pattern matches nothing but the directory itself`, true},
		{map[string]any{"pattern": "*", "path": "hello.txt"}, `"hello.txt" is a file, not a directory; glob takes a directory`, true},
	}
	for _, tc := range tests {
		res := call(t, f, "glob", tc.args)
		if res.Content != tc.want || res.IsError != tc.isError {
			t.Errorf("glob %v:\n got %v %q\nwant %v %q", tc.args, res.IsError, res.Content, tc.isError, tc.want)
		}
	}
	capped := newFS(t, root, filesystem.WithMaxResults(1))
	if res := call(t, capped, "glob", map[string]any{"pattern": "**/*.go"}); res.Content != "sub/deep/x.go\n[results stop at 1 matches; narrow the pattern or the path]" {
		t.Errorf("capped glob: %q", res.Content)
	}
}

func TestSearch(t *testing.T) {
	_, root := fixture(t)
	must(t, os.WriteFile(filepath.Join(root, "wide.txt"), []byte(strings.Repeat("a", 500)+"NEEDLE"+strings.Repeat("b", 500)+"\n"), 0o644))
	f := newFS(t, root)
	tests := []struct {
		args    map[string]any
		want    string
		isError bool
	}{
		{map[string]any{"query": "Hello"}, "sub/deep/x.go:3: func Hello() {}\nsub/notes.md:2: say Hello\n[skipped 1 binary files]", false},
		{map[string]any{"query": "hello", "ignore_case": true, "glob": "**/*.md"}, "sub/notes.md:2: say Hello", false},
		{map[string]any{"query": "line", "path": "hello.txt"}, "hello.txt:1: line one\nhello.txt:2: line two\nhello.txt:3: line three", false},
		{map[string]any{"query": "package", "path": "sub", "glob": "deep/*"}, "sub/deep/x.go:1: package x", false},
		{map[string]any{"query": secret}, "(no matches for \"TOPSECRET\" in \".\")\n[skipped 1 binary files]", false},
		{map[string]any{"query": "a\nb"}, "query spans lines; search matches within one line, so give a single line of text", true},
		{map[string]any{"query": ""}, "query is empty; give the text to find", true},
		{map[string]any{"query": "x", "glob": "["}, `invalid glob "[": "[" is not a valid glob: check its [ ] brackets and \ escapes`, true},
		{map[string]any{"query": "x", "path": "fifo"}, `"fifo" is a named pipe; search takes a file or a directory`, true},
		{map[string]any{"query": "NEEDLE", "path": "wide.txt"}, "wide.txt:1: …" + strings.Repeat("a", 80) + "NEEDLE" + strings.Repeat("b", 154) + "…", false},
	}
	for _, tc := range tests {
		res := call(t, f, "search", tc.args)
		if res.Content != tc.want || res.IsError != tc.isError {
			t.Errorf("search %v:\n got %v %q\nwant %v %q", tc.args, res.IsError, res.Content, tc.isError, tc.want)
		}
	}
	capped := newFS(t, root, filesystem.WithMaxResults(1), filesystem.WithMaxReadBytes(20))
	res := call(t, capped, "search", map[string]any{"query": "e"})
	want := "sub/notes.md:1: # Notes\n[results stop at 1 matches; narrow the query, the path or the glob]\n[skipped 2 files larger than 20 bytes]\n[skipped 1 binary files]"
	if res.Content != want {
		t.Errorf("capped search:\n got %q\nwant %q", res.Content, want)
	}
}

func TestStat(t *testing.T) {
	_, root := fixture(t)
	f := newFS(t, root)
	for p, want := range map[string]string{
		"hello.txt":    "hello.txt: file, 29 bytes, mode -rw-r--r--, modified ",
		"sub":          "sub: directory, ",
		"fifo":         "fifo: named pipe, 0 bytes, mode prw-r--r--",
		"link_in":      "link_in: symbolic link to a file of 29 bytes inside the root; modified ",
		"link_out":     "link_out: symbolic link to outside the root (it cannot be followed); modified ",
		"link_out_abs": "link_out_abs: symbolic link to outside the root (it cannot be followed); modified ",
		"loop1":        "loop1: symbolic link to a symbolic link loop; modified ",
		"dangling":     "dangling: symbolic link to nothing (the link is dangling); modified ",
	} {
		res := call(t, f, "stat", map[string]any{"path": p})
		if res.IsError || !strings.HasPrefix(res.Content, want) {
			t.Errorf("stat %s: %q, want prefix %q", p, res.Content, want)
		}
	}
	v := call(t, f, "stat", map[string]any{"path": "hello.txt"}).Value.(filesystem.StatResult)
	if v.Path != "hello.txt" || v.Type != "file" || v.Size != 29 || v.Mode != "-rw-r--r--" || v.Modified.IsZero() {
		t.Errorf("stat value: %+v", v)
	}
}

func TestOptions(t *testing.T) {
	_, root := fixture(t)
	f, err := filesystem.FromOptions(map[string]any{"root": root, "read_only": true, "max_read_bytes": 10, "max_results": 5.0})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if !f.ReadOnly() || toolNames(t, f) != "glob list read search stat" {
		t.Errorf("read_only option: %s", toolNames(t, f))
	}
	if res := call(t, f, "read", map[string]any{"path": "hello.txt"}); res.Content != "line one\n[stopped at the 10-byte read limit; continue with offset=2]" {
		t.Errorf("max_read_bytes option: %q", res.Content)
	}
	bad := []struct {
		opts map[string]any
		want string
	}{
		{map[string]any{"read_only": true}, "filesystem: option root is required: the directory the tools are confined to"},
		{map[string]any{"root": ""}, "filesystem: option root must be a directory path, got "},
		{map[string]any{"root": root, "writable": true}, `filesystem: unknown option "writable"; the options are allow_hard_links, max_read_bytes, max_results, max_visit, max_write_bytes, read_only, root, tool_prefix`},
		{map[string]any{"root": root, "tool_prefix": true}, "filesystem: option tool_prefix must be a string, got bool"},
		{map[string]any{"root": root, "read_only": "yes"}, "filesystem: option read_only must be true or false, got yes"},
		{map[string]any{"root": root, "max_read_bytes": 0}, "filesystem: option max_read_bytes must be an integer from 1 to 1099511627776, got 0"},
		{map[string]any{"root": root, "max_results": "9"}, "filesystem: option max_results must be a positive integer, got string"},
	}
	for _, tc := range bad {
		if err := f.ValidateOptions(tc.opts); err == nil || err.Error() != tc.want {
			t.Errorf("ValidateOptions(%v) = %v, want %q", tc.opts, err, tc.want)
		}
	}
	if err := f.ValidateOptions(nil); err != nil {
		t.Errorf("empty options: %v", err)
	}
	if _, err := filesystem.FromOptions(nil); err == nil || err.Error() != "filesystem: option root is required: the directory the tools are confined to" {
		t.Errorf("FromOptions without root: %v", err)
	}
	if _, err := filesystem.FromOptions(map[string]any{"root": filepath.Join(root, "missing")}); err == nil {
		t.Error("FromOptions with a missing root succeeded")
	}
}
