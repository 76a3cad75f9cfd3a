package filesystem

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"slices"
	"strings"
	"syscall"
	"unicode/utf8"

	"github.com/lodeworks/lode/tool"
	"github.com/lodeworks/lode/x/tool/internal/hardlink"
)

// maxSearchBytes bounds the file content one search reads.
const maxSearchBytes = 256 << 20

// MaxWalkDepth bounds how deep glob and search descend: every level costs
// a confined lookup of the whole path, and deeper trees are rarely meant.
const MaxWalkDepth = 64

// maxDirEntries bounds the entries read from one directory (more when the
// visit limit is higher).
const maxDirEntries = 100_000

// maxExcerpt bounds the text shown for one matching line.
const maxExcerpt = 240

// readDir returns up to limit entries of dir sorted by name, and whether
// the directory holds more. O_DIRECTORY refuses anything else before it is
// opened (a named pipe would block).
func (f *FS) readDir(dir string, limit int) ([]fs.DirEntry, bool, error) {
	d, err := f.root.OpenFile(dir, os.O_RDONLY|syscall.O_DIRECTORY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, false, err
	}
	defer d.Close()
	var all []fs.DirEntry
	for len(all) < limit {
		batch, err := d.ReadDir(min(512, limit-len(all)))
		all = append(all, batch...)
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, false, err
		}
	}
	more := false
	if len(all) >= limit {
		extra, _ := d.ReadDir(1)
		more = len(extra) > 0
	}
	slices.SortFunc(all, func(a, b fs.DirEntry) int { return strings.Compare(a.Name(), b.Name()) })
	return all, more, nil
}

// walker visits a tree depth-first in name order, never following a
// symbolic link into a directory, within the visit limit.
type walker struct {
	f          *FS
	ctx        context.Context
	visited    int
	full       bool // the visit limit was reached
	unreadable int  // directories that could not be read
	truncated  int  // directories with more entries than could be read
	tooDeep    bool // a directory was not entered for MaxWalkDepth
}

// visit is called for each entry; it returns whether to descend into a
// directory and whether to go on at all.
type visit func(rel string, d fs.DirEntry, depth int) (descend, goOn bool)

func (w *walker) walk(dir string, depth, maxDepth int, fn visit) bool {
	if w.ctx.Err() != nil {
		return false
	}
	// The whole directory is read and sorted, so a walk cut short still
	// shows the first entries by name.
	entries, more, err := w.f.readDir(dir, max(w.f.maxVisit, maxDirEntries))
	if err != nil {
		w.unreadable++
		return true
	}
	if more {
		w.truncated++
	}
	for _, d := range entries {
		if w.visited >= w.f.maxVisit {
			w.full = true
			return false
		}
		w.visited++
		rel := join(dir, d.Name())
		descend, goOn := fn(rel, d, depth)
		if !goOn {
			return false
		}
		if descend && d.IsDir() && depth < maxDepth {
			if depth >= MaxWalkDepth {
				w.tooDeep = true
				continue
			}
			if !w.walk(rel, depth+1, maxDepth, fn) {
				return false
			}
		}
	}
	return true
}

func (w *walker) notes() []string {
	var notes []string
	if w.full {
		notes = append(notes, fmt.Sprintf("[stopped after visiting %d entries; narrow the path]", w.f.maxVisit))
	}
	if w.truncated > 0 {
		notes = append(notes, fmt.Sprintf("[%d directories hold more entries than could be read]", w.truncated))
	}
	if w.tooDeep {
		notes = append(notes, fmt.Sprintf("[directories more than %d levels deep were not entered; search from a deeper path]", MaxWalkDepth))
	}
	if w.unreadable > 0 {
		notes = append(notes, fmt.Sprintf("[%d directories could not be read]", w.unreadable))
	}
	if w.ctx.Err() != nil {
		notes = append(notes, "[cancelled]")
	}
	return notes
}

// requireDir checks that rel is a directory, following a symbolic link
// inside the root.
func (f *FS) requireDir(rel, what string) *tool.Result {
	info, err := f.root.Stat(rel)
	if err != nil {
		return failf("%s", f.describe(rel, err))
	}
	if !info.IsDir() {
		return failf("%s is a %s, not a directory; %s takes a directory", quote(rel), kindOf(info.Mode()), what)
	}
	return nil
}

// ListResult is the Value of a list, glob or search.
type ListResult struct {
	Path    string   `json:"path"`
	Entries []string `json:"entries"`
	// More is true when entries were left out (limits).
	More bool `json:"more,omitempty"`
}

func (f *FS) list(ctx context.Context, a *argReader) *tool.Result {
	rel, perr := a.path("path", ".")
	depth := a.int("depth", 1, MaxListDepth)
	if res := a.done("list", "path", "depth"); res != nil {
		return res
	}
	if perr != nil {
		return failf("%s", perr.Error())
	}
	depth = max(depth, 1)
	if res := f.requireDir(rel, "list"); res != nil {
		return res
	}
	w := &walker{f: f, ctx: ctx}
	var lines []string
	more := false
	w.walk(rel, 1, depth, func(p string, d fs.DirEntry, _ int) (bool, bool) {
		if len(lines) == f.maxResults {
			more = true
			return false, false
		}
		lines = append(lines, describeEntry(p, d))
		return true, true
	})
	return listing(rel, lines, more, w, "(the directory is empty)",
		fmt.Sprintf("[listing stopped at %d entries; list a subdirectory or lower the depth]", f.maxResults))
}

func listing(rel string, lines []string, more bool, w *walker, empty, moreNote string) *tool.Result {
	var sb strings.Builder
	for _, l := range lines {
		sb.WriteString(l)
		sb.WriteByte('\n')
	}
	if len(lines) == 0 {
		sb.WriteString(empty)
		sb.WriteByte('\n')
	}
	notes := w.notes()
	if more {
		notes = append([]string{moreNote}, notes...)
	}
	for _, n := range notes {
		sb.WriteString(n)
		sb.WriteByte('\n')
	}
	return &tool.Result{
		Content: strings.TrimSuffix(sb.String(), "\n"),
		Value:   ListResult{Path: rel, Entries: lines, More: more || w.full || w.truncated > 0},
	}
}

func describeEntry(rel string, d fs.DirEntry) string {
	t := d.Type()
	switch {
	case t.IsDir():
		return rel + "/"
	case t.IsRegular():
		if info, err := d.Info(); err == nil {
			return fmt.Sprintf("%s (%d bytes)", rel, info.Size())
		}
		return rel
	}
	return fmt.Sprintf("%s (%s)", rel, kindOf(t))
}

// compilePattern splits a glob pattern into its names, checking each.
func compilePattern(p string) ([]string, error) {
	if strings.TrimSpace(p) == "" {
		return nil, errors.New("the pattern is empty")
	}
	if len(p) > MaxPathBytes {
		return nil, fmt.Errorf("the pattern is %d bytes long; the limit is %d", len(p), MaxPathBytes)
	}
	if !utf8.ValidString(p) || strings.ContainsFunc(p, isControl) {
		return nil, errors.New("the pattern contains a control character or invalid UTF-8")
	}
	if strings.HasPrefix(p, "/") {
		return nil, errors.New("the pattern is absolute; patterns are relative to path")
	}
	var segs []string
	for s := range strings.SplitSeq(p, "/") {
		switch {
		case s == "" || s == ".":
			continue
		case s == "..":
			return nil, errors.New(`".." is not allowed in a pattern; set path instead`)
		case s == "**":
			if len(segs) > 0 && segs[len(segs)-1] == "**" {
				continue
			}
		case strings.Contains(s, "**"):
			return nil, fmt.Errorf("%q: ** must be a whole path element (as in **/*.go)", s)
		default:
			if _, err := path.Match(s, ""); err != nil {
				return nil, fmt.Errorf("%q is not a valid glob: check its [ ] brackets and \\ escapes", s)
			}
		}
		segs = append(segs, s)
	}
	if len(segs) == 0 {
		return nil, errors.New("the pattern matches nothing but the directory itself")
	}
	return segs, nil
}

// matchSegs reports whether names matches pat, where "**" matches any
// number of names — at least one when it ends the pattern, so "sub/**" is
// what sub holds, not sub itself. Dynamic programming keeps it linear in
// both.
func matchSegs(pat, names []string) bool {
	// cur[j]: pat[:i] matches names[:j].
	cur := make([]bool, len(names)+1)
	nxt := make([]bool, len(names)+1)
	cur[0] = true
	for i, p := range pat {
		clear(nxt)
		if p == "**" {
			last := i == len(pat)-1
			reach := false
			for j := range cur {
				if last {
					nxt[j] = reach
					reach = reach || cur[j]
				} else {
					reach = reach || cur[j]
					nxt[j] = reach
				}
			}
		} else {
			for j := 1; j <= len(names); j++ {
				if cur[j-1] {
					ok, _ := path.Match(p, names[j-1])
					nxt[j] = ok
				}
			}
		}
		cur, nxt = nxt, cur
	}
	return cur[len(names)]
}

// couldMatchBelow reports whether some path under the directory names can
// match pat.
func couldMatchBelow(pat, names []string) bool {
	for i, n := range names {
		if i >= len(pat) {
			return false
		}
		if pat[i] == "**" {
			return true
		}
		if ok, _ := path.Match(pat[i], n); !ok {
			return false
		}
	}
	return len(pat) > len(names)
}

func relTo(base, rel string) []string {
	if base != "." {
		rel = strings.TrimPrefix(rel, base+"/")
	}
	return strings.Split(rel, "/")
}

func (f *FS) glob(ctx context.Context, a *argReader) *tool.Result {
	pattern := a.str("pattern", true)
	rel, perr := a.path("path", ".")
	if res := a.done("glob", "pattern", "path"); res != nil {
		return res
	}
	if perr != nil {
		return failf("%s", perr.Error())
	}
	pat, err := compilePattern(pattern)
	if err != nil {
		return failf("invalid pattern %s: %s", quote(pattern), err)
	}
	if res := f.requireDir(rel, "glob"); res != nil {
		return res
	}
	maxDepth := len(pat)
	if slices.Contains(pat, "**") {
		maxDepth = MaxWalkDepth
	}
	w := &walker{f: f, ctx: ctx}
	var lines []string
	more := false
	w.walk(rel, 1, maxDepth, func(p string, d fs.DirEntry, _ int) (bool, bool) {
		names := relTo(rel, p)
		if matchSegs(pat, names) {
			if len(lines) == f.maxResults {
				more = true
				return false, false
			}
			if d.IsDir() {
				lines = append(lines, p+"/")
			} else {
				lines = append(lines, p)
			}
		}
		return d.IsDir() && couldMatchBelow(pat, names), true
	})
	return listing(rel, lines, more, w, fmt.Sprintf("(nothing matches %s under %s)", quote(pattern), quote(rel)),
		fmt.Sprintf("[results stop at %d matches; narrow the pattern or the path]", f.maxResults))
}

func (f *FS) search(ctx context.Context, a *argReader) *tool.Result {
	query := a.str("query", true)
	rel, perr := a.path("path", ".")
	globPattern := a.str("glob", false)
	ignoreCase := a.bool("ignore_case")
	if res := a.done("search", "query", "path", "glob", "ignore_case"); res != nil {
		return res
	}
	if perr != nil {
		return failf("%s", perr.Error())
	}
	switch {
	case query == "":
		return failf("query is empty; give the text to find")
	case strings.ContainsAny(query, "\n\r"):
		return failf("query spans lines; search matches within one line, so give a single line of text")
	}
	var pat []string
	if globPattern != "" {
		var err error
		if pat, err = compilePattern(globPattern); err != nil {
			return failf("invalid glob %s: %s", quote(globPattern), err)
		}
	}
	info, err := f.root.Stat(rel)
	if err != nil {
		return failf("%s", f.describe(rel, err))
	}
	s := &searcher{f: f, query: query, ignoreCase: ignoreCase}
	if ignoreCase {
		s.lower = strings.ToLower(query)
	}
	w := &walker{f: f, ctx: ctx}
	switch {
	case info.Mode().IsRegular():
		s.file(rel)
		if s.linked > 0 {
			return failf("%s", linkedMessage(rel, s.links))
		}
	case info.IsDir():
		w.walk(rel, 1, MaxWalkDepth, func(p string, d fs.DirEntry, _ int) (bool, bool) {
			if d.Type().IsRegular() && (pat == nil || matchSegs(pat, relTo(rel, p))) {
				s.file(p)
			}
			return true, !s.full && !s.budget
		})
	default:
		return failf("%s is a %s; search takes a file or a directory", quote(rel), kindOf(info.Mode()))
	}
	var notes []string
	if s.budget {
		notes = append(notes, fmt.Sprintf("[stopped after reading %d bytes; narrow the path or the glob]", maxSearchBytes))
	}
	if s.large > 0 {
		notes = append(notes, fmt.Sprintf("[skipped %d files larger than %d bytes]", s.large, f.maxRead))
	}
	if s.binary > 0 {
		notes = append(notes, fmt.Sprintf("[skipped %d binary files]", s.binary))
	}
	if s.linked > 0 {
		notes = append(notes, fmt.Sprintf("[skipped %d files with several hard links: the same file may also be outside the root]", s.linked))
	}
	if s.failed > 0 {
		notes = append(notes, fmt.Sprintf("[%d files could not be read]", s.failed))
	}
	res := listing(rel, s.lines, s.full, w, fmt.Sprintf("(no matches for %s in %s)", quote(query), quote(rel)),
		fmt.Sprintf("[results stop at %d matches; narrow the query, the path or the glob]", f.maxResults))
	if len(notes) > 0 {
		res.Content += "\n" + strings.Join(notes, "\n")
	}
	return res
}

type searcher struct {
	f                     *FS
	query, lower          string
	ignoreCase            bool
	lines                 []string
	read                  int64
	full, budget          bool
	large, binary, failed int
	linked                int    // files refused for their hard links
	links                 uint64 // the links of the last of them
}

func (s *searcher) file(rel string) {
	file, info, res := s.f.openFile(rel)
	if res != nil {
		s.failed++
		return
	}
	defer file.Close()
	if s.f.refuseLinked(rel, info) != nil {
		s.linked++
		s.links = hardlink.Count(info)
		return
	}
	if info.Size() > s.f.maxRead {
		s.large++
		return
	}
	if s.read+info.Size() > maxSearchBytes {
		s.budget = true
		return
	}
	data, err := io.ReadAll(io.LimitReader(file, s.f.maxRead))
	s.read += int64(len(data))
	if err != nil {
		s.failed++
		return
	}
	if bytes.IndexByte(data[:min(len(data), binaryProbe)], 0) >= 0 {
		s.binary++
		return
	}
	text := string(data)
	n := 0
	for line := range strings.Lines(text) {
		n++
		line = strings.TrimRight(line, "\r\n")
		hay := line
		needle := s.query
		if s.ignoreCase {
			hay, needle = strings.ToLower(line), s.lower
		}
		i := strings.Index(hay, needle)
		if i < 0 {
			continue
		}
		if len(s.lines) == s.f.maxResults {
			s.full = true
			return
		}
		if len(hay) != len(line) { // lower-casing changed lengths: show the start
			i = 0
		}
		s.lines = append(s.lines, fmt.Sprintf("%s:%d: %s", rel, n, excerpt(line, i)))
	}
}

// excerpt shows a long line around position i.
func excerpt(line string, i int) string {
	if len(line) <= maxExcerpt {
		return line
	}
	start := max(0, i-maxExcerpt/3)
	for start > 0 && !utf8.RuneStart(line[start]) {
		start--
	}
	end := min(len(line), start+maxExcerpt)
	for end < len(line) && !utf8.RuneStart(line[end]) {
		end--
	}
	out := line[start:end]
	if start > 0 {
		out = "…" + out
	}
	if end < len(line) {
		out += "…"
	}
	return out
}

func isControl(r rune) bool { return r < 0x20 || r >= 0x7f && r < 0xa0 }
