package memory_test

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/lodeworks/lode/x/memory"
	"github.com/lodeworks/lode/x/memory/internal/memorytest"
)

// topics embeds a text by how often it names each of three topics.
type topics struct{ calls atomic.Int32 }

func (e *topics) Embed(_ context.Context, texts []string) ([][]float32, error) {
	e.calls.Add(1)
	out := make([][]float32, len(texts))
	for i, t := range texts {
		t = strings.ToLower(t)
		out[i] = []float32{
			float32(strings.Count(t, "fish") + strings.Count(t, "sardine") + strings.Count(t, "eat")),
			float32(strings.Count(t, "music") + strings.Count(t, "cello")),
			float32(strings.Count(t, "city") + strings.Count(t, "lisbon")),
		}
	}
	return out, nil
}

type failing struct{}

func (failing) Embed(context.Context, []string) ([][]float32, error) { return nil, errors.New("down") }

func TestReranked(t *testing.T) {
	ctx := context.Background()
	base := openFile(t)
	defer base.Close()
	alice := memory.Scope{Tenant: "acme", User: "alice"}
	bob := memory.Scope{Tenant: "acme", User: "bob"}
	if _, err := base.Save(ctx, alice,
		"Alice plays the cello, music every evening, music music.",
		"Alice likes to eat grilled sardines, any fish really.",
		"Alice lives in Lisbon, her favourite city.",
	); err != nil {
		t.Fatal(err)
	}
	if _, err := base.Save(ctx, bob, "Bob likes to eat fish too."); err != nil {
		t.Fatal(err)
	}
	e := &topics{}
	s := memory.Reranked(base, e)
	// By terms, "alice" ties all three; the embedding puts the fish first.
	got, err := s.Search(ctx, alice, "What does alice eat? fish", 2)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || !strings.Contains(got[0].Text, "sardines") || got[0].Score <= got[1].Score {
		t.Fatalf("reranked: %+v", got)
	}
	for _, f := range got {
		if strings.Contains(f.Text, "Bob") {
			t.Fatalf("another user's fact: %+v", f)
		}
	}
	if e.calls.Load() != 1 {
		t.Errorf("%d Embed calls for one search, want 1", e.calls.Load())
	}
	if got, _ := s.Search(ctx, alice, "%", 5); len(got) != 0 || e.calls.Load() != 1 {
		t.Errorf("a query with no terms: %+v, %d Embed calls", got, e.calls.Load())
	}
	if _, err := s.Search(ctx, memory.Scope{}, "fish", 5); !errors.Is(err, memory.ErrNoScope) {
		t.Errorf("no scope: %v", err)
	}
	if _, err := memory.Reranked(base, failing{}).Search(ctx, alice, "fish", 5); err == nil || !strings.Contains(err.Error(), "down") {
		t.Errorf("a failing embedder: %v", err)
	}
}

func TestRerankedContract(t *testing.T) {
	memorytest.Run(t, func(t testing.TB) memory.Store { return memory.Reranked(openFile(t), &topics{}) })
}
