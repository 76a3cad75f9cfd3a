package skills_test

import (
	"strings"
	"testing"

	"github.com/lodeworks/lode/x/tool/skills"
)

// FuzzReadFile reads arbitrary paths from a skill whose folder holds links
// out, and checks that nothing outside the folder is ever returned.
func FuzzReadFile(f *testing.F) {
	for _, s := range []string{"reference.md", "../csv/SKILL.md", "link_out", "link_sibling", "/etc/passwd", "a\x00b", "scripts/../../..", "loop", "link_in"} {
		f.Add(s)
	}
	_, dir := fixture(f)
	s, err := skills.New(skills.FromDir(dir))
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { s.Close() })
	f.Fuzz(func(t *testing.T, p string) {
		text, err := s.ReadFile("pdf", p)
		if strings.Contains(text, secret) || strings.Contains(text, "Use a real CSV parser") {
			t.Fatalf("ReadFile(%q) read outside the folder: %q", p, text)
		}
		if err == nil && text == "" {
			t.Fatalf("ReadFile(%q): no text and no error", p)
		}
		if err != nil && strings.Contains(err.Error(), dir) && !strings.Contains(p, dir) {
			t.Fatalf("ReadFile(%q): the error shows the host path: %v", p, err)
		}
	})
}
