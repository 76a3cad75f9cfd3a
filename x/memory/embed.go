package memory

import (
	"context"
	"fmt"
	"math"
	"sort"
)

// Embedder turns texts into vectors whose cosine similarity says how
// close their meanings are (an embedding model's API). Embed returns one
// vector per text, in order.
type Embedder interface {
	Embed(ctx context.Context, texts []string) ([][]float32, error)
}

// Reranked returns a Store over store that orders what a search finds by
// the cosine similarity of each fact's embedding to the query's: store
// finds up to MaxLimit facts of the scope by their terms, and e ranks
// them, in one Embed call of the query and those facts per search. It
// does not find facts that share no term with the query, and stores no
// vectors. Save, Forget, List and Close are store's. A Score is the
// cosine similarity.
func Reranked(store Store, e Embedder) Store { return &reranked{Store: store, e: e} }

type reranked struct {
	Store
	e Embedder
}

func (r *reranked) Search(ctx context.Context, sc Scope, query string, limit int) ([]Fact, error) {
	found, err := r.Store.Search(ctx, sc, query, MaxLimit)
	if err != nil || len(found) == 0 {
		return found, err
	}
	texts := make([]string, 0, len(found)+1)
	texts = append(texts, query)
	for _, f := range found {
		texts = append(texts, f.Text)
	}
	vecs, err := r.e.Embed(ctx, texts)
	if err != nil {
		return nil, fmt.Errorf("memory: embed: %w", err)
	}
	if len(vecs) != len(texts) {
		return nil, fmt.Errorf("memory: embed: %d vectors for %d texts", len(vecs), len(texts))
	}
	for i := range found {
		found[i].Score = cosine(vecs[0], vecs[i+1])
	}
	// Stable: among equals, the text search's order stands.
	sort.SliceStable(found, func(i, j int) bool { return found[i].Score > found[j].Score })
	return found[:min(len(found), Limit(limit))], nil
}

func cosine(a, b []float32) float64 {
	var dot, na, nb float64
	for i := range min(len(a), len(b)) {
		dot += float64(a[i]) * float64(b[i])
		na += float64(a[i]) * float64(a[i])
		nb += float64(b[i]) * float64(b[i])
	}
	if na == 0 || nb == 0 {
		return 0
	}
	return dot / math.Sqrt(na*nb)
}
