package bash_test

import (
	"context"
	"fmt"
	"os"

	"github.com/lodeworks/lode/tool"
	"github.com/lodeworks/lode/x/tool/bash"
)

func Example() {
	dir, _ := os.MkdirTemp("", "sandbox")
	defer os.RemoveAll(dir)
	sh, err := bash.New(bash.Sandbox{Dir: dir, Env: map[string]string{"GREETING": "hello"}})
	if err != nil {
		panic(err)
	}
	reg := tool.NewRegistry()
	if err := reg.Mount(context.Background(), sh); err != nil {
		panic(err)
	}
	b, _ := reg.Lookup("bash__run")
	for _, args := range []string{
		`{"command":"echo $GREETING > note.txt && cat note.txt && ls"}`,
		`{"command":"echo fail >&2; exit 3"}`,
		`{"command":"sleep 100 & sleep 100","timeout_seconds":0.1}`,
	} {
		out, err := b.Call(context.Background(), tool.NoSandbox(), args)
		if err != nil {
			panic(err)
		}
		res := out.(*tool.Result)
		fmt.Printf("error=%v\n%s\n", res.IsError, res.Content)
	}
	// Output:
	// error=false
	// exit code: 0
	// --- stdout ---
	// hello
	// note.txt
	//
	// error=true
	// exit code: 3
	// --- stderr ---
	// fail
	//
	// error=true
	// timed out after 100ms; the command was killed
	// (no output)
}
