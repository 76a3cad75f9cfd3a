package ledgertest_test

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/lodeworks/lode/ledger"
	"github.com/lodeworks/lode/ledger/ledgertest"
)

func memOpener(t testing.TB) ledgertest.Opener {
	m := newMemory()
	return func(t testing.TB) ledger.Store {
		s := m.open()
		t.Cleanup(func() { s.Close() })
		return s
	}
}

func TestMemStore(t *testing.T) {
	ledgertest.Run(t, memOpener)
}

func TestMemStoreDamaged(t *testing.T) {
	ledgertest.RunDamaged(t, func(t testing.TB) (ledgertest.Opener, ledgertest.Damage) {
		m := newMemory()
		open := func(t testing.TB) ledger.Store {
			s := m.open()
			t.Cleanup(func() { s.Close() })
			return s
		}
		damage := func(t testing.TB, id string) {
			m.mu.Lock()
			defer m.mu.Unlock()
			m.threads[id].damaged = true
		}
		return open, damage
	})
}

func BenchmarkMemStore(b *testing.B) {
	ledgertest.Bench(b, memOpener)
}

// The ledger, its stores and this suite build without the loop or
// anything under x/: a store written outside lode needs nothing more.
func TestLedgerImportsNothingAbove(t *testing.T) {
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("the go command is needed to list dependencies: %v", err)
	}
	out, err := exec.Command(goBin, "list", "-deps", "github.com/lodeworks/lode/ledger/...").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	const mod = "github.com/lodeworks/lode/"
	n := 0
	for _, dep := range strings.Fields(string(out)) {
		rest, ok := strings.CutPrefix(dep, mod)
		if !ok {
			continue
		}
		n++
		if rest == "loop" || strings.HasPrefix(rest, "loop/") || strings.HasPrefix(rest, "x/") {
			t.Errorf("the ledger packages depend on %s", dep)
		}
	}
	if n == 0 {
		t.Fatalf("go list named no package of the module:\n%s", out)
	}
}
