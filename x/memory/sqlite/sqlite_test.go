package sqlite_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/lodeworks/lode/x/memory"
	"github.com/lodeworks/lode/x/memory/internal/memorytest"
	"github.com/lodeworks/lode/x/memory/sqlite"
)

func open(t testing.TB) memory.Store {
	s, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "memory.db"))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestContract(t *testing.T) { memorytest.Run(t, open) }
