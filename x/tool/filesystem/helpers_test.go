package filesystem_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/lodeworks/lode/tool"
	"github.com/lodeworks/lode/x/tool/filesystem"
)

const secret = "TOPSECRET"

// fixture lays out a root with every kind of entry, and a secret next to
// it that no tool may reach.
//
//	<tmp>/secret.txt            TOPSECRET
//	<tmp>/outside/file.txt      TOPSECRET
//	<tmp>/root/hello.txt        three lines
//	<tmp>/root/sub/deep/x.go
//	<tmp>/root/sub/notes.md
//	<tmp>/root/empty/
//	<tmp>/root/bin.dat          contains NUL bytes
//	<tmp>/root/link_in -> hello.txt, link_dir_in -> sub
//	<tmp>/root/link_out -> ../secret.txt, link_out_abs -> <tmp>/secret.txt
//	<tmp>/root/link_out_dir -> ../outside, loop1 <-> loop2, self -> self
//	<tmp>/root/dangling -> missing.txt, fifo (a named pipe)
func fixture(t testing.TB) (tmp, root string) {
	t.Helper()
	tmp = t.TempDir()
	root = filepath.Join(tmp, "root")
	must(t, os.MkdirAll(filepath.Join(root, "sub", "deep"), 0o755))
	must(t, os.MkdirAll(filepath.Join(root, "empty"), 0o755))
	must(t, os.MkdirAll(filepath.Join(tmp, "outside"), 0o755))
	must(t, os.WriteFile(filepath.Join(tmp, "secret.txt"), []byte(secret), 0o644))
	must(t, os.WriteFile(filepath.Join(tmp, "outside", "file.txt"), []byte(secret), 0o644))
	must(t, os.WriteFile(filepath.Join(root, "hello.txt"), []byte("line one\nline two\nline three\n"), 0o644))
	must(t, os.WriteFile(filepath.Join(root, "sub", "deep", "x.go"), []byte("package x\n\nfunc Hello() {}\n"), 0o644))
	must(t, os.WriteFile(filepath.Join(root, "sub", "notes.md"), []byte("# Notes\nsay Hello\n"), 0o644))
	must(t, os.WriteFile(filepath.Join(root, "bin.dat"), []byte("ab\x00cd Hello"), 0o644))
	for link, target := range map[string]string{
		"link_in": "hello.txt", "link_dir_in": "sub", "link_out": "../secret.txt",
		"link_out_abs": filepath.Join(tmp, "secret.txt"), "link_out_dir": "../outside",
		"loop1": "loop2", "loop2": "loop1", "self": "self", "dangling": "missing.txt",
	} {
		must(t, os.Symlink(target, filepath.Join(root, link)))
	}
	must(t, syscall.Mkfifo(filepath.Join(root, "fifo"), 0o644))
	return tmp, root
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func newFS(t testing.TB, root string, opts ...filesystem.Option) *filesystem.FS {
	t.Helper()
	f, err := filesystem.New(root, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}

// call runs a tool directly on the source and returns its result.
func call(t testing.TB, f *filesystem.FS, name string, args map[string]any) *tool.Result {
	t.Helper()
	out, err := f.Call(context.Background(), name, args)
	if err != nil {
		t.Fatalf("%s(%v): %v", name, args, err)
	}
	res, ok := out.(*tool.Result)
	if !ok {
		t.Fatalf("%s(%v) returned %T", name, args, out)
	}
	return res
}

// checkUnchanged asserts that nothing outside the root was read or
// changed: the secret is intact and the outside holds what it held.
func checkUnchanged(t testing.TB, tmp string) {
	t.Helper()
	for _, p := range []string{"secret.txt", "outside/file.txt"} {
		b, err := os.ReadFile(filepath.Join(tmp, p))
		if err != nil || string(b) != secret {
			t.Fatalf("%s changed: %q, %v", p, b, err)
		}
	}
	for dir, want := range map[string]string{".": "outside root secret.txt", "outside": "file.txt"} {
		entries, err := os.ReadDir(filepath.Join(tmp, dir))
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, e := range entries {
			names = append(names, e.Name())
		}
		if got := strings.Join(names, " "); got != want {
			t.Fatalf("%s/ now holds %q, want %q", dir, got, want)
		}
	}
}
