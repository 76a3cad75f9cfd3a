package cassette

import (
	"encoding/json"
	"sort"
	"strconv"
	"strings"
)

// A streamed answer carries its text in pieces, one JSON string per event
// (OpenAI's choices[0].delta.content, Anthropic's delta.text, Gemini's
// candidates[0].content.parts[0].text, the Responses API's delta). A
// secret the model repeats arrives cut across several of them, where no
// replacement of whole values can see it. replaceSplit joins the strings
// that sit at the same JSON path in successive events, as a client joins
// the deltas, finds each known secret in the joined text, and redacts the
// part of every piece the secret covers: the first piece gets Redacted,
// the later ones lose their share. What a replay joins then reads
// Redacted where the secret was, as for a secret sent whole.

// piece is one JSON string literal of a body: where it is and what it
// decodes to.
type piece struct {
	start, end int // the literal, quotes included: body[start:end]
	text       string
	// keep is text with the parts a secret covers taken out and the
	// marker put in; nil while the piece is unchanged.
	keep *string
	cut  []span
}

// span is what a secret covers of a piece; mark says it is the secret's
// first piece, which holds the marker.
type span struct {
	from, to int
	mark     bool
}

// replaceSplit redacts the known secrets that a body's events carry cut
// across several strings. A body that is not an event stream or a JSON
// array of events (Gemini's unstreamed-SSE form) is returned as it is.
func (s *secretSet) replaceSplit(body string) string {
	s.mu.Lock()
	vals := make([]string, 0, len(s.vals))
	for v := range s.vals {
		vals = append(vals, v)
	}
	s.mu.Unlock()
	if len(vals) == 0 || len(body) == 0 {
		return body
	}
	byPath := map[string][]*piece{}
	var order []string
	add := func(path string, p *piece) {
		if _, ok := byPath[path]; !ok {
			order = append(order, path)
		}
		byPath[path] = append(byPath[path], p)
	}
	switch {
	case strings.HasPrefix(body, "data:") || strings.Contains(body, "\ndata:"):
		pos := 0
		for pos < len(body) {
			end := strings.IndexByte(body[pos:], '\n')
			if end < 0 {
				end = len(body) - pos
			}
			line := body[pos : pos+end]
			if rest, ok := strings.CutPrefix(line, "data:"); ok {
				off := pos + len(line) - len(rest)
				scanStrings(rest, off, false, add)
			}
			pos += end + 1
		}
	case strings.HasPrefix(strings.TrimLeft(body, " \t\r\n"), "["):
		scanStrings(body, 0, true, add)
	default:
		return body
	}
	changed := false
	for _, path := range order {
		if cutSecrets(byPath[path], vals) {
			changed = true
		}
	}
	if !changed {
		return body
	}
	var all []*piece
	for _, ps := range byPath {
		for _, p := range ps {
			if p.keep != nil {
				all = append(all, p)
			}
		}
	}
	sort.Slice(all, func(a, b int) bool { return all[a].start < all[b].start })
	var out strings.Builder
	last := 0
	for _, p := range all {
		out.WriteString(body[last:p.start])
		out.WriteString(encodeString(*p.keep))
		last = p.end
	}
	out.WriteString(body[last:])
	return out.String()
}

// cutSecrets finds each secret in the joined text of ps and marks what of
// every piece it covers; only secrets that span two pieces or more, since
// a secret inside one piece is the whole-value replacer's. It reports
// whether any piece changed.
func cutSecrets(ps []*piece, secrets []string) bool {
	if len(ps) < 2 {
		return false
	}
	var joined strings.Builder
	starts := make([]int, len(ps))
	for i, p := range ps {
		starts[i] = joined.Len()
		joined.WriteString(p.text)
	}
	text := joined.String()
	changed := false
	for _, v := range secrets {
		for from := 0; ; {
			at := strings.Index(text[from:], v)
			if at < 0 {
				break
			}
			at += from
			end := at + len(v)
			first := sort.Search(len(ps), func(i int) bool { return starts[i]+len(ps[i].text) > at })
			if first < len(ps) && starts[first]+len(ps[first].text) < end {
				for i := first; i < len(ps) && starts[i] < end; i++ {
					lo, hi := max(at-starts[i], 0), min(end-starts[i], len(ps[i].text))
					ps[i].cut = append(ps[i].cut, span{lo, hi, i == first})
					changed = true
				}
			}
			from = end
		}
	}
	if !changed {
		return false
	}
	for _, p := range ps {
		if len(p.cut) == 0 {
			continue
		}
		sort.Slice(p.cut, func(a, b int) bool { return p.cut[a].from < p.cut[b].from })
		var b strings.Builder
		pos := 0
		for _, c := range p.cut {
			if c.from < pos {
				c.from = pos
			}
			if c.to <= c.from {
				continue
			}
			b.WriteString(p.text[pos:c.from])
			if c.mark {
				b.WriteString(Redacted)
			}
			pos = c.to
		}
		b.WriteString(p.text[pos:])
		keep := b.String()
		p.keep = &keep
	}
	return true
}

// scanStrings calls add with the JSON path and the literal of every
// string value in the JSON text js, which starts at body offset off. With
// dropFirst the outermost array's index is left out of the path, so the
// elements of a JSON array of events share their paths as a stream's
// events do. Text that is not JSON yields what it scanned up to there.
func scanStrings(js string, off int, dropFirst bool, add func(string, *piece)) {
	type frame struct {
		array bool
		index int
		key   string
		isKey bool // an object's next string is its key
	}
	var stack []frame
	path := func() string {
		var b strings.Builder
		for i, f := range stack {
			if dropFirst && i == 0 {
				continue
			}
			if f.array {
				b.WriteString("[" + strconv.Itoa(f.index) + "]")
			} else {
				b.WriteString("." + f.key)
			}
		}
		return b.String()
	}
	for i := 0; i < len(js); i++ {
		switch c := js[i]; c {
		case '{':
			stack = append(stack, frame{isKey: true})
		case '[':
			stack = append(stack, frame{array: true})
		case '}', ']':
			if len(stack) == 0 {
				return
			}
			stack = stack[:len(stack)-1]
		case ',':
			if n := len(stack); n > 0 {
				if stack[n-1].array {
					stack[n-1].index++
				} else {
					stack[n-1].isKey = true
				}
			}
		case '"':
			end := i + 1
			for end < len(js) && js[end] != '"' {
				if js[end] == '\\' {
					end++
				}
				end++
			}
			if end >= len(js) {
				return
			}
			lit := js[i : end+1]
			var text string
			if err := json.Unmarshal([]byte(lit), &text); err != nil {
				return
			}
			if n := len(stack); n > 0 && !stack[n-1].array && stack[n-1].isKey {
				stack[n-1].key, stack[n-1].isKey = text, false
			} else if text != "" {
				add(path(), &piece{start: off + i, end: off + end + 1, text: text})
			}
			i = end
		}
	}
}

// encodeString is s as a JSON string, without HTML escapes, as the
// events' own encoders write it.
func encodeString(s string) string {
	var b strings.Builder
	e := json.NewEncoder(&b)
	e.SetEscapeHTML(false)
	_ = e.Encode(s)
	return strings.TrimSuffix(b.String(), "\n")
}
