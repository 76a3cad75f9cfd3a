package skills_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/lodeworks/lode/tool"
	"github.com/lodeworks/lode/x/tool/skills"
)

// linked adds to fixture a hard link in the pdf skill's folder to the
// secret outside the skills directory: <tmp>/skills/pdf/hard.md.
func linked(t *testing.T) (tmp, dir string) {
	t.Helper()
	tmp, dir = fixture(t)
	if err := os.Link(filepath.Join(tmp, "secret.txt"), filepath.Join(dir, "pdf", "hard.md")); err != nil {
		t.Fatal(err)
	}
	return tmp, dir
}

// read refuses a file with several hard links, on disk and through an
// os.DirFS, as a method and as a tool.
func TestHardLinkedFileRefused(t *testing.T) {
	_, dir := linked(t)
	const want = `"hard.md" has 2 hard links, so it is refused: the same file may also be outside the skill's folder. Only files with a single link can be read here`
	sources := map[string]skills.Option{"FromDir": skills.FromDir(dir), "FromFS(os.DirFS)": skills.FromFS("dirfs", os.DirFS(dir))}
	for label, src := range sources {
		s := newSkills(t, src)
		if text, err := s.ReadFile("pdf", "hard.md"); err == nil || err.Error() != want {
			t.Errorf("%s: ReadFile = %q, %v\nwant error %q", label, text, err, want)
		}
		out, err := s.Call(context.Background(), "read", map[string]any{"name": "pdf", "path": "hard.md"})
		if err != nil {
			t.Fatal(err)
		}
		if res := out.(*tool.Result); !res.IsError || res.Content != want {
			t.Errorf("%s: read tool = %+v\nwant %q", label, res, want)
		}
		if text, err := s.ReadFile("pdf", "reference.md"); err != nil || text != "pdftotext -layout in.pdf out.txt\n" {
			t.Errorf("%s: a file with one link: %q, %v", label, text, err)
		}
	}
}

// A SKILL.md with several hard links fails New, naming the file and the
// option that accepts it.
func TestHardLinkedSkillFileRefused(t *testing.T) {
	tmp := t.TempDir()
	dir := filepath.Join(tmp, "skills")
	write(t, filepath.Join(tmp, "elsewhere.md"), skillMD("evil", "Reads like a skill.", secret))
	if err := os.MkdirAll(filepath.Join(dir, "evil"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Link(filepath.Join(tmp, "elsewhere.md"), filepath.Join(dir, "evil", "SKILL.md")); err != nil {
		t.Fatal(err)
	}
	const tail = " has 2 hard links; the same file may also be outside the skills directory, so it is refused (AllowHardLinks, or the pack option allow_hard_links, accepts it)"
	cases := []struct {
		label string
		src   skills.Option
		want  string
	}{
		{"FromDir", skills.FromDir(dir), "skills: " + filepath.Join(dir, "evil", "SKILL.md") + tail},
		{"FromFS(os.DirFS)", skills.FromFS("dirfs", os.DirFS(dir)), "skills: dirfs:evil/SKILL.md" + tail},
	}
	for _, c := range cases {
		if _, err := skills.New(c.src); err == nil || err.Error() != c.want {
			t.Errorf("%s: New = %v\nwant %q", c.label, err, c.want)
		}
		s := newSkills(t, c.src, skills.AllowHardLinks())
		if body, err := s.Load("evil"); err != nil || body != secret {
			t.Errorf("%s, allowed: Load = %q, %v", c.label, body, err)
		}
	}
}

// AllowHardLinks, or allow_hard_links in the pack options, lets read use
// hard-linked files.
func TestHardLinksAllowed(t *testing.T) {
	_, dir := linked(t)
	fromOptions, err := skills.FromOptions(map[string]any{"dir": dir, "allow_hard_links": true})
	if err != nil {
		t.Fatal(err)
	}
	defer fromOptions.Close()
	for label, s := range map[string]*skills.Skills{
		"AllowHardLinks":   newSkills(t, skills.FromDir(dir), skills.AllowHardLinks()),
		"allow_hard_links": fromOptions,
	} {
		if text, err := s.ReadFile("pdf", "hard.md"); err != nil || text != secret {
			t.Errorf("%s: ReadFile = %q, %v", label, text, err)
		}
	}
	if err := fromOptions.ValidateOptions(map[string]any{"allow_hard_links": "yes"}); err == nil ||
		err.Error() != "skills: option allow_hard_links must be true or false, got yes" {
		t.Errorf("allow_hard_links: yes: %v", err)
	}
}
