package skills_test

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/lodeworks/lode/tool"
	"github.com/lodeworks/lode/x/tool/skills"
)

//go:embed testdata/skills
var embedded embed.FS

const secret = "TOPSECRET"

func skillMD(name, desc, body string) string {
	return fmt.Sprintf("---\nname: %s\ndescription: %s\n---\n%s", name, desc, body)
}

func write(t testing.TB, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func symlink(t testing.TB, target, link string) {
	t.Helper()
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
}

// fixture lays out a directory of skills and a secret next to it.
//
//	<tmp>/secret.txt
//	<tmp>/skills/pdf/SKILL.md, reference.md, scripts/extract.py, bin.dat
//	<tmp>/skills/pdf/link_in -> reference.md, link_out -> ../../secret.txt,
//	  link_abs -> <tmp>/secret.txt, link_sibling -> ../csv/SKILL.md, loop -> loop
//	<tmp>/skills/csv/SKILL.md
//	<tmp>/skills/more/deeper/excel/SKILL.md
//	<tmp>/skills/notes.txt
func fixture(t testing.TB) (tmp, dir string) {
	t.Helper()
	tmp = t.TempDir()
	dir = filepath.Join(tmp, "skills")
	write(t, filepath.Join(tmp, "secret.txt"), secret)
	write(t, filepath.Join(dir, "pdf", "SKILL.md"), skillMD("pdf", "Extract text and tables from PDF files.", "# PDF\n\nSee reference.md.\n"))
	write(t, filepath.Join(dir, "pdf", "reference.md"), "pdftotext -layout in.pdf out.txt\n")
	write(t, filepath.Join(dir, "pdf", "scripts", "extract.py"), "print('extract')\n")
	write(t, filepath.Join(dir, "pdf", "bin.dat"), "a\x00b")
	symlink(t, "reference.md", filepath.Join(dir, "pdf", "link_in"))
	symlink(t, "../../secret.txt", filepath.Join(dir, "pdf", "link_out"))
	symlink(t, filepath.Join(tmp, "secret.txt"), filepath.Join(dir, "pdf", "link_abs"))
	symlink(t, "../csv/SKILL.md", filepath.Join(dir, "pdf", "link_sibling"))
	symlink(t, "loop", filepath.Join(dir, "pdf", "loop"))
	write(t, filepath.Join(dir, "csv", "SKILL.md"), skillMD("csv", "Clean up\n  CSV files.", "Use a real CSV parser.\n"))
	write(t, filepath.Join(dir, "more", "deeper", "excel", "SKILL.md"), "\ufeff---\r\nname: excel\r\ndescription: Work with spreadsheets.\r\nversion: 2\r\n---\r\nOpen it.\r\n")
	write(t, filepath.Join(dir, "notes.txt"), "not a skill")
	return tmp, dir
}

func newSkills(t testing.TB, opts ...skills.Option) *skills.Skills {
	t.Helper()
	s, err := skills.New(opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func TestDiscovery(t *testing.T) {
	_, dir := fixture(t)
	sub, _ := fs.Sub(embedded, "testdata/skills")
	s := newSkills(t, skills.FromDir(dir), skills.FromFS("demo-pack", sub))
	var got []string
	for _, sk := range s.List() {
		got = append(got, fmt.Sprintf("%s|%s|%s|%s|%s", sk.Name, sk.Description, sk.Source, sk.Dir, sk.Location()))
	}
	want := []string{
		"csv|Clean up CSV files.|" + dir + "|csv|" + filepath.Join(dir, "csv", "SKILL.md"),
		"excel|Work with spreadsheets.|" + dir + "|more/deeper/excel|" + filepath.Join(dir, "more", "deeper", "excel", "SKILL.md"),
		"greeting|Greet someone warmly, in their language.|demo-pack|greeting|demo-pack:greeting/SKILL.md",
		"haiku|Write a haiku (5-7-5 syllables) about a subject.|demo-pack|haiku|demo-pack:haiku/SKILL.md",
		"pdf|Extract text and tables from PDF files.|" + dir + "|pdf|" + filepath.Join(dir, "pdf", "SKILL.md"),
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("skills:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if m := s.List()[1].Metadata; m["version"] != 2 {
		t.Errorf("excel metadata: %v", m)
	}
	if body, err := s.Load("excel"); err != nil || body != "Open it.\n" {
		t.Errorf("excel body (CRLF and BOM): %q, %v", body, err)
	}
	wantPrompt := "You have skills: instructions for particular tasks, with files they may refer to. " +
		"When a task matches a skill's description, call skills__load with its name before you start, and follow it; " +
		"read the files it mentions with skills__read.\n\nSkills:\n" +
		"- csv: Clean up CSV files.\n- excel: Work with spreadsheets.\n- greeting: Greet someone warmly, in their language.\n" +
		"- haiku: Write a haiku (5-7-5 syllables) about a subject.\n- pdf: Extract text and tables from PDF files.\n"
	if got := s.Prompt(); got != wantPrompt {
		t.Errorf("prompt:\n%q\nwant\n%q", got, wantPrompt)
	}
	if got := newSkills(t).Prompt(); got != "" {
		t.Errorf("prompt with no skills: %q", got)
	}
	// The whole embed.FS works too; the folders are then deeper.
	whole := newSkills(t, skills.FromFS("demo-pack", embedded))
	if l := whole.List(); len(l) != 2 || l[0].Dir != "testdata/skills/greeting" {
		t.Errorf("embed.FS: %+v", l)
	}
	if text, err := whole.ReadFile("greeting", "phrases.md"); err != nil || !strings.Contains(text, "Bonjour") {
		t.Errorf("embed.FS read: %q, %v", text, err)
	}
}

func TestFiles(t *testing.T) {
	_, dir := fixture(t)
	s := newSkills(t, skills.FromDir(dir))
	files, more, err := s.Files("pdf")
	if err != nil || more || strings.Join(files, " ") != "bin.dat reference.md scripts/extract.py" {
		t.Errorf("files: %v %v %v", files, more, err)
	}
	if _, _, err := s.Files("nope"); !errors.Is(err, skills.ErrUnknownSkill) {
		t.Errorf("unknown: %v", err)
	}
}

// TestReadEscapes tries every way out of a skill's folder, on disk
// (FromDir) and through a generic file system that knows links (os.DirFS).
func TestReadEscapes(t *testing.T) {
	tmp, dir := fixture(t)
	onDisk := newSkills(t, skills.FromDir(dir))
	viaFS := newSkills(t, skills.FromFS("dirfs", os.DirFS(dir)))
	long256 := strings.Repeat("n", 256)
	long4097 := strings.Repeat("d/", 2048) + "x"
	tests := []struct {
		path        string
		disk, dirfs string // the error; "" for success
	}{
		{"reference.md", "", ""},
		{"scripts/extract.py", "", ""},
		{"./scripts/../reference.md", "", ""},
		{"link_in", "", `"link_in" passes through a symbolic link; skill files cannot be read through links`},
		{"../csv/SKILL.md", `"../csv/SKILL.md" leads outside the skill's folder`, `"../csv/SKILL.md" leads outside the skill's folder`},
		{"scripts/../../../secret.txt", `"scripts/../../../secret.txt" leads outside the skill's folder`, `"scripts/../../../secret.txt" leads outside the skill's folder`},
		{"..", `".." leads outside the skill's folder`, `".." leads outside the skill's folder`},
		{"/etc/passwd", `"/etc/passwd" is absolute; paths are relative to the skill's folder`, `"/etc/passwd" is absolute; paths are relative to the skill's folder`},
		{filepath.Join(tmp, "secret.txt"), fmt.Sprintf("%q is absolute; paths are relative to the skill's folder", filepath.Join(tmp, "secret.txt")), fmt.Sprintf("%q is absolute; paths are relative to the skill's folder", filepath.Join(tmp, "secret.txt"))},
		{"link_out", `"link_out" leads outside the skill's folder (through a symbolic link)`, `"link_out" passes through a symbolic link; skill files cannot be read through links`},
		{"link_abs", `"link_abs" leads outside the skill's folder (through a symbolic link)`, `"link_abs" passes through a symbolic link; skill files cannot be read through links`},
		{"link_sibling", `"link_sibling" leads outside the skill's folder (through a symbolic link)`, `"link_sibling" passes through a symbolic link; skill files cannot be read through links`},
		{"loop", `"loop": too many levels of symbolic links`, `"loop" passes through a symbolic link; skill files cannot be read through links`},
		{"a\x00b", `the path "a\x00b" contains a control character`, `the path "a\x00b" contains a control character`},
		{"a\nb", `the path "a\nb" contains a control character`, `the path "a\nb" contains a control character`},
		{"\xff", "the path is not valid UTF-8", "the path is not valid UTF-8"},
		{long256, "a name in the path is 256 bytes long; the limit is 255", "a name in the path is 256 bytes long; the limit is 255"},
		{long4097, "the path is 4097 bytes long; the limit is 4096", "the path is 4097 bytes long; the limit is 4096"},
		{"", "the path is empty; give a file path relative to the skill's folder", "the path is empty; give a file path relative to the skill's folder"},
		{".", "the path names the skill's folder itself; give a file path (load lists the files)", "the path names the skill's folder itself; give a file path (load lists the files)"},
		{"scripts", `"scripts" is a directory; give the path of a file (load lists them)`, `"scripts" is a directory; give the path of a file (load lists them)`},
		{"bin.dat", `"bin.dat" is a binary file; read handles text files only`, `"bin.dat" is a binary file; read handles text files only`},
		{"missing.md", `"missing.md" does not exist in the skill's folder (load lists its files)`, `"missing.md" does not exist in the skill's folder (load lists its files)`},
		{"reference.md/x", `"reference.md/x": a part of the path is not a directory`, `"reference.md/x": a part of the path is not a directory`},
	}
	for _, tc := range tests {
		for _, side := range []struct {
			s    *skills.Skills
			want string
		}{{onDisk, tc.disk}, {viaFS, tc.dirfs}} {
			text, err := side.s.ReadFile("pdf", tc.path)
			if strings.Contains(text, secret) {
				t.Fatalf("ReadFile(%.40q) revealed the secret", tc.path)
			}
			switch {
			case side.want == "" && err != nil:
				t.Errorf("ReadFile(%.40q): %v", tc.path, err)
			case side.want != "" && (err == nil || err.Error() != side.want):
				t.Errorf("ReadFile(%.40q) = %q, %v\nwant error %q", tc.path, text, err, side.want)
			}
		}
	}
}

func TestConstructionErrors(t *testing.T) {
	tests := []struct {
		name  string
		files map[string]string // SKILL.md contents by folder
		want  string
	}{
		{"no front matter", map[string]string{"a": "# A\n"}, `a/SKILL.md: no front matter: the file must begin with a line "---", then name: and description:, then "---"`},
		{"unclosed", map[string]string{"a": "---\nname: a\ndescription: b\n"}, `a/SKILL.md: the front matter is not closed by a line "---"`},
		{"bad yaml", map[string]string{"a": "---\nname: [a\n---\n"}, "a/SKILL.md: the front matter is not valid YAML: yaml: line 1: did not find expected ',' or ']'"},
		{"no name", map[string]string{"a": "---\ndescription: b\n---\n"}, "a/SKILL.md: the front matter has no name (a string)"},
		{"name not a string", map[string]string{"a": "---\nname: 3\ndescription: b\n---\n"}, "a/SKILL.md: the front matter has no name (a string)"},
		{"bad name", map[string]string{"a": "---\nname: ../x\ndescription: b\n---\n"}, `a/SKILL.md: the name "../x" is not valid: use 1 to 64 letters, digits, '.', '_' or '-', starting with a letter or digit`},
		{"no description", map[string]string{"a": "---\nname: a\n---\n"}, "a/SKILL.md: the front matter has no description (a string saying when to use the skill)"},
		{"long description", map[string]string{"a": skillMD("a", strings.Repeat("x", 1025), "")}, "a/SKILL.md: the description is 1025 bytes long; the limit is 1024"},
		{"not utf-8", map[string]string{"a": "---\nname: a\ndescription: \xff\n---\n"}, "a/SKILL.md: the file is not valid UTF-8"},
		{"duplicate", map[string]string{"a": skillMD("same", "x", ""), "b/c": skillMD("same", "y", "")}, `skill "same" is defined twice: in DIR/a/SKILL.md and in DIR/b/c/SKILL.md`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			for folder, content := range tc.files {
				write(t, filepath.Join(dir, folder, "SKILL.md"), content)
			}
			_, err := skills.New(skills.FromDir(dir))
			want := strings.ReplaceAll(tc.want, "DIR", dir)
			if !strings.Contains(want, dir) {
				want = "skills: " + filepath.Join(dir, want)
			} else {
				want = "skills: " + want
			}
			if err == nil || err.Error() != want {
				t.Errorf("err = %v\nwant %q", err, want)
			}
		})
	}
}

func TestConstructionErrorsOther(t *testing.T) {
	dir := t.TempDir()
	write(t, filepath.Join(dir, "a", "SKILL.md"), skillMD("a", "x", strings.Repeat("y", 100)))
	if _, err := skills.New(skills.FromDir(dir), skills.WithMaxFileBytes(50)); err == nil || err.Error() != "skills: "+filepath.Join(dir, "a", "SKILL.md")+" is 131 bytes; the limit is 50" {
		t.Errorf("large SKILL.md: %v", err)
	}
	// The same name in two sources names both.
	mem := fstest.MapFS{"x/SKILL.md": {Data: []byte(skillMD("a", "other", ""))}}
	if _, err := skills.New(skills.FromDir(dir), skills.FromFS("pack", mem)); err == nil || err.Error() != `skills: skill "a" is defined twice: in `+filepath.Join(dir, "a", "SKILL.md")+` and in pack:x/SKILL.md` {
		t.Errorf("duplicate across sources: %v", err)
	}
	// A SKILL.md that is a link is refused.
	linked := t.TempDir()
	write(t, filepath.Join(linked, "real.md"), skillMD("r", "x", ""))
	if err := os.MkdirAll(filepath.Join(linked, "s"), 0o755); err != nil {
		t.Fatal(err)
	}
	symlink(t, "../real.md", filepath.Join(linked, "s", "SKILL.md"))
	if _, err := skills.New(skills.FromDir(linked)); err == nil || err.Error() != "skills: "+filepath.Join(linked, "s", "SKILL.md")+" is not a regular file" {
		t.Errorf("linked SKILL.md: %v", err)
	}
	if _, err := skills.New(skills.FromDir("")); err == nil || err.Error() != "skills: FromDir: empty directory path" {
		t.Errorf("empty dir: %v", err)
	}
	if _, err := skills.New(skills.FromFS("", nil)); err == nil || err.Error() != `skills: FromFS needs a label and a file system, got "" and <nil>` {
		t.Errorf("empty FromFS: %v", err)
	}
	if _, err := skills.New(skills.FromDir(filepath.Join(dir, "missing"))); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing dir: %v", err)
	}
	if _, err := skills.New(skills.WithName("a b")); err == nil {
		t.Error("bad name accepted")
	}
	// A tree far too big to be a folder of skills is refused, not scanned.
	big := fstest.MapFS{}
	for i := range 10_001 {
		big[fmt.Sprintf("f%05d", i)] = &fstest.MapFile{}
	}
	if _, err := skills.New(skills.FromFS("big", big)); err == nil || err.Error() != "skills: big holds more than 10000 entries; point it at the folder of skills" {
		t.Errorf("big tree: %v", err)
	}
}

func mount(t *testing.T, s *skills.Skills) tool.Registry {
	t.Helper()
	reg := tool.NewRegistry()
	if err := reg.Mount(context.Background(), s); err != nil {
		t.Fatal(err)
	}
	return reg
}

func callTool(t *testing.T, reg tool.Registry, name, args string) *tool.Result {
	t.Helper()
	b, ok := reg.Lookup(name)
	if !ok {
		t.Fatalf("%s missing", name)
	}
	out, err := b.Call(context.Background(), tool.NoSandbox(), args)
	if err != nil {
		t.Fatalf("%s %s: %v", name, args, err)
	}
	return out.(*tool.Result)
}

func TestTools(t *testing.T) {
	_, dir := fixture(t)
	reg := mount(t, newSkills(t, skills.FromDir(dir)))
	var names []string
	for _, tl := range reg.Tools() {
		names = append(names, tl.Name)
	}
	if strings.Join(names, " ") != "skills__list skills__load skills__read" {
		t.Errorf("tools: %v", names)
	}
	tests := []struct {
		tool, args string
		want       string
		isError    bool
	}{
		{"skills__list", ``, "- csv: Clean up CSV files.\n- excel: Work with spreadsheets.\n- pdf: Extract text and tables from PDF files.", false},
		{"skills__load", `{"name":"pdf"}`, "# Skill: pdf\n\n# PDF\n\nSee reference.md.\n\nFiles in this skill's folder (read them with skills__read and the path):\n- bin.dat\n- reference.md\n- scripts/extract.py\n", false},
		{"skills__load", `{"name":"csv"}`, "# Skill: csv\n\nUse a real CSV parser.\n", false},
		{"skills__load", `{"name":"word"}`, `skills: unknown skill "word"; the skills are csv, excel, pdf`, true},
		{"skills__read", `{"name":"pdf","path":"reference.md"}`, "pdftotext -layout in.pdf out.txt\n", false},
		{"skills__read", `{"name":"pdf","path":"link_out"}`, `"link_out" leads outside the skill's folder (through a symbolic link)`, true},
		{"skills__read", `{"name":"csv","path":"../pdf/reference.md"}`, `"../pdf/reference.md" leads outside the skill's folder`, true},
		{"skills__read", `{"name":"nope","path":"x"}`, `skills: unknown skill "nope"; the skills are csv, excel, pdf`, true},
	}
	for _, tc := range tests {
		res := callTool(t, reg, tc.tool, tc.args)
		if res.Content != tc.want || res.IsError != tc.isError {
			t.Errorf("%s %s:\n got %v %q\nwant %v %q", tc.tool, tc.args, res.IsError, res.Content, tc.isError, tc.want)
		}
	}
	for _, bad := range []struct{ tool, args string }{
		{"skills__list", `{"x":1}`}, {"skills__load", `{}`}, {"skills__load", `{"name":1}`}, {"skills__read", `{"name":"pdf"}`},
	} {
		b, _ := reg.Lookup(bad.tool)
		if _, err := b.Call(context.Background(), tool.NoSandbox(), bad.args); !errors.As(err, new(*tool.ArgumentsError)) {
			t.Errorf("%s %s: %v, want an ArgumentsError", bad.tool, bad.args, err)
		}
	}
	empty := mount(t, newSkills(t))
	if res := callTool(t, empty, "skills__list", `{}`); res.Content != "(no skills are installed)" {
		t.Errorf("empty list: %q", res.Content)
	}
	if res := callTool(t, empty, "skills__load", `{"name":"x"}`); res.Content != `skills: unknown skill "x": no skills are installed` {
		t.Errorf("empty load: %q", res.Content)
	}
}

func TestToolPrefixFlat(t *testing.T) {
	mem := fstest.MapFS{"a/SKILL.md": {Data: []byte(skillMD("a", "first", "body\n"))}, "a/x.md": {Data: []byte("x\n")}}
	s, err := skills.FromOptions(map[string]any{"tool_prefix": "skill_"}, skills.FromFS("mem", mem))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	reg := tool.NewRegistry()
	if err := reg.Mount(context.Background(), s, tool.Flat()); err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tl := range reg.Tools() {
		names = append(names, tl.Name)
	}
	if strings.Join(names, " ") != "skill_list skill_load skill_read" {
		t.Errorf("tools: %v", names)
	}
	if !strings.Contains(s.Prompt(), "call skill_load with its name") || !strings.Contains(s.Prompt(), "with skill_read.") {
		t.Errorf("prompt: %q", s.Prompt())
	}
	if res := callTool(t, reg, "skill_load", `{"name":"a"}`); res.Content != "# Skill: a\n\nbody\n\nFiles in this skill's folder (read them with skill_read and the path):\n- x.md\n" {
		t.Errorf("skill_load: %q", res.Content)
	}
	out, _ := s.Call(context.Background(), "load", map[string]any{"name": "a"})
	if r := out.(*tool.Result); r.Content != `the skills source has no tool "load"; its tools are skill_list, skill_load and skill_read` {
		t.Errorf("unprefixed: %q", r.Content)
	}
}

func TestCallDirect(t *testing.T) {
	s := newSkills(t, skills.FromFS("mem", fstest.MapFS{"a/SKILL.md": {Data: []byte(skillMD("a", "x", "body"))}}))
	for _, tc := range []struct {
		name string
		args map[string]any
		want string
	}{
		{"load", map[string]any{}, `load needs "name", a skill's name`},
		{"read", map[string]any{"name": "a"}, `read needs "path", a file path relative to the skill's folder`},
		{"read", map[string]any{"path": "x"}, `read needs "name", a skill's name`},
		{"delete", nil, `the skills source has no tool "delete"; its tools are list, load and read`},
	} {
		out, err := s.Call(context.Background(), tc.name, tc.args)
		if err != nil {
			t.Fatal(err)
		}
		if res := out.(*tool.Result); !res.IsError || res.Content != tc.want {
			t.Errorf("%s %v: %+v, want %q", tc.name, tc.args, res, tc.want)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := s.Call(ctx, "list", nil); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: %v", err)
	}
}

func TestOptions(t *testing.T) {
	_, dir := fixture(t)
	other := t.TempDir()
	write(t, filepath.Join(other, "z", "SKILL.md"), skillMD("z", "last", ""))
	s, err := skills.FromOptions(map[string]any{"dir": dir, "dirs": []any{other}, "max_file_bytes": 100.0},
		skills.FromFS("pack", fstest.MapFS{"p/SKILL.md": {Data: []byte(skillMD("p", "from a pack", ""))}}))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if n := len(s.List()); n != 5 {
		t.Errorf("%d skills", n)
	}
	bad := []struct {
		opts map[string]any
		want string
	}{
		{map[string]any{"path": "x"}, `skills: unknown option "path"; the options are allow_hard_links, dir, dirs, max_file_bytes, tool_prefix`},
		{map[string]any{"tool_prefix": 1}, "skills: option tool_prefix must be a string, got int"},
		{map[string]any{"dir": 1}, "skills: option dir must be a directory path, got 1"},
		{map[string]any{"dirs": "a"}, "skills: option dirs must be a list of directory paths, got string"},
		{map[string]any{"dirs": []any{"a", ""}}, "skills: option dirs[1] must be a directory path, got "},
		{map[string]any{"max_file_bytes": 0}, "skills: option max_file_bytes must be an integer from 1 to 1073741824, got 0"},
	}
	for _, tc := range bad {
		if err := s.ValidateOptions(tc.opts); err == nil || err.Error() != tc.want {
			t.Errorf("ValidateOptions(%v) = %v, want %q", tc.opts, err, tc.want)
		}
	}
}

// TestCloseWhileReading: Close may run beside calls (the race detector
// watches), may be repeated, and afterwards a read of a directory skill
// fails with os.ErrClosed while what is held in memory still works.
func TestCloseWhileReading(t *testing.T) {
	_, dir := fixture(t)
	s, err := skills.New(skills.FromDir(dir))
	if err != nil {
		t.Fatal(err)
	}
	start := make(chan struct{})
	done := make(chan error, 4)
	for range 4 {
		go func() {
			<-start
			for range 50 {
				text, err := s.ReadFile("pdf", "reference.md")
				if err != nil && !errors.Is(err, os.ErrClosed) {
					done <- err
					return
				}
				if err == nil && text != "pdftotext -layout in.pdf out.txt\n" {
					done <- fmt.Errorf("read %q", text)
					return
				}
			}
			done <- nil
		}()
	}
	close(start)
	if err := s.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
	for range 4 {
		if err := <-done; err != nil {
			t.Errorf("a read beside Close: %v", err)
		}
	}
	if err := s.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	if _, err := s.ReadFile("pdf", "reference.md"); !errors.Is(err, os.ErrClosed) || err.Error() != `the folder of skill "pdf" cannot be opened: openat pdf: file already closed` {
		t.Errorf("ReadFile after Close: %v", err)
	}
	if body, err := s.Load("pdf"); err != nil || body != "# PDF\n\nSee reference.md.\n" {
		t.Errorf("Load after Close: %q, %v", body, err)
	}
}
