package skills

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"regexp"
	"slices"
	"strings"

	"github.com/lodeworks/lode/tool"
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
