package skills

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"unicode"
	"unicode/utf8"

	"go.yaml.in/yaml/v3"

	"github.com/lodeworks/lode/tool"
	"github.com/lodeworks/lode/x/tool/internal/hardlink"
)

// DefaultName is the name the skills source is mounted under.
const DefaultName = "skills"

// Limits. Discovery fails loudly beyond maxVisit rather than scanning a
// tree that was never meant to hold skills.
const (
	DefaultMaxFileBytes = 1 << 20 // a SKILL.md or a file a skill references
	maxDepth            = 8       // directory levels searched for SKILL.md
	maxVisit            = 10_000  // entries visited per source
	maxListedFiles      = 100     // files of a skill listed by load
	maxDescription      = 1024
	skillFile           = "SKILL.md"
)

// ErrUnknownSkill is matched by errors about a skill name that is not
// installed.
var ErrUnknownSkill = errors.New("skills: unknown skill")

var validName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$`)

// Skill describes one installed skill.
type Skill struct {
	// Name and Description come from the front matter of SKILL.md.
	Name        string
	Description string
	// Source is where the skill was found: the directory given to
	// FromDir, or the label given to FromFS.
	Source string
	// Dir is the skill's folder inside its source ("." for the top).
	Dir string
	// Metadata holds the other front-matter fields.
	Metadata map[string]any

	loc string
}

// Location names the skill's SKILL.md for people: a file path for a
// directory source, "label:dir/SKILL.md" for a file system.
func (s Skill) Location() string { return s.loc }

type source struct {
	label string
	dir   string // for FromDir
	fsys  fs.FS  // for FromFS
	root  *os.Root
	// escape is os.Root's error for a path leading out, which it does not
	// export; learnt when the root is opened.
	escape error
}

// Option configures New: sources of skills, the name, limits.
type Option func(*config)

type config struct {
	name      string
	prefix    string
	sources   []*source
	maxBytes  int64
	hardLinks bool
	errs      []error
}

// FromDir finds skills under the directory path, confined to it with
// os.Root: no symbolic link can lead a read out of it.
func FromDir(path string) Option {
	return func(c *config) {
		if path == "" {
			c.errs = append(c.errs, errors.New("skills: FromDir: empty directory path"))
			return
		}
		c.sources = append(c.sources, &source{label: path, dir: path})
	}
}

// FromFS finds skills in fsys — an embed.FS a pack ships, or any fs.FS —
// under label, which names the source in errors (a pack's name, say). A
// read never follows a symbolic link when fsys can tell links apart
// (fs.ReadLinkFS, as os.DirFS can).
func FromFS(label string, fsys fs.FS) Option {
	return func(c *config) {
		if label == "" || fsys == nil {
			c.errs = append(c.errs, fmt.Errorf("skills: FromFS needs a label and a file system, got %q and %v", label, fsys))
			return
		}
		c.sources = append(c.sources, &source{label: label, fsys: fsys})
	}
}

// WithName sets the source name (default "skills"): the tools are
// "<name>__list", "<name>__load" and "<name>__read".
func WithName(name string) Option { return func(c *config) { c.name = name } }

// WithToolPrefix declares the tools as prefix+"list", prefix+"load" and
// prefix+"read" (say "skill_load"), for a flat mount beside other packs, as
// a pack catalog does.
func WithToolPrefix(prefix string) Option { return func(c *config) { c.prefix = prefix } }

// WithMaxFileBytes bounds the size of a SKILL.md and of a file read from a
// skill (default 1 MiB).
func WithMaxFileBytes(n int64) Option { return func(c *config) { c.maxBytes = n } }

// AllowHardLinks accepts files with more than one hard link, for a SKILL.md
// and for read. By default they are refused: a folder opened with os.Root
// keeps paths and symbolic links inside it, but a hard link is the file
// itself under another name, and one made in a skill's folder to a file
// elsewhere would pass every path check. Allow them only for directories
// no one else could have linked into.
func AllowHardLinks() Option { return func(c *config) { c.hardLinks = true } }

// Skills is a set of skills discovered from directories and file systems,
// offered to a model as a tool source: list, load (a skill's instructions)
// and read (a file inside a skill's folder). It is safe for concurrent use;
// Close releases the directories.
type Skills struct {
	name      string
	prefix    string
	maxBytes  int64
	hardLinks bool
	sources   []*source
	list      []*entry // sorted by name
	byName    map[string]*entry
}

type entry struct {
	Skill
	src  *source
	body string
}

// New discovers every SKILL.md in the given sources. A skill whose front
// matter is missing or invalid, or a name defined twice (in one source or
// across two), fails with an error naming the files.
func New(opts ...Option) (*Skills, error) {
	c := &config{}
	for _, o := range opts {
		o(c)
	}
	if len(c.errs) > 0 {
		return nil, errors.Join(c.errs...)
	}
	if c.name == "" {
		c.name = DefaultName
	}
	if err := tool.ValidateName(c.name); err != nil {
		return nil, fmt.Errorf("skills: name: %w", err)
	}
	if c.maxBytes <= 0 {
		c.maxBytes = DefaultMaxFileBytes
	}
	s := &Skills{name: c.name, prefix: c.prefix, maxBytes: c.maxBytes, hardLinks: c.hardLinks, sources: c.sources, byName: map[string]*entry{}}
	for _, src := range c.sources {
		if src.dir != "" {
			r, err := os.OpenRoot(src.dir)
			if err != nil {
				s.Close()
				return nil, fmt.Errorf("skills: %w", err)
			}
			src.root, src.fsys = r, r.FS()
			_, err = r.Lstat("..")
			var pe *fs.PathError
			if errors.As(err, &pe) {
				src.escape = pe.Err
			}
		}
		if err := s.discover(src); err != nil {
			s.Close()
			return nil, err
		}
	}
	slices.SortFunc(s.list, func(a, b *entry) int { return strings.Compare(a.Name, b.Name) })
	return s, nil
}

// Close releases the directories of FromDir sources; reading a file of
// one of their skills fails afterwards (errors.Is os.ErrClosed), while
// List, Prompt and Load go on working from memory. Close may be called
// more than once, and while calls are in flight.
func (s *Skills) Close() error {
	var errs []error
	for _, src := range s.sources {
		if src.root != nil {
			// os.Root's Close is safe to repeat and to run beside its
			// other methods, so the field is left as it is for them.
			errs = append(errs, src.root.Close())
		}
	}
	return errors.Join(errs...)
}

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

// Name returns the source name.
func (s *Skills) Name() string { return s.name }

// List returns the skills sorted by name.
func (s *Skills) List() []Skill {
	out := make([]Skill, len(s.list))
	for i, e := range s.list {
		out[i] = e.Skill
	}
	return out
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// listing renders "name: description" lines.
func (s *Skills) listing() string {
	var sb strings.Builder
	for _, e := range s.list {
		fmt.Fprintf(&sb, "- %s: %s\n", e.Name, oneLine(e.Description))
	}
	return sb.String()
}

// toolName is what a tool is called once mounted: "<name>__load" by
// default, prefix+"load" with WithToolPrefix (mounted flat).
func (s *Skills) toolName(base string) string {
	if s.prefix != "" {
		return s.prefix + base
	}
	return s.name + tool.Separator + base
}

// Prompt renders the skills for a system prompt: what they are, how to use
// them (naming the tools as mounted by default, "<name>__load", or with
// the tool prefix), and one line per skill. It is empty when there are no
// skills.
func (s *Skills) Prompt() string {
	if len(s.list) == 0 {
		return ""
	}
	return fmt.Sprintf("You have skills: instructions for particular tasks, with files they may refer to. "+
		"When a task matches a skill's description, call %s with its name before you start, and follow it; "+
		"read the files it mentions with %s.\n\nSkills:\n%s", s.toolName("load"), s.toolName("read"), s.listing())
}

func (s *Skills) lookup(name string) (*entry, error) {
	if e, ok := s.byName[name]; ok {
		return e, nil
	}
	names := make([]string, 0, len(s.list))
	for _, e := range s.list {
		names = append(names, e.Name)
	}
	if len(names) == 0 {
		return nil, fmt.Errorf("%w %q: no skills are installed", ErrUnknownSkill, name)
	}
	return nil, fmt.Errorf("%w %q; the skills are %s", ErrUnknownSkill, name, strings.Join(names, ", "))
}

// Load returns a skill's instructions: the body of its SKILL.md.
func (s *Skills) Load(name string) (string, error) {
	e, err := s.lookup(name)
	if err != nil {
		return "", err
	}
	return e.body, nil
}

// Files lists the files in a skill's folder besides SKILL.md, relative to
// it, sorted; at most 100, and whether there were more. Links and
// anything else that is not a regular file are left out.
func (s *Skills) Files(name string) ([]string, bool, error) {
	e, err := s.lookup(name)
	if err != nil {
		return nil, false, err
	}
	fsys, closeFn, err := e.folder()
	if err != nil {
		return nil, false, err
	}
	defer closeFn()
	var files []string
	more := false
	visited := 0
	err = fs.WalkDir(fsys, e.base(), func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil // an unreadable corner is left out of the list
		}
		if visited++; visited > maxVisit {
			more = true
			return fs.SkipAll
		}
		rel := e.rel(p)
		if d.IsDir() && strings.Count(rel, "/") >= maxDepth {
			return fs.SkipDir
		}
		if !d.Type().IsRegular() || rel == skillFile {
			return nil
		}
		if len(files) == maxListedFiles {
			more = true
			return fs.SkipAll
		}
		files = append(files, rel)
		return nil
	})
	return files, more, err
}

// folder returns a file system holding the skill's folder: for a directory
// source an os.Root opened on the folder itself, so no link can lead out of
// it; otherwise the source's file system, with base() the folder in it.
func (e *entry) folder() (fs.FS, func(), error) {
	if e.src.root != nil {
		r, err := e.src.root.OpenRoot(e.Dir)
		if err != nil {
			return nil, nil, fmt.Errorf("the folder of skill %q cannot be opened: %w", e.Name, err)
		}
		return r.FS(), func() { r.Close() }, nil
	}
	return e.src.fsys, func() {}, nil
}

func (e *entry) base() string {
	if e.src.root != nil {
		return "."
	}
	return e.Dir
}

// rel makes a path in folder() relative to the skill's folder.
func (e *entry) rel(p string) string {
	b := e.base()
	if b == "." {
		return p
	}
	if p == b {
		return "."
	}
	return strings.TrimPrefix(p, b+"/")
}

// ReadFile returns a file of a skill's folder by its path relative to the
// folder. Paths that are absolute, lead out of the folder, contain control
// characters or pass through a symbolic link out of it are refused.
func (s *Skills) ReadFile(name, rel string) (string, error) {
	e, err := s.lookup(name)
	if err != nil {
		return "", err
	}
	c, err := cleanRel(rel)
	if err != nil {
		return "", err
	}
	fsys, closeFn, err := e.folder()
	if err != nil {
		return "", err
	}
	defer closeFn()
	full := path.Join(e.base(), c)
	if e.src.root == nil {
		// A file system that knows links is walked element by element:
		// no link is followed, wherever it leads.
		if _, ok := fsys.(fs.ReadLinkFS); ok {
			p := e.base()
			for elem := range strings.SplitSeq(c, "/") {
				p = path.Join(p, elem)
				info, err := fs.Lstat(fsys, p)
				if err != nil {
					return "", describe(c, err, e.src.escape)
				}
				if info.Mode()&fs.ModeSymlink != 0 {
					return "", fmt.Errorf("%q passes through a symbolic link; skill files cannot be read through links", c)
				}
			}
		}
	}
	f, err := fsys.Open(full)
	if err != nil {
		return "", describe(c, err, e.src.escape)
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return "", describe(c, err, e.src.escape)
	}
	if info.IsDir() {
		return "", fmt.Errorf("%q is a directory; give the path of a file (load lists them)", c)
	}
	if !info.Mode().IsRegular() {
		return "", fmt.Errorf("%q is not a regular file", c)
	}
	if !s.hardLinks && hardlink.Shared(info) {
		return "", fmt.Errorf("%q has %d hard links, so it is refused: the same file may also be outside the skill's folder. Only files with a single link can be read here", c, hardlink.Count(info))
	}
	if info.Size() > s.maxBytes {
		return "", fmt.Errorf("%q is %d bytes; the limit is %d", c, info.Size(), s.maxBytes)
	}
	data, err := io.ReadAll(io.LimitReader(f, s.maxBytes+1))
	if err != nil {
		return "", describe(c, err, e.src.escape)
	}
	if int64(len(data)) > s.maxBytes {
		return "", fmt.Errorf("%q is larger than the %d-byte limit", c, s.maxBytes)
	}
	if bytes.IndexByte(data, 0) >= 0 {
		return "", fmt.Errorf("%q is a binary file; read handles text files only", c)
	}
	return string(data), nil
}

// cleanRel checks a path a model gave, relative to a skill's folder.
func cleanRel(p string) (string, error) {
	const maxPath, maxName = 4096, 255
	switch {
	case p == "":
		return "", errors.New("the path is empty; give a file path relative to the skill's folder")
	case len(p) > maxPath:
		return "", fmt.Errorf("the path is %d bytes long; the limit is %d", len(p), maxPath)
	case !utf8.ValidString(p):
		return "", errors.New("the path is not valid UTF-8")
	case strings.ContainsFunc(p, unicode.IsControl):
		return "", fmt.Errorf("the path %q contains a control character", p)
	case strings.HasPrefix(p, "/") || filepath.IsAbs(p):
		return "", fmt.Errorf("%q is absolute; paths are relative to the skill's folder", p)
	}
	c := path.Clean(p)
	if c == ".." || strings.HasPrefix(c, "../") {
		return "", fmt.Errorf("%q leads outside the skill's folder", p)
	}
	if c == "." {
		return "", errors.New("the path names the skill's folder itself; give a file path (load lists the files)")
	}
	for elem := range strings.SplitSeq(c, "/") {
		if len(elem) > maxName {
			return "", fmt.Errorf("a name in the path is %d bytes long; the limit is %d", len(elem), maxName)
		}
	}
	if !fs.ValidPath(c) {
		return "", fmt.Errorf("%q is not a valid path", p)
	}
	return c, nil
}

// describe turns a file error into a sentence without host paths.
func describe(rel string, err error, escape error) error {
	var pe *fs.PathError
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("%q does not exist in the skill's folder (load lists its files)", rel)
	case errors.Is(err, syscall.ELOOP):
		return fmt.Errorf("%q: too many levels of symbolic links", rel)
	case errors.Is(err, syscall.ENOTDIR):
		return fmt.Errorf("%q: a part of the path is not a directory", rel)
	case errors.Is(err, fs.ErrPermission):
		return fmt.Errorf("%q: permission denied", rel)
	case escape != nil && errors.Is(err, escape):
		return fmt.Errorf("%q leads outside the skill's folder (through a symbolic link)", rel)
	case errors.As(err, &pe):
		return fmt.Errorf("%q: %v", rel, pe.Err)
	}
	return fmt.Errorf("%q: %v", rel, err)
}

// LoadArgs are the arguments of the load tool.
type LoadArgs struct {
	Name string `json:"name" jsonschema_description:"The skill's name, as list gives it"`
}

// ReadArgs are the arguments of the read tool.
type ReadArgs struct {
	Name string `json:"name" jsonschema_description:"The skill's name"`
	Path string `json:"path" jsonschema_description:"A file in the skill's folder, relative to it (load lists them)"`
}

// ListArgs are the arguments of the list tool: none.
type ListArgs struct{}

// Tools lists list, load and read.
func (s *Skills) Tools(context.Context) ([]tool.Tool, error) {
	listSchema, err := tool.SchemaFor[ListArgs]()
	if err != nil {
		return nil, err
	}
	loadSchema, err := tool.SchemaFor[LoadArgs]()
	if err != nil {
		return nil, err
	}
	readSchema, err := tool.SchemaFor[ReadArgs]()
	if err != nil {
		return nil, err
	}
	ro := tool.Hints{ReadOnly: true, Idempotent: true}
	return []tool.Tool{
		{Name: s.prefix + "list", Description: "List the skills: instructions for particular tasks, one line each with when to use it.", Schema: listSchema, Hints: ro},
		{Name: s.prefix + "load", Description: "Load a skill's instructions by name, and see the files in its folder. Load a skill before doing the task it describes.", Schema: loadSchema, Hints: ro},
		{Name: s.prefix + "read", Description: "Read a file from a skill's folder, by a path relative to it.", Schema: readSchema, Hints: ro},
	}, nil
}

// Call runs list, load or read. An unknown skill or a refused path is a
// *tool.Result with IsError set.
func (s *Skills) Call(ctx context.Context, name string, args map[string]any) (any, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	fail := func(format string, a ...any) (any, error) {
		return &tool.Result{IsError: true, Content: fmt.Sprintf(format, a...)}, nil
	}
	str := func(key string) (string, bool) {
		v, ok := args[key].(string)
		return v, ok && v != ""
	}
	base, ok := strings.CutPrefix(name, s.prefix)
	if !ok {
		base = ""
	}
	switch base {
	case "list":
		if len(s.list) == 0 {
			return &tool.Result{Content: "(no skills are installed)", Value: []Skill{}}, nil
		}
		return &tool.Result{Content: strings.TrimSuffix(s.listing(), "\n"), Value: s.List()}, nil
	case "load":
		skill, ok := str("name")
		if !ok {
			return fail(`load needs "name", a skill's name`)
		}
		e, err := s.lookup(skill)
		if err != nil {
			return fail("%v", err)
		}
		files, more, err := s.Files(skill)
		if err != nil {
			return fail("%v", err)
		}
		var sb strings.Builder
		fmt.Fprintf(&sb, "# Skill: %s\n\n%s", e.Name, e.body)
		if len(files) > 0 {
			if !strings.HasSuffix(e.body, "\n") {
				sb.WriteByte('\n')
			}
			fmt.Fprintf(&sb, "\nFiles in this skill's folder (read them with %s and the path):\n", s.toolName("read"))
			for _, f := range files {
				fmt.Fprintf(&sb, "- %s\n", f)
			}
			if more {
				sb.WriteString("- … (more files not listed)\n")
			}
		}
		return &tool.Result{Content: sb.String(), Value: e.Skill}, nil
	case "read":
		skill, ok := str("name")
		if !ok {
			return fail(`read needs "name", a skill's name`)
		}
		rel, ok := args["path"].(string)
		if !ok {
			return fail(`read needs "path", a file path relative to the skill's folder`)
		}
		text, err := s.ReadFile(skill, rel)
		if err != nil {
			return fail("%v", err)
		}
		return &tool.Result{Content: text}, nil
	}
	return fail("the %s source has no tool %q; its tools are %slist, %sload and %sread", s.name, name, s.prefix, s.prefix, s.prefix)
}
