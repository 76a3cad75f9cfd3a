package store_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/lodeworks/lode/artifact"
	"github.com/lodeworks/lode/ledger"
	"github.com/lodeworks/lode/x/store"
)

// Open takes the same spec as lode's --store and store: in lode.yaml.
func ExampleOpen() {
	dir, _ := os.MkdirTemp("", "lode-store-example")
	defer os.RemoveAll(dir)
	ctx := context.Background()

	s, err := store.Open(ctx, "sqlite:"+filepath.Join(dir, "threads.db"))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer s.Close()
	st, _ := s.Create(ctx, ledger.WithID("support-1"))
	_ = st.Append(ledger.RoleUser, artifact.Text{Content: "Where is my order?"})
	st.Close()
	// The same store keeps counters, for limits every process shares.
	total, ok, _ := s.AddCounter(ctx, "spend/2026-12-05", 40, 100)
	fmt.Println(total, ok)

	_, err = store.Open(ctx, "postgres://lode:s3cret@db.internal/lode")
	fmt.Println(err != nil)
	// Output:
	// 40 true
	// true
}

// Parse tells the kind of a spec; String gives it back to paste.
func ExampleParse() {
	for _, spec := range []string{".lode/threads", "sqlite:/var/lib/lode/threads.db", "postgres://lode@db.internal/lode"} {
		sp, _ := store.Parse(spec)
		fmt.Println(sp.Kind, sp)
	}
	// Output:
	// file .lode/threads
	// sqlite sqlite:/var/lib/lode/threads.db
	// postgres postgres://lode@db.internal/lode
}
