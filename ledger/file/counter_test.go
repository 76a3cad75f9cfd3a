package file_test

import (
	"testing"

	"github.com/lodeworks/lode/ledger"
	"github.com/lodeworks/lode/ledger/file"
	"github.com/lodeworks/lode/ledger/ledgertest"
)

func TestCounter(t *testing.T) {
	ledgertest.RunCounter(t, func() func(t testing.TB) ledger.Counter {
		dirs := map[string]string{}
		return func(t testing.TB) ledger.Counter {
			dir, ok := dirs[t.Name()]
			if !ok {
				dir = t.TempDir()
				dirs[t.Name()] = dir
			}
			s, err := file.Open(dir)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { s.Close() })
			return s
		}
	}())
}
