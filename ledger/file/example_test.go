package file_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/lodeworks/lode/artifact"
	"github.com/lodeworks/lode/ledger"
	"github.com/lodeworks/lode/ledger/file"
	"github.com/lodeworks/lode/loop"
	"github.com/lodeworks/lode/x/provider/script"
)

// A run bound to the file store: every turn is on disk the moment it
// completes, so a later process picks the thread up where it stopped.
func Example() {
	dir, err := os.MkdirTemp("", "lode-ledger-")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	ctx := context.Background()

	store, err := file.Open(dir)
	if err != nil {
		panic(err)
	}
	st, err := store.Create(ctx, ledger.WithID("support-42"), ledger.WithMetadata(map[string]string{"user": "ann"}))
	if err != nil {
		panic(err)
	}
	if err := st.Append(ledger.RoleUser, artifact.Text{Content: "Is my order shipped?"}); err != nil {
		panic(err)
	}
	if _, err := loop.New().Run(ctx, st, script.Play(script.Text("Yes, it left this morning."))); err != nil {
		panic(err)
	}
	store.Close()

	// Another process, later.
	store, err = file.Open(dir)
	if err != nil {
		panic(err)
	}
	defer store.Close()
	again, err := store.Load(ctx, "support-42")
	if err != nil {
		panic(err)
	}
	user, _ := again.Metadata("user")
	fmt.Println("thread", again.ID(), "of", user)
	for _, t := range again.Turns() {
		fmt.Printf("%s: %s\n", t.Role, t.Artifacts[0].(artifact.Text).Content)
	}
	// Output:
	// thread support-42 of ann
	// user: Is my order shipped?
	// assistant: Yes, it left this morning.
}

// A crash in the middle of a write leaves a torn last record; Load cuts it
// and reports the repair, and every earlier turn is there.
func ExampleWithRepairFunc() {
	dir, err := os.MkdirTemp("", "lode-ledger-")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	ctx := context.Background()

	store, err := file.Open(dir)
	if err != nil {
		panic(err)
	}
	st, _ := store.Create(ctx, ledger.WithID("t"))
	st.Append(ledger.RoleUser, artifact.Text{Content: "first"})
	st.Append(ledger.RoleUser, artifact.Text{Content: "second"})
	store.Close()

	// Simulate a process killed half-way through writing a third record.
	j, _ := os.OpenFile(filepath.Join(dir, "t.journal"), os.O_APPEND|os.O_WRONLY, 0)
	j.WriteString(`00000040 1a2b3c4d {"t":"turn","n":3,"tu`)
	j.Close()

	store, err = file.Open(dir, file.WithRepairFunc(func(r file.Repair) {
		fmt.Printf("%s at line %d: %d bytes cut\n", r.Kind, r.Line, r.Cut)
	}))
	if err != nil {
		panic(err)
	}
	defer store.Close()
	again, err := store.Load(ctx, "t")
	if err != nil {
		panic(err)
	}
	fmt.Println(again.Len(), "turns intact")
	// Output:
	// torn tail at line 4: 39 bytes cut
	// 2 turns intact
}

// Batching fsyncs: up to 64 turns or 50ms of turns may be lost if the
// machine (not just the process) goes down, for far cheaper appends.
func ExampleWithSync() {
	dir, err := os.MkdirTemp("", "lode-ledger-")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	store, err := file.Open(dir, file.WithSync(file.SyncPolicy{Count: 64, Interval: 50 * time.Millisecond}))
	if err != nil {
		panic(err)
	}
	defer store.Close()
	st, _ := store.Create(context.Background())
	for i := range 3 {
		st.Append(ledger.RoleUser, artifact.Text{Content: fmt.Sprint("message ", i)})
	}
	fmt.Println(st.Len())
	// Output: 3
}
