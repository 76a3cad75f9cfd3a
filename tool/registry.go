package tool

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/lodeworks/lode/internal/structjson"
)

// Registry is the namespace every tool of an agent lives in.
type Registry interface {
	// Register adds a local tool.
	Register(t Tool, fn ToolFunc) error
	// Mount lists src's tools and adds them, all or none.
	Mount(ctx context.Context, src RemoteSource, opts ...MountOption) error
	// Unmount removes the source mounted under name and its tools.
	Unmount(name string) error
	// Tools returns every tool sorted by name. The slice is a shared
	// snapshot: do not modify it.
	Tools() []Tool
	// Lookup finds the tool offered under name.
	Lookup(name string) (*Binding, bool)
	// Err reports the sources that failed to mount when the registry was
	// built (see WithMCPServer); nil when all did.
	Err() error
}

// LocalOwner is the owner named in errors for tools added with Register.
const LocalOwner = "local"

// Separator joins a source's name and its tool's name.
const Separator = "__"

// ErrNameTaken is matched by every name clash.
var ErrNameTaken = errors.New("tool: name already taken")

// ClashError reports a name claimed by two owners.
type ClashError struct {
	Name          string
	Owner, Claims string
}

func (e *ClashError) Error() string {
	return fmt.Sprintf("tool: name %q is owned by %q and also claimed by %q", e.Name, e.Owner, e.Claims)
}

// Is matches ErrNameTaken.
func (e *ClashError) Is(target error) bool { return target == ErrNameTaken }

// Binding is a registered tool and how to run it.
type Binding struct {
	// Tool is the tool as offered, under its registry name.
	Tool Tool
	// Source is the owner: LocalOwner, or the name of the mounted source.
	Source string
	// Remote is true for tools of a mounted source.
	Remote bool
	// Original is the name the source knows the tool by.
	Original string

	schema *compiledSchema
	fn     ToolFunc
	typed  *typedArgs
	src    RemoteSource
	// fused is set when the typed decoder's own checks prove the schema
	// once the fields of required are present (see quickNode.impliedBy).
	fused    bool
	required uint64
}

// Option configures a registry built by NewRegistry.
type Option func(*registry)

// WithMCPServer mounts src (an MCP client, or any RemoteSource) when the
// registry is built, namespaced as "<src.Name()>__<tool>". A source that
// fails to mount is reported by Registry.Err and in the error result of any
// call to one of its tools.
func WithMCPServer(src RemoteSource) Option {
	return WithSource(src)
}

// WithSource mounts src when the registry is built; see WithMCPServer.
func WithSource(src RemoteSource, opts ...MountOption) Option {
	return func(r *registry) { r.pending = append(r.pending, pendingMount{src, opts}) }
}

// DefaultMountTimeout bounds how long a source may take to list its tools
// unless WithMountTimeout says otherwise.
const DefaultMountTimeout = 30 * time.Second

// WithMountTimeout bounds how long NewRegistry waits for each source given
// by WithSource or WithMCPServer to list its tools, and how long a changed
// source may take to list them again; d <= 0 keeps DefaultMountTimeout.
func WithMountTimeout(d time.Duration) Option {
	return func(r *registry) {
		if d > 0 {
			r.mountTimeout = d
		}
	}
}

// WithLogger sets where refresh failures of changing sources are logged.
func WithLogger(l *slog.Logger) Option { return func(r *registry) { r.logger = l } }

// MountOption configures one mount.
type MountOption func(*mountConfig)

type mountConfig struct {
	flat   bool
	prefix string
}

// Flat mounts a source's tools under their own names, for sources that
// already prefix them (packs whose tools are named local_*, jira_*).
func Flat() MountOption { return func(c *mountConfig) { c.flat = true } }

// WithPrefix namespaces a source's tools under prefix instead of its name.
func WithPrefix(prefix string) MountOption { return func(c *mountConfig) { c.prefix = prefix } }

type pendingMount struct {
	src  RemoteSource
	opts []MountOption
}

type mounted struct {
	src   RemoteSource
	cfg   mountConfig
	names []string
}

type registry struct {
	mu      sync.Mutex
	entries map[string]*Binding
	sources map[string]*mounted
	// snapshot is the sorted tool list, nil when a change has made it stale;
	// Tools rebuilds it on demand, so that registering n tools costs one
	// sort, not n.
	snapshot     atomic.Pointer[[]Tool]
	pending      []pendingMount
	mountErrs    []error
	failed       map[string]error
	mountTimeout time.Duration
	logger       *slog.Logger
	listeners    []func()
	notifying    bool // a goroutine is calling the listeners
	dirty        bool // a change the listeners have not been told of
}

// NewRegistry returns an empty registry, then mounts the sources given by
// WithSource or WithMCPServer in order.
func NewRegistry(opts ...Option) Registry {
	r := &registry{
		entries:      make(map[string]*Binding),
		sources:      make(map[string]*mounted),
		mountTimeout: DefaultMountTimeout,
	}
	for _, o := range opts {
		o(r)
	}
	for _, p := range r.pending {
		ctx, cancel := context.WithTimeout(context.Background(), r.mountTimeout)
		if err := r.Mount(ctx, p.src, p.opts...); err != nil {
			r.mountErrs = append(r.mountErrs, err)
			if r.failed == nil {
				r.failed = make(map[string]error)
			}
			name := "(nil source)"
			if p.src != nil {
				name = p.src.Name()
			}
			r.failed[name] = err
		}
		cancel()
	}
	r.pending = nil
	return r
}

func (r *registry) Err() error { return errors.Join(r.mountErrs...) }

// MountFailures returns the sources that failed to mount at construction,
// by name. The handler quotes them when a call names an unknown tool.
func MountFailures(reg Registry) map[string]error {
	if r, ok := reg.(*registry); ok {
		r.mu.Lock()
		defer r.mu.Unlock()
		out := make(map[string]error, len(r.failed))
		for k, v := range r.failed {
			out[k] = v
		}
		return out
	}
	return nil
}

func (r *registry) Tools() []Tool {
	if p := r.snapshot.Load(); p != nil {
		return *p
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if p := r.snapshot.Load(); p != nil {
		return *p
	}
	tools := make([]Tool, 0, len(r.entries))
	for _, b := range r.entries {
		tools = append(tools, b.Tool)
	}
	slices.SortFunc(tools, func(a, b Tool) int { return strings.Compare(a.Name, b.Name) })
	r.snapshot.Store(&tools)
	return tools
}

func (r *registry) Lookup(name string) (*Binding, bool) {
	r.mu.Lock()
	b, ok := r.entries[name]
	r.mu.Unlock()
	return b, ok
}

func (r *registry) Register(t Tool, fn ToolFunc) error {
	if fn == nil {
		return fmt.Errorf("tool: register %q: nil ToolFunc", t.Name)
	}
	b, err := newBinding(t, LocalOwner)
	if err != nil {
		return err
	}
	b.fn = fn
	return r.add(b)
}

// registerTyped adds a typed tool with its fast path.
func (r *registry) registerTyped(t Tool, fn ToolFunc, typed *typedArgs) error {
	b, err := newBinding(t, LocalOwner)
	if err != nil {
		return err
	}
	b.fn, b.typed = fn, typed
	if typed.fast != nil {
		b.required, b.fused = b.schema.quick.impliedBy(typed.fields)
	}
	return r.add(b)
}

func newBinding(t Tool, owner string) (*Binding, error) {
	if err := ValidateName(t.Name); err != nil {
		return nil, fmt.Errorf("tool: %s: %w", owner, err)
	}
	cs, err := compileSchema(t.Schema)
	if err != nil {
		return nil, fmt.Errorf("tool: %s: tool %q: %w", owner, t.Name, err)
	}
	t.Schema = cs.raw
	return &Binding{Tool: t, Source: owner, Original: t.Name, schema: cs}, nil
}

func (r *registry) add(b *Binding) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if old, ok := r.entries[b.Tool.Name]; ok {
		return &ClashError{Name: b.Tool.Name, Owner: old.Source, Claims: b.Source}
	}
	r.entries[b.Tool.Name] = b
	r.rebuild()
	return nil
}

// rebuild marks the snapshot stale and tells the listeners; r.mu is held.
// One goroutine at a time calls them, and a burst of changes while it runs
// is told once more after it, so every change is followed by a call.
func (r *registry) rebuild() {
	r.snapshot.Store(nil)
	if len(r.listeners) == 0 {
		return
	}
	r.dirty = true
	if !r.notifying {
		r.notifying = true
		go r.notify()
	}
}

func (r *registry) notify() {
	for {
		r.mu.Lock()
		if !r.dirty {
			r.notifying = false
			r.mu.Unlock()
			return
		}
		r.dirty = false
		fns := slices.Clone(r.listeners)
		r.mu.Unlock()
		for _, fn := range fns {
			fn()
		}
	}
}

// OnToolsChanged makes every registry a Notifier: fn is called, on a
// goroutine other than the one making the change, after each change to the
// snapshot (an MCP server serving the registry tells its clients); changes
// that come while it runs are reported together by one more call.
func (r *registry) OnToolsChanged(fn func()) {
	r.mu.Lock()
	r.listeners = append(r.listeners, fn)
	r.mu.Unlock()
}

func (r *registry) Mount(ctx context.Context, src RemoteSource, opts ...MountOption) error {
	if src == nil {
		return errors.New("tool: mount: nil source")
	}
	name := src.Name()
	if err := ValidateName(name); err != nil {
		return fmt.Errorf("tool: mount source: %w", err)
	}
	var cfg mountConfig
	for _, o := range opts {
		o(&cfg)
	}
	if cfg.prefix == "" && !cfg.flat {
		cfg.prefix = name
	}
	r.mu.Lock()
	if _, ok := r.sources[name]; ok {
		r.mu.Unlock()
		return fmt.Errorf("tool: source %q is already mounted", name)
	}
	r.mu.Unlock()

	bindings, err := listSource(ctx, src, cfg)
	if err != nil {
		return err
	}
	r.mu.Lock()
	if _, ok := r.sources[name]; ok {
		r.mu.Unlock()
		return fmt.Errorf("tool: source %q is already mounted", name)
	}
	if err := r.checkClashes(bindings, name); err != nil {
		r.mu.Unlock()
		return err
	}
	m := &mounted{src: src, cfg: cfg}
	for _, b := range bindings {
		r.entries[b.Tool.Name] = b
		m.names = append(m.names, b.Tool.Name)
	}
	r.sources[name] = m
	delete(r.failed, name)
	r.rebuild()
	r.mu.Unlock()
	// Outside the lock: a source may report a change from within.
	if n, ok := src.(Notifier); ok {
		n.OnToolsChanged(func() { r.refresh(name, m) })
	}
	return nil
}

func (r *registry) Unmount(name string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	m, ok := r.sources[name]
	if !ok {
		return fmt.Errorf("tool: no source %q is mounted", name)
	}
	for _, n := range m.names {
		delete(r.entries, n)
	}
	delete(r.sources, name)
	r.rebuild()
	return nil
}

// checkClashes fails if a binding's name is owned by anyone but owner;
// r.mu is held.
func (r *registry) checkClashes(bindings []*Binding, owner string) error {
	for _, b := range bindings {
		if old, ok := r.entries[b.Tool.Name]; ok && old.Source != owner {
			return &ClashError{Name: b.Tool.Name, Owner: old.Source, Claims: owner}
		}
	}
	return nil
}

func listSource(ctx context.Context, src RemoteSource, cfg mountConfig) ([]*Binding, error) {
	name := src.Name()
	tools, err := src.Tools(ctx)
	if err != nil {
		return nil, fmt.Errorf("tool: source %q: list tools: %w", name, err)
	}
	seen := make(map[string]string, len(tools))
	out := make([]*Binding, 0, len(tools))
	for _, t := range tools {
		orig := t.Name
		if orig == "" {
			return nil, fmt.Errorf("tool: source %q lists a tool with no name", name)
		}
		t.Name = SafeName(orig)
		if !cfg.flat {
			t.Name = SafeName(cfg.prefix + Separator + orig)
		}
		if first, dup := seen[t.Name]; dup {
			if first == orig {
				return nil, fmt.Errorf("tool: source %q lists tool %q twice", name, orig)
			}
			return nil, fmt.Errorf("tool: source %q: tools %q and %q would both be offered as %q", name, first, orig, t.Name)
		}
		seen[t.Name] = orig
		b, err := newBinding(t, name)
		if err != nil {
			return nil, err
		}
		b.Remote, b.Original, b.src = true, orig, src
		out = append(out, b)
	}
	return out, nil
}

// refresh re-lists a changed source, while the mount m is the one under
// name (a source unmounted, or mounted again, leaves its old callbacks
// harmless). A new list that clashes or fails keeps the old one, and is
// logged.
func (r *registry) refresh(name string, m *mounted) {
	r.mu.Lock()
	cur := r.sources[name]
	timeout := r.mountTimeout
	r.mu.Unlock()
	if cur != m {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	bindings, err := listSource(ctx, m.src, m.cfg)
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.sources[name] != m {
		return
	}
	if err == nil {
		err = r.checkClashes(bindings, name)
	}
	if err != nil {
		l := r.logger
		if l == nil {
			l = slog.Default()
		}
		l.Warn("lode: tool source changed but its new tool list was refused; keeping the old one", "source", name, "error", err)
		return
	}
	for _, n := range m.names {
		delete(r.entries, n)
	}
	m.names = m.names[:0]
	for _, b := range bindings {
		r.entries[b.Tool.Name] = b
		m.names = append(m.names, b.Tool.Name)
	}
	r.rebuild()
}

// ValidateName reports whether name is a tool name every major model API
// accepts: 1 to 64 of a-z, A-Z, 0-9, '_' and '-'.
func ValidateName(name string) error {
	if name == "" {
		return errors.New("tool name is empty")
	}
	if len(name) > 64 {
		return fmt.Errorf("tool name %.20q... is %d bytes long; the limit is 64", name, len(name))
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
			return fmt.Errorf("tool name %q has %q at byte %d; only a-z, A-Z, 0-9, '_' and '-' are allowed", name, c, i)
		}
	}
	return nil
}

// SafeName turns a name a source chose (MCP allows 128 characters and
// dots) into one every model API accepts: each byte outside a-z, A-Z, 0-9,
// '_' and '-' becomes '_', and a name over 64 bytes keeps its first 55 and
// ends with '_' and 8 hex digits of a hash of the whole, so that it stays
// distinct and stable. A valid name is returned unchanged.
func SafeName(name string) string {
	if ValidateName(name) == nil {
		return name
	}
	b := []byte(name)
	for i, c := range b {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
			b[i] = '_'
		}
	}
	if len(b) > 64 {
		h := fnv.New32a()
		h.Write([]byte(name))
		b = fmt.Appendf(b[:55], "_%08x", h.Sum32())
	}
	return string(b)
}

// ArgumentsError reports arguments a model sent that cannot be used: not
// JSON, not an object, or breaking the schema.
type ArgumentsError struct {
	Tool string
	Err  error
}

func (e *ArgumentsError) Error() string {
	return fmt.Sprintf("invalid arguments for %s: %v", e.Tool, e.Err)
}
func (e *ArgumentsError) Unwrap() error { return e.Err }

// Decode parses and validates raw arguments as the model sent them. Empty
// arguments mean an empty object, as several model servers send for tools
// without parameters.
func (b *Binding) Decode(raw string) (map[string]any, error) {
	args, err := parseArgs(raw)
	if err != nil {
		return nil, &ArgumentsError{Tool: b.Tool.Name, Err: err}
	}
	if b.schema.quick.proves(raw) {
		return args, nil
	}
	if err := b.schema.validate(args); err != nil {
		return nil, &ArgumentsError{Tool: b.Tool.Name, Err: err}
	}
	return args, nil
}

// Prepared is a call whose arguments have been decoded and checked,
// ready to run.
type Prepared func(ctx context.Context) (any, error)

// typedArgs decodes a typed tool's arguments straight into its Go type.
type typedArgs struct {
	// fast decodes with the compiled decoder and reports which of fields
	// raw set; nil when the type has no compiled decoder.
	fast   func(raw string) (Prepared, uint64, bool)
	fields []structjson.Field
	// slow decodes with encoding/json, whose errors stand.
	slow func(raw string) (Prepared, error)
}

// decode decodes arguments known to be valid: with the compiled decoder,
// unless it has already declined raw (tried), then with encoding/json.
func (t *typedArgs) decode(raw string, tried bool) (Prepared, error) {
	if t.fast != nil && !tried {
		if run, _, ok := t.fast(raw); ok {
			return run, nil
		}
	}
	return t.slow(raw)
}

// Prepare decodes raw arguments, validates them against the schema and
// binds them, with sb, to the tool. An *ArgumentsError means they cannot be
// used and the tool must not run.
func (b *Binding) Prepare(sb Sandbox, raw string) (Prepared, error) {
	var tried bool // the compiled decoder declined raw
	if b.typed != nil {
		if b.fused {
			// The decoder checks every value's type as it reads it, and
			// the schema asks nothing more of these fields: decoding is
			// validating, once the required fields are there.
			run, seen, ok := b.typed.fast(raw)
			if ok && seen&b.required == b.required {
				return run, nil
			}
			tried = !ok
		}
		if b.schema.quick.proves(raw) {
			// Proved valid: decode once, straight into the tool's type.
			return b.typed.decode(raw, tried)
		}
	}
	args, err := b.Decode(raw)
	if err != nil {
		return nil, err
	}
	switch {
	case b.typed != nil:
		if strings.TrimSpace(raw) == "" {
			raw = "{}"
		}
		return b.typed.decode(raw, tried)
	case b.src != nil:
		src, name := b.src, b.Original
		return func(ctx context.Context) (any, error) { return src.Call(WithSandbox(ctx, sb), name, args) }, nil
	default:
		fn := b.fn
		return func(ctx context.Context) (any, error) { return fn(ctx, sb, args) }, nil
	}
}

// Call prepares the call (see Prepare) and runs it.
func (b *Binding) Call(ctx context.Context, sb Sandbox, raw string) (any, error) {
	run, err := b.Prepare(sb, raw)
	if err != nil {
		return nil, err
	}
	return run(ctx)
}

func parseArgs(raw string) (map[string]any, error) {
	s := strings.TrimSpace(raw)
	if s == "" {
		return map[string]any{}, nil
	}
	var v any
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		return nil, fmt.Errorf("arguments are not valid JSON (%w); send a JSON object", err)
	}
	m, ok := v.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("arguments must be a JSON object, got %s", jsonKind(v))
	}
	return m, nil
}

func jsonKind(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case bool:
		return "a boolean"
	case float64:
		return "a number"
	case string:
		return "a string"
	case []any:
		return "an array"
	}
	return fmt.Sprintf("%T", v)
}
