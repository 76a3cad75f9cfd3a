package ledgertest

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/lodeworks/lode/artifact"
	"github.com/lodeworks/lode/ledger"
)

const (
	crashEnv = "LODE_LEDGERTEST_CRASH"
	crashID  = "crash"
	crashMax = 100_000 // a child left running stops by itself
)

// crashTurn is the content of turn i in the crash test. Sizes vary up to
// 192 KiB, so that a kill can land inside a large write.
func crashTurn(i int) string {
	return fmt.Sprintf("turn %d ", i) + strings.Repeat(string(rune('a'+i%26)), (i*7919)%(192<<10))
}

// Crash checks that a store survives kill -9 of a writer. The test binary
// re-runs itself (test named testName) as a child that appends turns to a
// thread in dir, printing "persisted N" after each Append returns. The
// parent kills it with SIGKILL after reading each of kills progress lines,
// reloads the thread and checks that every turn the child reported is there
// and intact, and that at most the one turn in flight went further.
//
// open opens the store over dir; the same function runs in the child. The
// test that calls Crash must call it first thing, since in the child Crash
// never returns.
func Crash(t *testing.T, testName string, open func(dir string) (ledger.Store, error), kills ...int) {
	var dir string
	if ChildConfig(crashEnv, testName, &dir) {
		RunChild("crash child", func(say func(string)) error { return crashChild(open, dir, say) })
	}
	dir = t.TempDir()
	for round, after := range kills {
		last := runAndKill(t, testName, dir, after)
		s, err := open(dir)
		if err != nil {
			t.Fatalf("round %d: reopen after kill: %v", round, err)
		}
		st, err := s.Load(context.Background(), crashID)
		if err != nil {
			s.Close()
			t.Fatalf("round %d: load after kill (child reported turn %d): %v", round, last, err)
		}
		turns := st.Turns()
		if len(turns) < last+1 || len(turns) > last+2 {
			s.Close()
			t.Fatalf("round %d: child reported turns 0..%d persisted, store holds %d", round, last, len(turns))
		}
		for i, tu := range turns {
			if len(tu.Artifacts) != 1 || tu.Artifacts[0] != (artifact.Text{Content: crashTurn(i)}) {
				s.Close()
				t.Fatalf("round %d: turn %d is damaged", round, i)
			}
		}
		t.Logf("round %d: killed after %d lines; child reported %d, store holds %d turns", round, after, last+1, len(turns))
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

// runAndKill runs one child, kills it after it reported `after` appends,
// and returns the number of the last turn it reported persisted.
func runAndKill(t *testing.T, testName, dir string, after int) int {
	c := StartChild(t, testName, crashEnv, dir)
	last, read := -1, 0
	if after > 0 {
		c.Await(t, func(line string) bool {
			if n, ok := progress(line); ok {
				last, read = n, read+1
			}
			return read == after
		})
	}
	// Lines already in the pipe were printed before the kill: they count.
	for _, line := range c.Kill(t) {
		if n, ok := progress(line); ok {
			last = n
		}
	}
	return last
}

func progress(line string) (int, bool) {
	s, ok := strings.CutPrefix(line, "persisted ")
	if !ok {
		return 0, false
	}
	n, err := strconv.Atoi(s)
	return n, err == nil
}

func crashChild(open func(dir string) (ledger.Store, error), dir string, say func(string)) error {
	s, err := open(dir)
	if err != nil {
		return err
	}
	ctx := context.Background()
	st, err := s.Load(ctx, crashID)
	if errors.Is(err, ledger.ErrNotFound) {
		st, err = s.Create(ctx, ledger.WithID(crashID))
	}
	if err != nil {
		return err
	}
	for i := st.Len(); i < crashMax; i++ {
		if err := st.Append(ledger.RoleUser, artifact.Text{Content: crashTurn(i)}); err != nil {
			return err
		}
		say(fmt.Sprintf("persisted %d", i))
	}
	return nil
}
