package sqltest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/lodeworks/lode/artifact"
	"github.com/lodeworks/lode/ledger"
)

// Many threads append at once, two writers on each, so that records of
// many threads share transactions and records of one thread race in them:
// every record a writer was told is committed is there, in its writer's
// order, exactly once; every refused one is absent; and the refused
// writer, once it reloads, goes on.
func testConcurrentAppends(t *testing.T, b Backend) {
	const threads, each = 16, 6
	ctx := context.Background()
	s := b.Open(t)
	var wg sync.WaitGroup
	errs := make(chan error, 2*threads)
	for i := range threads {
		id := fmt.Sprint("c", i)
		first, err := s.Create(ctx, ledger.WithID(id))
		if err != nil {
			t.Fatal(err)
		}
		defer first.Close()
		second, err := s.Load(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		defer second.Close()
		for w, st := range []*ledger.StoredThread{first, second} {
			wg.Go(func() {
				for n := 0; n < each; {
					err := st.Append(ledger.RoleUser, artifact.Text{Content: fmt.Sprintf("w%d %d", w, n)})
					switch {
					case err == nil:
						n++
					case errors.Is(err, ledger.ErrConflict):
						if err := st.Reload(ctx); err != nil {
							errs <- fmt.Errorf("%s: reload: %w", id, err)
							return
						}
					default:
						errs <- fmt.Errorf("%s: writer %d: %w", id, w, err)
						return
					}
				}
			})
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	for i := range threads {
		id := fmt.Sprint("c", i)
		turns := loadTurns(t, s, id)
		next := [2]int{}
		for _, turn := range turns {
			var w, n int
			if _, err := fmt.Sscanf(turn.Artifacts[0].(artifact.Text).Content, "w%d %d", &w, &n); err != nil || n != next[w] {
				t.Fatalf("%s: turn %q out of order (want writer %d's %d)", id, turn.Artifacts[0].(artifact.Text).Content, w, next[w])
			}
			next[w]++
		}
		if next != [2]int{each, each} {
			t.Fatalf("%s: %v records of each writer, want %d", id, next, each)
		}
	}
}
