package ledgertest

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/lodeworks/lode/ledger"
)

// RunCounter checks a ledger.Counter: the limit, giving back, names, and
// adds from several stores over the same data at once. Every store open
// returns for one t shares its data with the others.
func RunCounter(t *testing.T, open func(t testing.TB) ledger.Counter) {
	ctx := context.Background()
	t.Run("limit", func(t *testing.T) {
		c := open(t)
		steps := []struct {
			delta, limit, total int64
			ok                  bool
		}{
			{5, 10, 5, true},
			{5, 10, 10, true},  // at the limit is allowed
			{1, 10, 10, false}, // past it is not, and nothing is added
			{-3, ledger.NoLimit, 7, true},
			{100, ledger.NoLimit, 107, true},
			{0, 107, 107, true},
			{0, 106, 107, false},
		}
		for i, s := range steps {
			total, ok, err := c.AddCounter(ctx, "tenant:acme:2026-12-01", s.delta, s.limit)
			if err != nil || total != s.total || ok != s.ok {
				t.Fatalf("step %d: add %d under %d = %d %v %v, want %d %v", i, s.delta, s.limit, total, ok, err, s.total, s.ok)
			}
		}
		if total, ok, err := c.AddCounter(ctx, "other", 1, 1); err != nil || !ok || total != 1 {
			t.Fatalf("another counter: %d %v %v", total, ok, err)
		}
		for _, name := range []string{"", "a\x00b", "\xff\xfe", strings.Repeat("x", 513)} {
			if _, _, err := c.AddCounter(ctx, name, 1, 1); !errors.Is(err, ledger.ErrCounterName) {
				t.Fatalf("%q: err = %v, want ErrCounterName", name, err)
			}
		}
		// Names that are no file names.
		for _, name := range []string{"../../etc/passwd", "a/b:c d", strings.Repeat("é", 256)} {
			if total, ok, err := c.AddCounter(ctx, name, 2, 2); err != nil || !ok || total != 2 {
				t.Fatalf("%q: %d %v %v", name, total, ok, err)
			}
		}
	})
	t.Run("shared", func(t *testing.T) {
		a, b := open(t), open(t)
		if _, _, err := a.AddCounter(ctx, "day", 3, ledger.NoLimit); err != nil {
			t.Fatal(err)
		}
		if total, _, err := b.AddCounter(ctx, "day", 0, ledger.NoLimit); err != nil || total != 3 {
			t.Fatalf("the second store reads %d (%v), want 3", total, err)
		}
	})
	t.Run("concurrent", func(t *testing.T) {
		stores := []ledger.Counter{open(t), open(t)}
		// Few enough at once for a database's connection limit (each add
		// holds a connection), more than the limit lets through.
		const each, limit = 12, 20
		var wg sync.WaitGroup
		var mu sync.Mutex
		granted := 0
		errs := make(chan error, 2*each)
		for _, c := range stores {
			for range each {
				wg.Add(1)
				go func() {
					defer wg.Done()
					_, ok, err := c.AddCounter(ctx, "spend", 1, limit)
					if err != nil {
						errs <- err
						return
					}
					if ok {
						mu.Lock()
						granted++
						mu.Unlock()
					}
				}()
			}
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Fatal(err)
		}
		total, _, err := stores[0].AddCounter(ctx, "spend", 0, ledger.NoLimit)
		if err != nil || granted != limit || total != limit {
			t.Fatalf("granted %d, total %d (%v): want %d each", granted, total, err, limit)
		}
	})
}
