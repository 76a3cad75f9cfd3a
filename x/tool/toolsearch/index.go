package toolsearch

import (
	"math"
	"slices"
	"sort"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"

	toolpkg "github.com/lodeworks/lode/tool"
)

// Field weights: a word of a tool's name says more about it than a word
// of its description.
const (
	nameWeight = 3
	descWeight = 1
	// prefixFactor scales a query word that matches only the start of an
	// indexed word ("calend" → "calendar"), or its singular ("emails").
	prefixFactor = 0.5
	// BM25's constants, as commonly chosen.
	bm25K = 1.2
	bm25B = 0.75
	// leadBonus scales the first query word's weight for a tool whose
	// description starts with it.
	leadBonus = 0.5
)

// posting is one tool a term occurs in, with its weighted frequency.
type posting struct {
	doc int32
	tf  float32
}

// index is what a search reads, built once per registry snapshot: the
// snapshot's tools in its order, which of them are deferred, and an
// inverted index of the words of their names and descriptions.
type index struct {
	// first and n identify the snapshot the index was built from.
	first *toolpkg.Tool
	n     int

	tools    []toolpkg.Tool
	deferred []bool
	anyDefer bool
	// core is the tools that are not deferred, in the snapshot's order.
	core     []toolpkg.Tool
	byName   map[string]int32
	vocab    []string // sorted, for prefix matches
	terms    map[string]int32
	postings [][]posting
	idf      []float32
	norm     []float32 // BM25's length normalisation per tool
	// lead is the term of each tool's description's first word (-1 for
	// none): descriptions start with what the tool does ("Refund an
	// invoice…"), and so do queries.
	lead []int32
}

// builds reports whether ix was built from the snapshot tools.
func (ix *index) builds(tools []toolpkg.Tool) bool {
	if ix == nil || ix.n != len(tools) {
		return false
	}
	return len(tools) == 0 || ix.first == &tools[0]
}

// buildIndex indexes a registry snapshot; deferred says which tools wait
// for a search, and skip names a tool never found (the search tool).
func buildIndex(tools []toolpkg.Tool, deferred func(toolpkg.Tool) bool, skip string) *index {
	ix := &index{n: len(tools), tools: tools, deferred: make([]bool, len(tools)),
		byName: make(map[string]int32, len(tools)), terms: make(map[string]int32)}
	if len(tools) > 0 {
		ix.first = &tools[0]
	}
	lengths := make([]float32, len(tools))
	ix.lead = make([]int32, len(tools))
	var total float64
	counts := make(map[int32]float32)
	for i, t := range tools {
		ix.byName[t.Name] = int32(i)
		ix.deferred[i] = t.Name != skip && deferred(t)
		ix.anyDefer = ix.anyDefer || ix.deferred[i]
		if !ix.deferred[i] {
			ix.core = append(ix.core, t)
		}
		ix.lead[i] = -1
		if t.Name == skip {
			continue
		}
		clear(counts)
		var length float32
		add := func(w string, weight float32) {
			id, ok := ix.terms[w]
			if !ok {
				id = int32(len(ix.postings))
				ix.terms[w] = id
				ix.postings = append(ix.postings, nil)
			}
			counts[id] += weight
			length += weight
		}
		words(t.Name, func(w string) { add(w, nameWeight) })
		words(firstLine(t.Description), func(w string) {
			add(w, descWeight)
			if ix.lead[i] < 0 {
				ix.lead[i] = ix.terms[w]
			}
		})
		for id, tf := range counts {
			ix.postings[id] = append(ix.postings[id], posting{doc: int32(i), tf: tf})
		}
		lengths[i] = length
		total += float64(length)
	}
	n := float64(len(tools))
	ix.idf = make([]float32, len(ix.postings))
	for id, ps := range ix.postings {
		df := float64(len(ps))
		ix.idf[id] = float32(math.Log(1 + (n-df+0.5)/(df+0.5)))
		slices.SortFunc(ps, func(a, b posting) int { return int(a.doc - b.doc) })
	}
	avg := float32(1)
	if n > 0 && total > 0 {
		avg = float32(total / n)
	}
	ix.norm = make([]float32, len(tools))
	for i, l := range lengths {
		ix.norm[i] = bm25K * (1 - bm25B + bm25B*l/avg)
	}
	ix.vocab = make([]string, 0, len(ix.terms))
	for w := range ix.terms {
		ix.vocab = append(ix.vocab, w)
	}
	sort.Strings(ix.vocab)
	return ix
}

// Match is one tool a search found.
type Match struct {
	// Name is the tool's registry name, as the model calls it.
	Name string
	// Description is the first line of the tool's description, cut to
	// DescriptionBytes.
	Description string
	// Score ranks the match; higher is better. Only the order means
	// anything.
	Score float64
	// Deferred says the tool waits for a search to be offered.
	Deferred bool
}

// scratch is a search's working memory, pooled so that a search over
// 10,000 tools allocates little.
type scratch struct {
	scores  []float32
	tf      []float32
	touched []int32
	hit     []int32
}

var scratchPool = sync.Pool{New: func() any { return new(scratch) }}

// search ranks the tools allowed admits (nil admits all) by the words of
// query and returns the best limit.
func (ix *index) search(query string, limit int, allowed []bool) []Match {
	var qs []string
	words(query, func(w string) {
		if !slices.Contains(qs, w) {
			qs = append(qs, w)
		}
	})
	if len(qs) == 0 || limit <= 0 {
		return nil
	}
	sc := scratchPool.Get().(*scratch)
	defer scratchPool.Put(sc)
	if cap(sc.scores) < len(ix.tools) {
		sc.scores = make([]float32, len(ix.tools))
		sc.tf = make([]float32, len(ix.tools))
	}
	scores := sc.scores[:len(ix.tools)]
	tf := sc.tf[:len(ix.tools)]
	touched := sc.touched[:0]
	// A query word and its other forms ("refund", "refunds") are one
	// word of the query: their frequencies add up, at half weight for
	// the other forms, and BM25 saturates once, so a tool that has both
	// forms does not count the word twice.
	hit := sc.hit[:0]
	gather := func(id int32, factor float32) {
		for _, p := range ix.postings[id] {
			if allowed != nil && !allowed[p.doc] {
				continue
			}
			if tf[p.doc] == 0 {
				hit = append(hit, p.doc)
			}
			tf[p.doc] += p.tf * factor
		}
	}
	type form struct {
		id     int32
		factor float32
	}
	var forms []form
	for qi, q := range qs {
		forms = forms[:0]
		var idf float32
		exact, ok := ix.terms[q]
		if ok {
			forms = append(forms, form{exact, 1})
			idf = ix.idf[exact]
		}
		// A word's longer forms ("calend" → "calendar", "calendars"), and
		// the singular of a plural query word, count for less.
		if len(q) >= 3 {
			i := sort.SearchStrings(ix.vocab, q)
			for ; i < len(ix.vocab) && strings.HasPrefix(ix.vocab[i], q); i++ {
				if ix.vocab[i] != q {
					forms = append(forms, form{ix.terms[ix.vocab[i]], prefixFactor})
				}
			}
		}
		if s, ok := strings.CutSuffix(q, "s"); ok && len(s) >= 3 {
			if id, ok := ix.terms[s]; ok {
				forms = append(forms, form{id, prefixFactor})
			}
		}
		lead := int32(-1)
		if qi == 0 && ok {
			lead = exact
		}
		add := func(d int32, tf float32) {
			if scores[d] == 0 {
				touched = append(touched, d)
			}
			scores[d] += idf * tf * (bm25K + 1) / (tf + ix.norm[d])
			// The query's first word is the description's first: the
			// tool does what was asked, not something else to it.
			if ix.lead[d] == lead && lead >= 0 {
				scores[d] += idf * leadBonus
			}
		}
		if len(forms) == 1 {
			// One form (the common case): no sums to gather.
			idf = ix.idf[forms[0].id] * forms[0].factor
			for _, p := range ix.postings[forms[0].id] {
				if allowed == nil || allowed[p.doc] {
					add(p.doc, p.tf*forms[0].factor)
				}
			}
			continue
		}
		hit = hit[:0]
		for _, f := range forms {
			idf = max(idf, ix.idf[f.id]*f.factor)
			gather(f.id, f.factor)
		}
		for _, d := range hit {
			add(d, tf[d])
			tf[d] = 0
		}
	}
	sc.hit = hit[:0]
	// Keep the best limit, by score and then by name (the snapshot's
	// order), so that equal scores rank the same on every replica.
	best := make([]int32, 0, limit+1)
	for _, d := range touched {
		s := scores[d]
		at := len(best)
		for at > 0 && (scores[best[at-1]] < s || scores[best[at-1]] == s && best[at-1] > d) {
			at--
		}
		if at < limit {
			best = slices.Insert(best, at, d)
			if len(best) > limit {
				best = best[:limit]
			}
		}
	}
	out := make([]Match, len(best))
	for i, d := range best {
		t := &ix.tools[d]
		out[i] = Match{Name: t.Name, Description: oneLine(t.Description), Score: float64(scores[d]), Deferred: ix.deferred[d]}
	}
	for _, d := range touched {
		scores[d] = 0
	}
	sc.touched = touched[:0]
	return out
}

// DescriptionBytes bounds the description a match shows.
const DescriptionBytes = 160

// oneLine is the first line of s, cut to DescriptionBytes on a rune
// boundary.
func oneLine(s string) string {
	s = firstLine(s)
	if len(s) <= DescriptionBytes {
		return s
	}
	cut := DescriptionBytes
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}

func firstLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = strings.TrimSpace(s[:i])
	}
	return s
}

// stopWords carry no meaning for ranking.
var stopWords = map[string]bool{"a": true, "an": true, "and": true, "are": true, "as": true, "at": true,
	"be": true, "by": true, "for": true, "from": true, "in": true, "is": true, "it": true, "of": true,
	"on": true, "or": true, "that": true, "the": true, "this": true, "to": true, "with": true, "tool": true}

// words calls fn with each lower-cased word of s: runs of letters and
// digits, split also where a lower-case letter meets an upper-case one
// (getUser → get, user) and at '_' and '-' (crm__find_contact → crm, find,
// contact); stop words and single letters are left out.
func words(s string, fn func(string)) {
	var b strings.Builder
	flush := func() {
		if b.Len() > 1 {
			if w := b.String(); !stopWords[w] {
				fn(w)
			}
		}
		b.Reset()
	}
	prevLower := false
	for _, r := range s {
		switch {
		case unicode.IsUpper(r):
			if prevLower {
				flush()
			}
			b.WriteRune(unicode.ToLower(r))
			prevLower = false
		case unicode.IsLetter(r) || unicode.IsDigit(r):
			b.WriteRune(r)
			prevLower = true
		default:
			flush()
			prevLower = false
		}
	}
	flush()
}
