package memory_test

import (
	"context"
	"testing"

	"github.com/lodeworks/lode/x/memory"
	"github.com/lodeworks/lode/x/memory/internal/memorytest"
)

func openFile(t testing.TB) memory.Store {
	s, err := memory.OpenFile(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestFileContract(t *testing.T) { memorytest.Run(t, openFile) }

func TestFileReopen(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	sc := memory.Scope{Tenant: "acme", User: "alice"}
	s, err := memory.OpenFile(dir)
	if err != nil {
		t.Fatal(err)
	}
	facts, err := s.Save(ctx, sc, "Alice lives in Lisbon.", "Alice keeps bees.")
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Forget(ctx, sc, facts[1].ID); err != nil {
		t.Fatal(err)
	}
	s.Close()
	s, err = memory.OpenFile(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	list, err := s.List(ctx, sc)
	if err != nil || len(list) != 1 || list[0].ID != facts[0].ID || !list[0].Saved.Equal(facts[0].Saved) {
		t.Fatalf("after reopening: %+v, %v", list, err)
	}
	got, _ := s.Search(ctx, sc, "lisbon", 5)
	if len(got) != 1 {
		t.Fatalf("search after reopening: %+v", got)
	}
}
