package cli

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"unicode"
)

// TestDocsLinks follows every relative link of README.md, BENCHMARKS.md
// and docs/*.md: the file must exist, and a #fragment must name one of its
// headings, as GitHub makes anchors of them.
func TestDocsLinks(t *testing.T) {
	root := filepath.Join("..", "..")
	files := append(docFiles(t), filepath.Join(root, "BENCHMARKS.md"))
	anchors := map[string]map[string]bool{}
	headingsOf := func(path string) map[string]bool {
		if a, ok := anchors[path]; ok {
			return a
		}
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		a := map[string]bool{}
		for _, m := range regexp.MustCompile(`(?m)^#+ (.+)$`).FindAllStringSubmatch(stripBlocks(string(data)), -1) {
			a[anchorOf(m[1])] = true
		}
		anchors[path] = a
		return a
	}
	link := regexp.MustCompile(`\]\(([^)\s]+)\)`)
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		name := strings.TrimPrefix(filepath.ToSlash(f), "../../")
		for _, m := range link.FindAllStringSubmatch(stripBlocks(string(data)), -1) {
			target := m[1]
			if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			path, frag, _ := strings.Cut(target, "#")
			dest := f
			if path != "" {
				dest = filepath.Join(filepath.Dir(f), path)
			}
			rel, _ := filepath.Rel(root, dest)
			if _, err := os.Stat(dest); err != nil {
				t.Errorf("%s: the link %s leads nowhere: %v", name, target, err)
				continue
			}
			if frag != "" && strings.HasSuffix(dest, ".md") && !headingsOf(dest)[frag] {
				t.Errorf("%s: the link %s names no heading of %s", name, target, filepath.ToSlash(rel))
			}
		}
	}
}

// stripBlocks drops fenced blocks, whose lines are not headings or links.
func stripBlocks(s string) string {
	var out []string
	inside := false
	for _, l := range strings.Split(s, "\n") {
		if strings.HasPrefix(strings.TrimSpace(l), "```") {
			inside = !inside
			continue
		}
		if !inside {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

// anchorOf is the anchor GitHub gives a heading: lower case, punctuation
// but hyphens dropped, spaces as hyphens.
func anchorOf(heading string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(strings.TrimSpace(heading)) {
		switch {
		case r == ' ':
			b.WriteRune('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
			b.WriteRune(r)
		}
	}
	return b.String()
}
