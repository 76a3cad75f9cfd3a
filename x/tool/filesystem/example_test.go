package filesystem_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/lodeworks/lode/tool"
	"github.com/lodeworks/lode/x/tool/filesystem"
)

func Example() {
	root, _ := os.MkdirTemp("", "workspace")
	defer os.RemoveAll(root)
	_ = os.WriteFile(filepath.Join(root, "notes.txt"), []byte("first\nsecond\nthird\n"), 0o644)

	fsys, err := filesystem.New(root)
	if err != nil {
		panic(err)
	}
	defer fsys.Close()
	reg := tool.NewRegistry()
	if err := reg.Mount(context.Background(), fsys); err != nil {
		panic(err)
	}

	run := func(name, args string) {
		b, _ := reg.Lookup(name)
		out, err := b.Call(context.Background(), tool.NoSandbox(), args)
		if err != nil {
			panic(err)
		}
		res := out.(*tool.Result)
		fmt.Printf("%s -> error=%v\n%s\n", name, res.IsError, res.Content)
	}
	run("filesystem__read", `{"path":"notes.txt","offset":2,"limit":1,"line_numbers":true}`)
	run("filesystem__edit", `{"path":"notes.txt","old_string":"second","new_string":"2nd"}`)
	run("filesystem__write", `{"path":"docs/todo.md","content":"- ship it\n"}`)
	run("filesystem__glob", `{"pattern":"**/*.md"}`)
	run("filesystem__read", `{"path":"../etc/passwd"}`)
	// Output:
	// filesystem__read -> error=false
	//      2	second
	// [more lines follow; continue with offset=3]
	// filesystem__edit -> error=false
	// replaced 1 occurrence in notes.txt
	// filesystem__write -> error=false
	// created docs/todo.md (10 bytes)
	// filesystem__glob -> error=false
	// docs/todo.md
	// filesystem__read -> error=true
	// path "../etc/passwd": the path leads outside the root
}
