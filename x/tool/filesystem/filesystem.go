package filesystem

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"slices"
	"strings"

	"github.com/lodeworks/lode/tool"
	"github.com/lodeworks/lode/x/tool/internal/optparse"
)

// DefaultName is the name a filesystem is mounted under.
const DefaultName = "filesystem"

// Defaults of the limits; a zero option value means the default.
const (
	DefaultMaxReadBytes  = 4 << 20 // what one read (or an edited file) may be
	DefaultMaxWriteBytes = 4 << 20 // what one write (or an edit's result) may be
	DefaultMaxResults    = 200     // lines of a list, glob or search result
	DefaultMaxVisit      = 100_000 // directory entries one list, glob or search may visit
	MaxListDepth         = 10      // the deepest a list may go
)

// ErrNoRoot is returned by New when no root directory is given: a
// filesystem has no default root, the application must assign one.
var ErrNoRoot = errors.New("filesystem: no root directory given; the application must assign one (there is no default)")

// Option configures a filesystem.
type Option func(*FS)

// WithName sets the source name (default "filesystem"), which prefixes the
// tools' names when mounted: "<name>__read".
func WithName(name string) Option { return func(f *FS) { f.name = name } }

// WithToolPrefix declares the tools as prefix+"read" and so on (say
// "fs_read"), for a flat mount beside other packs, as a pack catalog does.
func WithToolPrefix(prefix string) Option { return func(f *FS) { f.prefix = prefix } }

// ReadOnly offers only the tools that do not change anything (read, list,
// glob, search, stat); write and edit are refused if called anyway.
func ReadOnly() Option { return func(f *FS) { f.readOnly = true } }

// AllowHardLinks lets the tools read and write regular files that have
// more than one hard link. By default they are refused: os.Root keeps
// paths and symbolic links inside the root, but a hard link is the file
// itself under another name, and one made inside the root to a file
// outside it would pass every path check. Allow them only for a root
// where no one could have linked to a file outside it.
func AllowHardLinks() Option { return func(f *FS) { f.hardLinks = true } }

// WithMaxReadBytes bounds what one read returns and the size of a file edit
// may change (default 4 MiB).
func WithMaxReadBytes(n int64) Option { return func(f *FS) { f.maxRead = n } }

// WithMaxWriteBytes bounds what one write or edit may write (default 4 MiB).
func WithMaxWriteBytes(n int64) Option { return func(f *FS) { f.maxWrite = n } }

// WithMaxResults bounds the lines of a list, glob or search result
// (default 200).
func WithMaxResults(n int) Option { return func(f *FS) { f.maxResults = n } }

// WithMaxVisit bounds the directory entries one list, glob or search may
// visit (default 100000).
func WithMaxVisit(n int) Option { return func(f *FS) { f.maxVisit = n } }

// FS offers file tools confined to one root directory with os.Root: no path
// given by a model can reach outside it, through "..", an absolute path or a
// symbolic link. Paths in results are relative to the root. It is safe for
// concurrent use; Close releases the root.
type FS struct {
	name       string
	prefix     string
	root       *os.Root
	readOnly   bool
	hardLinks  bool // AllowHardLinks
	maxRead    int64
	maxWrite   int64
	maxResults int
	maxVisit   int
	escape     error // os.Root's error for a path that leads out
}

// New opens a filesystem confined to the directory root. An empty root is
// ErrNoRoot; a root that cannot be opened as a directory is an error.
func New(root string, opts ...Option) (*FS, error) {
	if root == "" {
		return nil, ErrNoRoot
	}
	f := &FS{}
	for _, o := range opts {
		o(f)
	}
	if f.name == "" {
		f.name = DefaultName
	}
	if err := tool.ValidateName(f.name); err != nil {
		return nil, fmt.Errorf("filesystem: name: %w", err)
	}
	if f.maxRead <= 0 {
		f.maxRead = DefaultMaxReadBytes
	}
	if f.maxWrite <= 0 {
		f.maxWrite = DefaultMaxWriteBytes
	}
	if f.maxResults <= 0 {
		f.maxResults = DefaultMaxResults
	}
	if f.maxVisit <= 0 {
		f.maxVisit = DefaultMaxVisit
	}
	r, err := os.OpenRoot(root)
	if err != nil {
		return nil, fmt.Errorf("filesystem: open root: %w", err)
	}
	f.root = r
	// os.Root does not export the error it gives for a path leading out;
	// learn it once, so that error can be told apart from the others.
	_, err = r.Lstat("..")
	var pe *fs.PathError
	if errors.As(err, &pe) {
		f.escape = pe.Err
	}
	return f, nil
}

// Close releases the root directory.
func (f *FS) Close() error { return f.root.Close() }

// Name returns the source name.
func (f *FS) Name() string { return f.name }

// ReadOnly reports whether the filesystem refuses to change anything.
func (f *FS) ReadOnly() bool { return f.readOnly }

// ReadArgs are the arguments of the read tool.
type ReadArgs struct {
	Path        string `json:"path" jsonschema_description:"Path of the file, relative to the root"`
	Offset      int    `json:"offset,omitempty" jsonschema:"minimum=1" jsonschema_description:"First line to return, counting from 1 (default 1)"`
	Limit       int    `json:"limit,omitempty" jsonschema:"minimum=1" jsonschema_description:"Most lines to return (default: to the end of the file, within the size limit)"`
	LineNumbers bool   `json:"line_numbers,omitempty" jsonschema_description:"Prefix each line with its number and a tab"`
}

// WriteArgs are the arguments of the write tool.
type WriteArgs struct {
	Path    string `json:"path" jsonschema_description:"Path of the file, relative to the root; missing parent directories are created"`
	Content string `json:"content" jsonschema_description:"The whole new content of the file"`
}

// EditArgs are the arguments of the edit tool.
type EditArgs struct {
	Path       string `json:"path" jsonschema_description:"Path of the file, relative to the root"`
	OldString  string `json:"old_string" jsonschema:"minLength=1" jsonschema_description:"Text to replace; it must match the file exactly (whitespace included) and occur once unless replace_all is set"`
	NewString  string `json:"new_string" jsonschema_description:"Replacement text"`
	ReplaceAll bool   `json:"replace_all,omitempty" jsonschema_description:"Replace every occurrence instead of exactly one"`
}

// ListArgs are the arguments of the list tool.
type ListArgs struct {
	Path  string `json:"path,omitempty" jsonschema_description:"Directory to list, relative to the root (default: the root)"`
	Depth int    `json:"depth,omitempty" jsonschema:"minimum=1,maximum=10" jsonschema_description:"How many levels to descend: 1 lists only the directory itself (default 1)"`
}

// GlobArgs are the arguments of the glob tool.
type GlobArgs struct {
	Pattern string `json:"pattern" jsonschema_description:"Glob pattern relative to path: * ? and [a-z] match within a name; ** matches any number of directories (e.g. **/*.go)"`
	Path    string `json:"path,omitempty" jsonschema_description:"Directory to search from, relative to the root (default: the root)"`
}

// SearchArgs are the arguments of the search tool.
type SearchArgs struct {
	Query      string `json:"query" jsonschema:"minLength=1" jsonschema_description:"Plain text to find (not a regular expression)"`
	Path       string `json:"path,omitempty" jsonschema_description:"File or directory to search, relative to the root (default: the root)"`
	Glob       string `json:"glob,omitempty" jsonschema_description:"Only search files whose path relative to path matches this glob (e.g. **/*.md)"`
	IgnoreCase bool   `json:"ignore_case,omitempty" jsonschema_description:"Match regardless of letter case"`
}

// StatArgs are the arguments of the stat tool.
type StatArgs struct {
	Path string `json:"path" jsonschema_description:"Path relative to the root"`
}

type spec struct {
	name, description string
	schema            func() ([]byte, error)
	hints             tool.Hints
	writes            bool
}

// readOnlyHints mark what the tools that read say: the files under the
// root are taken as the user's own, so reading them (names included)
// labels the thread private; a flow rule may then keep them from being
// sent out. A root holding downloaded pages is better mounted from an MCP
// server, whose output counts as untrusted.
var readOnlyHints = tool.Hints{ReadOnly: true, Idempotent: true, Private: true}

func specs() []spec {
	return []spec{
		{"edit", "Replace exact text in a file: old_string must occur exactly once (or set replace_all). Read the file first to copy the text exactly.",
			schemaOf[EditArgs], tool.Hints{Destructive: true}, true},
		{"glob", "Find files and directories whose paths match a glob pattern (** crosses directories). Paths are relative to the root.",
			schemaOf[GlobArgs], readOnlyHints, false},
		{"list", "List a directory: files with their sizes, directories with a trailing /. Set depth to descend.",
			schemaOf[ListArgs], readOnlyHints, false},
		{"read", "Read a text file, whole or a range of lines (offset, limit), optionally with line numbers.",
			schemaOf[ReadArgs], readOnlyHints, false},
		{"search", "Search file contents for plain text; returns path:line: text for each matching line.",
			schemaOf[SearchArgs], readOnlyHints, false},
		{"stat", "Describe a path: its type, size, permissions and modification time.",
			schemaOf[StatArgs], readOnlyHints, false},
		{"write", "Create or overwrite a file with the given content; missing parent directories are created.",
			schemaOf[WriteArgs], tool.Hints{Destructive: true, Idempotent: true}, true},
	}
}

func schemaOf[T any]() ([]byte, error) { return tool.SchemaFor[T]() }

// Tools lists the tools: read, list, glob, search and stat, plus write and
// edit unless the filesystem is read-only.
func (f *FS) Tools(context.Context) ([]tool.Tool, error) {
	var out []tool.Tool
	for _, s := range specs() {
		if s.writes && f.readOnly {
			continue
		}
		schema, err := s.schema()
		if err != nil {
			return nil, err
		}
		out = append(out, tool.Tool{Name: f.prefix + s.name, Description: s.description, Schema: schema, Hints: s.hints})
	}
	return out, nil
}

// Call runs one tool. Whatever the model got wrong — a path leading out of
// the root, a missing file, an ambiguous edit — is a *tool.Result with
// IsError set; an error is returned only for a cancelled context.
func (f *FS) Call(ctx context.Context, name string, args map[string]any) (any, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	a := argReader{args: args}
	var res *tool.Result
	base, ok := strings.CutPrefix(name, f.prefix)
	if !ok {
		base = ""
	}
	switch base {
	case "read":
		res = f.read(ctx, &a)
	case "write", "edit":
		if f.readOnly {
			return failf("%s is not available: this filesystem is read-only", name), nil
		}
		if base == "write" {
			res = f.write(&a)
		} else {
			res = f.edit(&a)
		}
	case "list":
		res = f.list(ctx, &a)
	case "glob":
		res = f.glob(ctx, &a)
	case "search":
		res = f.search(ctx, &a)
	case "stat":
		res = f.stat(&a)
	default:
		var names []string
		tools, _ := f.Tools(ctx)
		for _, t := range tools {
			names = append(names, t.Name)
		}
		return failf("the %s source has no tool %q; its tools are %s", f.name, name, strings.Join(names, ", ")), nil
	}
	if err := ctx.Err(); err != nil && res != nil && res.IsError {
		return nil, err
	}
	return res, nil
}

func failf(format string, a ...any) *tool.Result {
	return &tool.Result{IsError: true, Content: fmt.Sprintf(format, a...)}
}

// argReader reads validated arguments. The registry has checked them
// against the schema, but Call may be used directly, so types are checked
// again; the first problem is kept and reported.
type argReader struct {
	args map[string]any
	err  string
}

func (a *argReader) fail(format string, v ...any) {
	if a.err == "" {
		a.err = fmt.Sprintf(format, v...)
	}
}

func (a *argReader) str(key string, required bool) string {
	v, ok := a.args[key]
	if !ok || v == nil {
		if required {
			a.fail("%q is required", key)
		}
		return ""
	}
	s, ok := v.(string)
	if !ok {
		a.fail("%q must be a string", key)
	}
	return s
}

func (a *argReader) int(key string, lo, hi int) int {
	v, ok := a.args[key]
	if !ok || v == nil {
		return 0
	}
	var n float64
	switch x := v.(type) {
	case float64:
		n = x
	case int:
		n = float64(x)
	case int64:
		n = float64(x)
	default:
		a.fail("%q must be an integer", key)
		return 0
	}
	if n != float64(int64(n)) || n < float64(lo) || n > float64(hi) {
		a.fail("%q must be an integer from %d to %d, got %v", key, lo, hi, v)
		return 0
	}
	return int(n)
}

func (a *argReader) bool(key string) bool {
	v, ok := a.args[key]
	if !ok || v == nil {
		return false
	}
	b, ok := v.(bool)
	if !ok {
		a.fail("%q must be true or false", key)
	}
	return b
}

// done reports the first problem, including keys the tool does not take.
func (a *argReader) done(tool string, known ...string) *tool.Result {
	if a.err == "" {
		var unknown []string
		for k := range a.args {
			if !slices.Contains(known, k) {
				unknown = append(unknown, k)
			}
		}
		if len(unknown) > 0 {
			slices.Sort(unknown)
			a.fail("%s takes no argument %q; its arguments are %s", tool, unknown[0], strings.Join(known, ", "))
		}
	}
	if a.err != "" {
		return failf("invalid arguments for %s: %s", tool, a.err)
	}
	return nil
}

var optionSet = optparse.Set{Pack: "filesystem", Known: []string{"allow_hard_links", "max_read_bytes", "max_results", "max_visit", "max_write_bytes", "read_only", "root", "tool_prefix"}}

// FromOptions builds a filesystem from pack options: root (required, the
// directory to confine the tools to), read_only, allow_hard_links,
// max_read_bytes, max_write_bytes, max_results, max_visit and tool_prefix.
func FromOptions(options map[string]any) (*FS, error) {
	root, opts, err := parseOptions(options)
	if err != nil {
		return nil, err
	}
	return New(root, opts...)
}

// ValidateOptions checks pack options, in the shape FromOptions takes,
// without opening anything. Empty options are valid: the filesystem is
// then used as it was built.
func (f *FS) ValidateOptions(options map[string]any) error {
	if len(options) == 0 {
		return nil
	}
	_, _, err := parseOptions(options)
	return err
}

func parseOptions(options map[string]any) (string, []Option, error) {
	var (
		root string
		opts []Option
	)
	err := optionSet.Each(options, func(k string, v any) error {
		var err error
		switch k {
		case "root":
			root, err = optionSet.Path(k, v, "a directory path")
		case "tool_prefix":
			var p string
			p, err = optionSet.String(k, v)
			opts = append(opts, WithToolPrefix(p))
		case "read_only":
			var b bool
			if b, err = optionSet.Bool(k, v); b {
				opts = append(opts, ReadOnly())
			}
		case "allow_hard_links":
			var b bool
			if b, err = optionSet.Bool(k, v); b {
				opts = append(opts, AllowHardLinks())
			}
		case "max_read_bytes", "max_write_bytes", "max_results", "max_visit":
			var n int64
			if n, err = optionSet.PositiveInt(k, v, 1<<40); err != nil {
				return err
			}
			switch k {
			case "max_read_bytes":
				opts = append(opts, WithMaxReadBytes(n))
			case "max_write_bytes":
				opts = append(opts, WithMaxWriteBytes(n))
			case "max_results":
				opts = append(opts, WithMaxResults(int(n)))
			default:
				opts = append(opts, WithMaxVisit(int(n)))
			}
		}
		return err
	})
	if err != nil {
		return "", nil, err
	}
	if root == "" {
		return "", nil, optionSet.Required("root", "the directory the tools are confined to")
	}
	return root, opts, nil
}
