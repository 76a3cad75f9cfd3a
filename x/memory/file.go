package memory

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"sync"
	"time"
)

// BM25 parameters of the file store's ranking.
const (
	bm25K1 = 1.2
	bm25B  = 0.75
)

// FileStore keeps each Scope's facts in a file of JSON lines in a folder,
// and searches them in memory with BM25 over Terms. A scope's file is read
// on its first use and kept in memory after. Every write is synced before
// it returns; a last line a crash cut short is dropped when the file is
// next read. One process uses a folder at a time.
type FileStore struct {
	dir string

	mu     sync.Mutex
	scopes map[Scope]*index
}

// OpenFile opens (creating if needed) the folder dir as a FileStore.
func OpenFile(dir string) (*FileStore, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("memory: %w", err)
	}
	return &FileStore{dir: dir, scopes: map[Scope]*index{}}, nil
}

// line is one line of a scope's file: a saved fact, or a forgotten ID.
type line struct {
	ID     string    `json:"id,omitempty"`
	Text   string    `json:"text,omitempty"`
	Saved  time.Time `json:"saved,omitzero"`
	Forget string    `json:"forget,omitempty"`
	Tenant string    `json:"tenant"`
	User   string    `json:"user"`
}

// path names a scope's file by a hash of its tenant and user, so no name
// a caller chooses reaches the file system.
func (s *FileStore) path(sc Scope) string {
	h := sha256.New()
	b, _ := json.Marshal([]string{sc.Tenant, sc.User})
	h.Write(b)
	return filepath.Join(s.dir, hex.EncodeToString(h.Sum(nil)[:16])+".jsonl")
}

// load returns the index of sc, reading its file on first use. s.mu is held.
func (s *FileStore) load(sc Scope) (*index, error) {
	if ix, ok := s.scopes[sc]; ok {
		return ix, nil
	}
	ix := newIndex()
	path := s.path(sc)
	data, err := os.ReadFile(path)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("memory: %w", err)
	}
	// A write that a crash cut short leaves a last line without its
	// newline: it was never acknowledged, so it is cut off before the
	// next write appends.
	if i := bytes.LastIndexByte(data, '\n'); i+1 < len(data) {
		if err := os.Truncate(path, int64(i+1)); err != nil {
			return nil, fmt.Errorf("memory: cut a torn last line: %w", err)
		}
		data = data[:i+1]
	}
	for n := 1; len(data) > 0; n++ {
		var b []byte
		b, data, _ = bytes.Cut(data, []byte{'\n'})
		var l line
		if err := json.Unmarshal(b, &l); err != nil {
			return nil, fmt.Errorf("memory: %s line %d: %w", path, n, err)
		}
		if l.Tenant != sc.Tenant || l.User != sc.User {
			continue // not this scope's: never shown
		}
		if l.Forget != "" {
			ix.remove(l.Forget)
		} else {
			ix.add(Fact{ID: l.ID, Text: l.Text, Saved: l.Saved})
		}
	}
	s.scopes[sc] = ix
	return ix, nil
}

// write appends lines to sc's file and syncs it.
func (s *FileStore) write(sc Scope, lines []line) error {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	for _, l := range lines {
		l.Tenant, l.User = sc.Tenant, sc.User
		if err := enc.Encode(l); err != nil {
			return fmt.Errorf("memory: %w", err)
		}
	}
	f, err := os.OpenFile(s.path(sc), os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return fmt.Errorf("memory: %w", err)
	}
	_, err = f.Write(buf.Bytes())
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("memory: %w", err)
	}
	return nil
}

// Save implements Store.
func (s *FileStore) Save(ctx context.Context, sc Scope, texts ...string) ([]Fact, error) {
	if err := sc.Check(); err != nil {
		return nil, err
	}
	for _, t := range texts {
		if err := CheckFact(t); err != nil {
			return nil, err
		}
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("memory: %w", err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	ix, err := s.load(sc)
	if err != nil {
		return nil, err
	}
	now := time.Now().UTC()
	facts := make([]Fact, len(texts))
	lines := make([]line, len(texts))
	for i, t := range texts {
		facts[i] = Fact{ID: newID(), Text: t, Saved: now}
		lines[i] = line{ID: facts[i].ID, Text: t, Saved: now}
	}
	if err := s.write(sc, lines); err != nil {
		return nil, err
	}
	for _, f := range facts {
		ix.add(f)
	}
	return facts, nil
}

// Search implements Store.
func (s *FileStore) Search(ctx context.Context, sc Scope, query string, limit int) ([]Fact, error) {
	if err := sc.Check(); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("memory: %w", err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	ix, err := s.load(sc)
	if err != nil {
		return nil, err
	}
	return ix.search(QueryTerms(query), Limit(limit)), nil
}

// Forget implements Store.
func (s *FileStore) Forget(ctx context.Context, sc Scope, id string) error {
	if err := sc.Check(); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("memory: %w", err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	ix, err := s.load(sc)
	if err != nil {
		return err
	}
	if _, ok := ix.docs[id]; !ok {
		return ErrNotFound
	}
	if err := s.write(sc, []line{{Forget: id}}); err != nil {
		return err
	}
	ix.remove(id)
	return nil
}

// List implements Store.
func (s *FileStore) List(ctx context.Context, sc Scope) ([]Fact, error) {
	if err := sc.Check(); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("memory: %w", err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	ix, err := s.load(sc)
	if err != nil {
		return nil, err
	}
	out := make([]Fact, 0, len(ix.docs))
	for _, d := range ix.docs {
		out = append(out, d.fact)
	}
	sort.Slice(out, func(i, j int) bool { return ix.docs[out[i].ID].num < ix.docs[out[j].ID].num })
	return out, nil
}

// Close implements Store; it drops what the store holds in memory.
func (s *FileStore) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.scopes = map[Scope]*index{}
	return nil
}

func newID() string {
	var b [12]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// index is one scope's facts with an inverted index for BM25. Documents
// are numbered in the order they were added; a forgotten one leaves a nil
// in all and is dropped from its terms' postings.
type index struct {
	docs     map[string]*doc
	all      []*doc
	postings map[string][]posting
	total    int // sum of the live docs' lengths in terms
}

type doc struct {
	fact Fact
	len  int
	num  int
}

type posting struct {
	num, tf int32
}

func newIndex() *index {
	return &index{docs: map[string]*doc{}, postings: map[string][]posting{}}
}

func (ix *index) add(f Fact) {
	if _, ok := ix.docs[f.ID]; ok {
		return
	}
	terms := Terms(f.Text)
	d := &doc{fact: f, len: len(terms), num: len(ix.all)}
	ix.docs[f.ID] = d
	ix.all = append(ix.all, d)
	ix.total += d.len
	tf := map[string]int32{}
	var order []string
	for _, t := range terms {
		if tf[t] == 0 {
			order = append(order, t)
		}
		tf[t]++
	}
	for _, t := range order {
		ix.postings[t] = append(ix.postings[t], posting{num: int32(d.num), tf: tf[t]})
	}
}

func (ix *index) remove(id string) {
	d, ok := ix.docs[id]
	if !ok {
		return
	}
	delete(ix.docs, id)
	ix.all[d.num] = nil
	ix.total -= d.len
	for _, t := range Terms(d.fact.Text) {
		p := ix.postings[t]
		p = slices.DeleteFunc(p, func(x posting) bool { return int(x.num) == d.num })
		if len(p) == 0 {
			delete(ix.postings, t)
		} else {
			ix.postings[t] = p
		}
	}
}

type scored struct {
	num   int
	score float64
}

// better orders by score, then the newer fact first.
func better(a, b scored) bool {
	if a.score != b.score {
		return a.score > b.score
	}
	return a.num > b.num
}

func (ix *index) search(terms []string, limit int) []Fact {
	n := float64(len(ix.docs))
	if n == 0 || len(terms) == 0 {
		return nil
	}
	avg := float64(ix.total) / n
	scores := make([]float64, len(ix.all))
	var touched []int32
	for _, t := range terms {
		p := ix.postings[t]
		if len(p) == 0 {
			continue
		}
		df := float64(len(p))
		idf := math.Log(1 + (n-df+0.5)/(df+0.5))
		for _, x := range p {
			f := float64(x.tf)
			if scores[x.num] == 0 {
				touched = append(touched, x.num)
			}
			scores[x.num] += idf * f * (bm25K1 + 1) / (f + bm25K1*(1-bm25B+bm25B*float64(ix.all[x.num].len)/avg))
		}
	}
	// The best limit, kept sorted: limit is small.
	top := make([]scored, 0, limit+1)
	for _, num := range touched {
		c := scored{int(num), scores[num]}
		if len(top) == limit && !better(c, top[len(top)-1]) {
			continue
		}
		i := sort.Search(len(top), func(i int) bool { return better(c, top[i]) })
		top = slices.Insert(top, i, c)
		if len(top) > limit {
			top = top[:limit]
		}
	}
	out := make([]Fact, len(top))
	for i, c := range top {
		out[i] = ix.all[c.num].fact
		out[i].Score = c.score
	}
	return out
}
