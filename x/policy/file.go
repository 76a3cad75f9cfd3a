package policy

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"go.yaml.in/yaml/v3"
)

// DefaultCheckInterval is how often, at most, a File looks at its file's
// modification time, unless WithCheckInterval says otherwise.
const DefaultCheckInterval = 500 * time.Millisecond

// FileOption configures a File.
type FileOption func(*fileConfig)

type fileConfig struct {
	every    time.Duration
	logger   *slog.Logger
	key      string
	validate func(*Policy) error
}

// WithCheckInterval sets how often, at most, the file is stat'ed: zero
// means DefaultCheckInterval, a negative value on every use.
func WithCheckInterval(d time.Duration) FileOption {
	return func(c *fileConfig) { c.every = d }
}

// WithLogger receives the refusal of a changed file that does not parse;
// nil means slog.Default().
func WithLogger(l *slog.Logger) FileOption { return func(c *fileConfig) { c.logger = l } }

// WithKey reads the policy from one top-level key of the file (policy:
// in lode.yaml) rather than from the whole file.
func WithKey(key string) FileOption { return func(c *fileConfig) { c.key = key } }

// WithValidate checks every version of the document before it takes
// effect (Check against the mounted tools, say); an error refuses it.
func WithValidate(fn func(*Policy) error) FileOption {
	return func(c *fileConfig) { c.validate = fn }
}

// File is a Source that follows a file: when the file's modification
// time or size changes, the next use reads it again, and the new policy
// replaces the old in one atomic step. A file that no longer parses is
// refused with a logged error, and the old policy stays in force.
type File struct {
	path string
	cfg  fileConfig
	cur  atomic.Pointer[Policy]
	next atomic.Int64 // unix nanoseconds before which no stat is made

	mu    sync.Mutex // serialises reloads
	mtime time.Time
	size  int64
}

// Open reads the policy at path; an error here is fatal, unlike one on
// reload.
func Open(path string, opts ...FileOption) (*File, error) {
	f := &File{path: path}
	for _, o := range opts {
		o(&f.cfg)
	}
	if f.cfg.every == 0 {
		f.cfg.every = DefaultCheckInterval
	}
	if f.cfg.logger == nil {
		f.cfg.logger = slog.Default()
	}
	fi, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("policy: %w", err)
	}
	p, err := f.load()
	if err != nil {
		return nil, err
	}
	f.cur.Store(p)
	f.mtime, f.size = fi.ModTime(), fi.Size()
	f.next.Store(time.Now().Add(f.cfg.every).UnixNano())
	return f, nil
}

// Policy returns the policy in force, reloading the file first when it
// changed (looked at no more than once per check interval).
func (f *File) Policy() *Policy {
	if f.cfg.every < 0 || time.Now().UnixNano() >= f.next.Load() {
		f.reload()
	}
	return f.cur.Load()
}

func (f *File) reload() {
	if !f.mu.TryLock() {
		return // another caller is at it; the current policy stands meanwhile
	}
	defer f.mu.Unlock()
	f.next.Store(time.Now().Add(f.cfg.every).UnixNano())
	fi, err := os.Stat(f.path)
	if err != nil {
		f.cfg.logger.Error("lode: policy file unreadable; the previous policy stays in force", "path", f.path, "error", err)
		return
	}
	if fi.ModTime().Equal(f.mtime) && fi.Size() == f.size {
		return
	}
	f.mtime, f.size = fi.ModTime(), fi.Size()
	p, err := f.load()
	if err != nil {
		f.cfg.logger.Error("lode: changed policy refused; the previous policy stays in force", "path", f.path, "error", err)
		return
	}
	f.cur.Store(p)
	f.cfg.logger.Info("lode: policy reloaded", "path", f.path, "roles", p.Roles())
}

// ErrNoKey is returned when the file has no policy under WithKey's key.
var ErrNoKey = errors.New("policy: key not found in file")

func (f *File) load() (*Policy, error) {
	data, err := os.ReadFile(f.path)
	if err != nil {
		return nil, fmt.Errorf("policy: %w", err)
	}
	var p *Policy
	if f.cfg.key == "" {
		p, err = Parse(data)
	} else {
		p, err = parseKey(data, f.cfg.key)
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", f.path, err)
	}
	if f.cfg.validate != nil {
		if err := f.cfg.validate(p); err != nil {
			return nil, fmt.Errorf("%s: %w", f.path, err)
		}
	}
	return p, nil
}

func parseKey(data []byte, key string) (*Policy, error) {
	// The whole file is held to the policy's rules: a second document or a
	// second key of the same name would hide a policy from every door.
	doc, err := readDocument(data)
	if err != nil {
		return nil, err
	}
	if doc.Kind == yaml.DocumentNode && len(doc.Content) == 1 {
		m := doc.Content[0]
		if err := uniqueKeys(m); err != nil && m.Kind == yaml.MappingNode && hasKey(m, key) {
			return nil, err
		}
		for i := 0; m.Kind == yaml.MappingNode && i+1 < len(m.Content); i += 2 {
			if m.Content[i].Value == key {
				return ParseNode(m.Content[i+1])
			}
		}
	}
	return nil, fmt.Errorf("%w: %q", ErrNoKey, key)
}

func hasKey(m *yaml.Node, key string) bool {
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			return true
		}
	}
	return false
}
