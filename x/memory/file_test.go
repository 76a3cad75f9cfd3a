package memory_test

import (
	"context"
	"os"
	"path/filepath"
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

// TestFileTornLine reopens a scope whose last write a crash cut short: the
// torn line is dropped, and later saves are read back.
func TestFileTornLine(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	sc := memory.Scope{Tenant: "acme", User: "alice"}
	s, _ := memory.OpenFile(dir)
	if _, err := s.Save(ctx, sc, "Alice keeps bees."); err != nil {
		t.Fatal(err)
	}
	s.Close()
	files, _ := filepath.Glob(filepath.Join(dir, "*.jsonl"))
	if len(files) != 1 {
		t.Fatalf("files %v", files)
	}
	f, _ := os.OpenFile(files[0], os.O_WRONLY|os.O_APPEND, 0)
	f.WriteString(`{"id":"torn","text":"Alice has a se`)
	f.Close()

	s, _ = memory.OpenFile(dir)
	if list, err := s.List(ctx, sc); err != nil || len(list) != 1 {
		t.Fatalf("with a torn line: %+v, %v", list, err)
	}
	if _, err := s.Save(ctx, sc, "Alice has a sister."); err != nil {
		t.Fatal(err)
	}
	s.Close()
	s, _ = memory.OpenFile(dir)
	defer s.Close()
	if list, err := s.List(ctx, sc); err != nil || len(list) != 2 || list[1].Text != "Alice has a sister." {
		t.Fatalf("after a save over the torn line: %+v, %v", list, err)
	}
}
