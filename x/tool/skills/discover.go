package skills

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path"
	"path/filepath"
	"strings"
	"unicode/utf8"

	"go.yaml.in/yaml/v3"

	"github.com/lodeworks/lode/x/tool/internal/hardlink"
)

func (src *source) location(dir string) string {
	if src.dir != "" {
		return filepath.Join(src.dir, filepath.FromSlash(dir), skillFile)
	}
	return src.label + ":" + path.Join(dir, skillFile)
}

// discover walks src for folders holding a SKILL.md; a skill's folder is
// not searched further.
func (s *Skills) discover(src *source) error {
	visited := 0
	err := fs.WalkDir(src.fsys, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return fmt.Errorf("skills: %s: %w", src.label, err)
		}
		if visited++; visited > maxVisit {
			return fmt.Errorf("skills: %s holds more than %d entries; point it at the folder of skills", src.label, maxVisit)
		}
		if !d.IsDir() {
			return nil
		}
		if p != "." && strings.Count(p, "/")+1 > maxDepth {
			return fs.SkipDir
		}
		info, err := lstat(src.fsys, path.Join(p, skillFile))
		if err != nil {
			return nil // not a skill folder
		}
		if !info.Mode().IsRegular() {
			return fmt.Errorf("skills: %s is not a regular file", src.location(p))
		}
		if err := s.add(src, p, info.Size()); err != nil {
			return err
		}
		return fs.SkipDir
	})
	return err
}

func lstat(fsys fs.FS, name string) (fs.FileInfo, error) {
	if _, ok := fsys.(fs.ReadLinkFS); ok {
		return fs.Lstat(fsys, name)
	}
	return fs.Stat(fsys, name)
}

func (s *Skills) add(src *source, dir string, size int64) error {
	loc := src.location(dir)
	if size > s.maxBytes {
		return fmt.Errorf("skills: %s is %d bytes; the limit is %d", loc, size, s.maxBytes)
	}
	data, err := s.readSkillFile(src.fsys, path.Join(dir, skillFile), loc)
	if err != nil {
		return err
	}
	meta, body, err := parseSkill(data)
	if err != nil {
		return fmt.Errorf("skills: %s: %w", loc, err)
	}
	name, _ := meta["name"].(string)
	desc, _ := meta["description"].(string)
	delete(meta, "name")
	delete(meta, "description")
	e := &entry{Skill: Skill{Name: name, Description: strings.TrimSpace(desc), Source: src.label, Dir: dir, Metadata: meta, loc: loc}, src: src, body: body}
	if old, ok := s.byName[name]; ok {
		return fmt.Errorf("skills: skill %q is defined twice: in %s and in %s", name, old.loc, loc)
	}
	s.byName[name] = e
	s.list = append(s.list, e)
	return nil
}

// readSkillFile reads a SKILL.md, checking the file it opened: with a
// single link unless hard links are allowed, and within the size limit.
// loc names the file in errors.
func (s *Skills) readSkillFile(fsys fs.FS, name, loc string) ([]byte, error) {
	f, err := fsys.Open(name)
	if err != nil {
		return nil, fmt.Errorf("skills: %s: %w", loc, err)
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("skills: %s: %w", loc, err)
	}
	if !s.hardLinks && hardlink.Shared(info) {
		return nil, fmt.Errorf("skills: %s has %d hard links; the same file may also be outside the skills directory, so it is refused (AllowHardLinks, or the pack option allow_hard_links, accepts it)", loc, hardlink.Count(info))
	}
	data, err := io.ReadAll(io.LimitReader(f, s.maxBytes+1))
	if err != nil {
		return nil, fmt.Errorf("skills: %s: %w", loc, err)
	}
	if int64(len(data)) > s.maxBytes {
		return nil, fmt.Errorf("skills: %s is larger than the %d-byte limit", loc, s.maxBytes)
	}
	return data, nil
}

// parseSkill splits SKILL.md into its YAML front matter and its Markdown
// body, and checks the name and the description.
func parseSkill(data []byte) (map[string]any, string, error) {
	data = bytes.TrimPrefix(data, []byte("\ufeff"))
	if !utf8.Valid(data) {
		return nil, "", errors.New("the file is not valid UTF-8")
	}
	text := strings.ReplaceAll(string(data), "\r\n", "\n")
	rest, ok := strings.CutPrefix(text, "---\n")
	if !ok {
		return nil, "", errors.New("no front matter: the file must begin with a line \"---\", then name: and description:, then \"---\"")
	}
	var front, body string
	if i := strings.Index(rest, "\n---\n"); i >= 0 {
		front, body = rest[:i], rest[i+len("\n---\n"):]
	} else if strings.HasSuffix(rest, "\n---") {
		front = strings.TrimSuffix(rest, "\n---")
	} else if strings.HasPrefix(rest, "---\n") || rest == "---" {
		front, body = "", strings.TrimPrefix(strings.TrimPrefix(rest, "---"), "\n")
	} else {
		return nil, "", errors.New("the front matter is not closed by a line \"---\"")
	}
	meta := map[string]any{}
	if err := yaml.Unmarshal([]byte(front), &meta); err != nil {
		return nil, "", fmt.Errorf("the front matter is not valid YAML: %w", err)
	}
	if meta == nil {
		meta = map[string]any{}
	}
	name, ok := meta["name"].(string)
	switch {
	case !ok || name == "":
		return nil, "", errors.New("the front matter has no name (a string)")
	case !validName.MatchString(name):
		return nil, "", fmt.Errorf("the name %q is not valid: use 1 to 64 letters, digits, '.', '_' or '-', starting with a letter or digit", name)
	}
	desc, ok := meta["description"].(string)
	switch {
	case !ok || strings.TrimSpace(desc) == "":
		return nil, "", errors.New("the front matter has no description (a string saying when to use the skill)")
	case len(desc) > maxDescription:
		return nil, "", fmt.Errorf("the description is %d bytes long; the limit is %d", len(desc), maxDescription)
	}
	return meta, strings.TrimLeft(body, "\n"), nil
}
