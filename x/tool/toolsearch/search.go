package toolsearch

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/lodeworks/lode/artifact"
	"github.com/lodeworks/lode/ledger"
	"github.com/lodeworks/lode/loop"
	toolpkg "github.com/lodeworks/lode/tool"
	xtool "github.com/lodeworks/lode/x/tool"
)

// DefaultName is the search tool's name unless WithName says otherwise.
const DefaultName = "tool_search"

// DefaultLimit is how many matches a search returns, and loads, when the
// model asks for no number; MaxLimit is the most it may ask for.
const (
	DefaultLimit = 5
	MaxLimit     = 20
)

// MaxAlso bounds the names of close matches beyond the limit that the
// search tool's answer lists without loading them; a match is close when
// it scores at least alsoFloor of the last match loaded.
const MaxAlso = 10

const alsoFloor = 0.8

// MaxQuery bounds a query, in bytes.
const MaxQuery = 1000

// ErrOption is matched by every invalid option New reports.
var ErrOption = errors.New("toolsearch: invalid option")

// Option configures a Search.
type Option func(*config)

type config struct {
	names       []string
	fn          func(b *toolpkg.Binding) bool
	base        xtool.ToolFilter
	expiry      int
	keep        bool
	name        string
	limit       int
	native      bool
	description string
	errs        []error
}

// Defer marks tools as deferred: each name is a tool's registry name, or
// the name of a mounted source (a pack, an MCP server), which defers all
// of its tools — lode mounts them as NAME__tool, and a flat source's
// tools are its own (tool.Binding's Source). Calling it again adds names.
func Defer(names ...string) Option {
	return func(c *config) {
		for _, n := range names {
			if strings.TrimSpace(n) == "" {
				c.errs = append(c.errs, fmt.Errorf("%w: Defer: a name is blank", ErrOption))
				continue
			}
			c.names = append(c.names, n)
		}
	}
}

// DeferFunc marks as deferred, beside Defer's names, every tool for which
// fn reports true; fn sees the tool's binding (its source, whether it is
// remote). fn runs when the registry changes, not per turn.
func DeferFunc(fn func(b *toolpkg.Binding) bool) Option {
	return func(c *config) { c.fn = fn }
}

// WithBase sets the filter that says what the caller may use — a role
// policy (policy.Enforcer.Filter), a tenant's tools. The Search's Filter
// applies it first, and a search finds only what it keeps, so a tool the
// caller may not use is never found, and loading never offers it. nil
// (the default) lets the caller use every tool.
func WithBase(f xtool.ToolFilter) Option { return func(c *config) { c.base = f } }

// WithExpiry makes a loaded tool lapse after n model turns (n answers of
// the model after the search that loaded it); a later search that finds
// it loads it again. n <= 0, the default, keeps tools loaded.
func WithExpiry(n int) Option { return func(c *config) { c.expiry = n } }

// KeepOnCompaction keeps loaded tools when a history summary
// (x/history's compaction) covers the search that loaded them. By default
// they are dropped then: the model no longer sees the search's result,
// and searches again for what it still needs.
func KeepOnCompaction() Option { return func(c *config) { c.keep = true } }

// WithName names the search tool; the default is DefaultName.
func WithName(name string) Option { return func(c *config) { c.name = name } }

// WithLimit sets how many matches a search returns when the model asks
// for no number; 0 keeps DefaultLimit, and it may not exceed MaxLimit.
func WithLimit(n int) Option { return func(c *config) { c.limit = n } }

// WithDescription replaces the search tool's description.
func WithDescription(d string) Option { return func(c *config) { c.description = d } }

// Native hands the search to the model's server, for adapters that speak
// a provider's own tool search (Anthropic's, and the Responses API's on
// gpt-5.4 and later, both through defer_loading): the Filter then offers
// the deferred tools the caller may use with tool.Tool.Deferred set, for
// the adapter to send for loading on demand, and does not offer the search
// tool. The server decides what is loaded; Recorder records each deferred
// tool its search loads in the same activation record, so the ledger reads
// the same either way.
func Native() Option { return func(c *config) { c.native = true } }

// Search is a tool search over one registry: its Filter offers a turn
// the core tools, the search tool and the deferred tools the thread has
// loaded; its search tool finds deferred tools and loads them. It is safe
// for concurrent use.
type Search struct {
	reg  toolpkg.Registry
	cfg  config
	ix   atomic.Pointer[index]
	mu   sync.Mutex // builds the index; serialises writes of records
	dec  decoder
	sums summaries
	tool toolpkg.Tool
}

var searchSchema = json.RawMessage(`{"type":"object","properties":{` +
	`"query":{"type":"string","description":"What the tool you need does, in a few words (names, verbs, objects)."},` +
	`"limit":{"type":"integer","minimum":1,"maximum":20,"description":"How many tools to load; 5 by default."}},` +
	`"required":["query"],"additionalProperties":false}`)

const defaultDescription = "Search the tools that are not loaded yet, by what they do. " +
	"The best matches are listed with their names and descriptions and loaded: you can call them from your next answer."

// New returns a Search over reg and registers its search tool there
// (unless Native), so that the registry's Handler runs it. Every bad
// option is reported at once, each wrapping ErrOption.
func New(reg toolpkg.Registry, opts ...Option) (*Search, error) {
	if reg == nil {
		return nil, fmt.Errorf("%w: a nil registry", ErrOption)
	}
	s := &Search{reg: reg, cfg: config{name: DefaultName, limit: DefaultLimit, description: defaultDescription}}
	for _, o := range opts {
		if o != nil {
			o(&s.cfg)
		}
	}
	c := &s.cfg
	if c.limit == 0 {
		c.limit = DefaultLimit
	}
	if c.limit < 0 || c.limit > MaxLimit {
		c.errs = append(c.errs, fmt.Errorf("%w: WithLimit(%d): give 1 to %d", ErrOption, c.limit, MaxLimit))
	}
	if err := toolpkg.ValidateName(c.name); err != nil {
		c.errs = append(c.errs, fmt.Errorf("%w: WithName: %w", ErrOption, err))
	}
	if err := errors.Join(c.errs...); err != nil {
		return nil, err
	}
	s.tool = toolpkg.Tool{Name: c.name, Description: c.description, Schema: searchSchema,
		Hints: toolpkg.Hints{ReadOnly: true, Idempotent: true}}
	if !c.native {
		if err := reg.Register(s.tool, s.call); err != nil {
			return nil, fmt.Errorf("toolsearch: register the search tool: %w", err)
		}
	}
	return s, nil
}

// Tool is the search tool as registered.
func (s *Search) Tool() toolpkg.Tool { return s.tool }

// index returns the index of the registry's current snapshot, building it
// when the registry changed.
func (s *Search) index() *index {
	tools := s.reg.Tools()
	if ix := s.ix.Load(); ix.builds(tools) {
		return ix
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if ix := s.ix.Load(); ix.builds(tools) {
		return ix
	}
	ix := buildIndex(tools, s.isDeferred, s.cfg.name)
	s.ix.Store(ix)
	return ix
}

func (s *Search) isDeferred(t toolpkg.Tool) bool {
	for _, n := range s.cfg.names {
		if t.Name == n || strings.HasPrefix(t.Name, n+toolpkg.Separator) {
			return true
		}
	}
	if len(s.cfg.names) == 0 && s.cfg.fn == nil {
		return false
	}
	b, ok := s.reg.Lookup(t.Name)
	if !ok {
		return false
	}
	if b.Source != toolpkg.LocalOwner && slices.Contains(s.cfg.names, b.Source) {
		return true
	}
	return s.cfg.fn != nil && s.cfg.fn(b)
}

// Deferred reports whether the registry's tool name is deferred.
func (s *Search) Deferred(name string) bool {
	ix := s.index()
	i, ok := ix.byName[name]
	return ok && ix.deferred[i]
}

// Active returns the deferred tools st has loaded and that are still in
// force (see WithExpiry, KeepOnCompaction), oldest first.
func (s *Search) Active(st ledger.State) []Activation {
	if st == nil {
		return nil
	}
	return slices.Clone(s.active(st))
}

func (s *Search) active(st ledger.State) []Activation {
	acts := s.dec.decode(st)
	if len(acts) == 0 {
		return nil
	}
	if s.cfg.expiry <= 0 && s.cfg.keep {
		return acts
	}
	turns := st.Turns()
	covered := -1
	if !s.cfg.keep {
		covered = s.sums.covered(st.ID(), turns)
	}
	return live(acts, turns, s.cfg.expiry, covered)
}

// Filter is the turn's tool filter: the core tools and the deferred
// tools st has loaded, passed through WithBase's filter, so that loading
// never adds a tool the base takes away. The base sees only those
// candidates, not every deferred tool, which keeps a turn's cost to what
// it offers (a base that decides tool by tool, as a policy does, decides
// the same). Pass it to xtool.WithFilteredTools (which hands it the
// registry's tools); the Handler then refuses a call to a deferred tool
// not loaded exactly as one to a tool that does not exist, since the
// turn did not offer it. A tools list other than the registry's snapshot
// is filtered as given.
func (s *Search) Filter() xtool.ToolFilter {
	return func(ctx context.Context, st ledger.State, tools []toolpkg.Tool) []toolpkg.Tool {
		ix := s.index()
		if !ix.anyDefer && !s.cfg.native {
			return s.base(ctx, st, tools)
		}
		var acts []Activation
		if st != nil && !s.cfg.native {
			acts = s.active(st)
		}
		var out []toolpkg.Tool
		switch {
		case s.cfg.native:
			out = make([]toolpkg.Tool, 0, len(tools))
			for _, t := range tools {
				if i, ok := ix.byName[t.Name]; ok && ix.deferred[i] {
					t.Deferred = true
				}
				out = append(out, t)
			}
		case ix.builds(tools):
			// The core tools and the loaded ones, in the snapshot's order.
			out = make([]toolpkg.Tool, 0, len(ix.core)+len(acts))
			out = append(out, ix.core...)
			for _, a := range acts {
				if i, ok := ix.byName[a.Tool]; ok && ix.deferred[i] {
					out = append(out, ix.tools[i])
				}
			}
			if len(out) > len(ix.core) {
				slices.SortFunc(out, func(a, b toolpkg.Tool) int { return strings.Compare(a.Name, b.Name) })
				out = slices.CompactFunc(out, func(a, b toolpkg.Tool) bool { return a.Name == b.Name })
			}
		default:
			out = make([]toolpkg.Tool, 0, len(tools))
			for _, t := range tools {
				if i, ok := ix.byName[t.Name]; ok && ix.deferred[i] && !loaded(acts, t.Name) {
					continue
				}
				out = append(out, t)
			}
		}
		out = s.base(ctx, st, out)
		if s.cfg.native {
			out = slices.DeleteFunc(out, func(t toolpkg.Tool) bool { return t.Name == s.cfg.name })
		}
		return slices.Clip(out)
	}
}

// base applies WithBase's filter, if any.
func (s *Search) base(ctx context.Context, st ledger.State, tools []toolpkg.Tool) []toolpkg.Tool {
	if s.cfg.base == nil {
		return tools
	}
	return s.cfg.base(ctx, st, tools)
}

func loaded(acts []Activation, name string) bool {
	for i := range acts {
		if acts[i].Tool == name {
			return true
		}
	}
	return false
}

// Query ranks the tools the caller whose thread is st may use (WithBase
// decides; nil st is a caller with no thread) by the words of query, and
// returns the best limit (<= 0 means the Search's limit). It loads
// nothing; the search tool is Query followed by Activate.
func (s *Search) Query(ctx context.Context, st ledger.State, query string, limit int) []Match {
	if limit <= 0 {
		limit = s.cfg.limit
	}
	limit = min(limit, MaxLimit)
	ix := s.index()
	if s.cfg.base == nil {
		return ix.search(query, limit, nil)
	}
	// The base decides on the best candidates only, as the turn's filter
	// does, and is asked about more of them while it hides too many.
	for n := limit * 4; ; n *= 4 {
		cands := ix.search(query, n, nil)
		kept := s.allowed(ctx, st, ix, cands)
		out := make([]Match, 0, limit)
		for _, m := range cands {
			if kept[m.Name] && len(out) < limit {
				out = append(out, m)
			}
		}
		if len(out) == limit || len(cands) < n {
			return out
		}
	}
}

// allowed asks the base which of the matches the caller may use.
func (s *Search) allowed(ctx context.Context, st ledger.State, ix *index, ms []Match) map[string]bool {
	tools := make([]toolpkg.Tool, 0, len(ms))
	for _, m := range ms {
		tools = append(tools, ix.tools[ix.byName[m.Name]])
	}
	kept := make(map[string]bool, len(tools))
	for _, t := range s.cfg.base(ctx, st, tools) {
		kept[t.Name] = true
	}
	return kept
}

// Activate loads the deferred tools among names on st, from its next
// turn, by writing the activation record; other names are ignored, as
// is a tool the caller may not use (WithBase), so that activation never
// widens what the caller's role allows. It returns the names it loaded.
// Expired or compacted activations are dropped from the record as it is
// written.
func (s *Search) Activate(ctx context.Context, st ledger.State, names ...string) ([]string, error) {
	if st == nil {
		return nil, errors.New("toolsearch: activate: no thread to record the activation in")
	}
	ix := s.index()
	var load []string
	var cands []Match
	for _, n := range names {
		i, ok := ix.byName[n]
		if !ok || !ix.deferred[i] || slices.Contains(load, n) {
			continue
		}
		load = append(load, n)
		cands = append(cands, Match{Name: n})
	}
	if s.cfg.base != nil {
		kept := s.allowed(ctx, st, ix, cands)
		load = slices.DeleteFunc(load, func(n string) bool { return !kept[n] })
	}
	if len(load) == 0 {
		return nil, nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	acts := merge(s.active(st), len(st.Turns()), load)
	raw, err := encode(acts)
	if err != nil {
		return nil, err
	}
	if err := st.SetMetadata(MetaKey, raw); err != nil {
		return nil, fmt.Errorf("toolsearch: record the activation: %w", err)
	}
	return load, nil
}

type searchArgs struct {
	Query string `json:"query"`
	Limit int    `json:"limit"`
}

// call is the search tool.
func (s *Search) call(ctx context.Context, _ toolpkg.Sandbox, args map[string]any) (any, error) {
	var a searchArgs
	if q, ok := args["query"].(string); ok {
		a.Query = q
	}
	if l, ok := args["limit"].(float64); ok {
		a.Limit = int(l)
	}
	if strings.TrimSpace(a.Query) == "" {
		return nil, errors.New("the query is empty: say in a few words what the tool you need does")
	}
	if len(a.Query) > MaxQuery {
		return nil, fmt.Errorf("the query is %d bytes long; the limit is %d: say in a few words what the tool you need does", len(a.Query), MaxQuery)
	}
	st, ok := xtool.Caller(ctx)
	limit := a.Limit
	if limit <= 0 {
		limit = s.cfg.limit
	}
	limit = min(limit, MaxLimit)
	// Beyond the limit, the names of the matches that score close to the
	// last one shown: a vague query over a family of tools (ten
	// invoice_refund_*) must not hide the right one behind the limit.
	matches := s.Query(ctx, st, a.Query, limit+MaxAlso)
	var also []string
	if len(matches) > limit {
		floor := matches[limit-1].Score * alsoFloor
		for _, m := range matches[limit:] {
			if m.Score >= floor {
				also = append(also, m.Name)
			}
		}
		matches = matches[:limit]
	}
	if len(matches) == 0 {
		return fmt.Sprintf("No tools match %q. Try other words for what the tool does.", a.Query), nil
	}
	var names []string
	for _, m := range matches {
		if m.Deferred {
			names = append(names, m.Name)
		}
	}
	var b strings.Builder
	switch {
	case !ok:
		b.WriteString("Tools that match (none could be loaded: this call has no thread to keep them in):\n")
	case len(names) > 0:
		if _, err := s.Activate(ctx, st, names...); err != nil {
			return nil, err
		}
		b.WriteString("Tools that match; they are loaded, and you can call them from your next answer:\n")
	default:
		b.WriteString("Tools that match; they are already available:\n")
	}
	for _, m := range matches {
		fmt.Fprintf(&b, "- %s: %s\n", m.Name, m.Description)
	}
	if len(also) > 0 {
		fmt.Fprintf(&b, "Close matches not loaded: %s. If one of them is what you need, search for it by its name.\n", strings.Join(also, ", "))
	}
	return strings.TrimRight(b.String(), "\n"), nil
}

// Recorder is a loop.Handler for Native: it reads the server's search
// results in each answer (the blocks and items an adapter keeps as
// artifact.Opaque: Anthropic's tool_search_tool_result, the Responses
// API's tool_search_output) and writes the deferred tools they load into
// the activation record, before the answer's calls run, so that the
// ledger reads as with lode's own search. A name the Search does not
// defer, or the base hides, is not recorded (Activate). Without Native it
// does nothing.
func (s *Search) Recorder() loop.Handler { return recorder{s} }

type recorder struct{ s *Search }

// The types of the server results that list what a provider's own tool
// search loaded: Anthropic's block, and the Responses API's output item.
const (
	NativeResultType = "tool_search_tool_result"
	NativeOutputType = "tool_search_output"
)

func (r recorder) Handle(ctx context.Context, art artifact.Artifact, _ loop.Emitter) error {
	o, ok := art.(artifact.Opaque)
	if !ok || !r.s.cfg.native {
		return nil
	}
	var names []string
	switch o.Type {
	case NativeResultType:
		var block struct {
			Content struct {
				References []struct {
					Name string `json:"tool_name"`
				} `json:"tool_references"`
			} `json:"content"`
		}
		if err := json.Unmarshal([]byte(o.Data), &block); err != nil {
			return nil // not a result this package reads: it loads nothing
		}
		for _, ref := range block.Content.References {
			names = append(names, ref.Name)
		}
	case NativeOutputType:
		var item struct {
			Tools []struct {
				Type string `json:"type"`
				Name string `json:"name"`
			} `json:"tools"`
		}
		if err := json.Unmarshal([]byte(o.Data), &item); err != nil {
			return nil
		}
		for _, t := range item.Tools {
			if t.Type == "function" {
				names = append(names, t.Name)
			}
		}
	default:
		return nil
	}
	st, ok := xtool.Caller(ctx)
	if !ok || len(names) == 0 {
		return nil
	}
	_, err := r.s.Activate(ctx, st, names...)
	return err
}

// Gate is an execution check (xtool.WithGate) that hides a deferred tool
// the caller's thread has not loaded, in the words of an unknown tool,
// then asks next (nil allows). Filter already keeps such tools out of a
// turn's offer; Native offers them all to the server, so there the Gate
// is what refuses a call the server's search did not load.
func (s *Search) Gate(next xtool.Gate) xtool.Gate {
	return func(ctx context.Context, st ledger.State, t toolpkg.Tool, source string, call artifact.ToolCall) xtool.Verdict {
		if s.Deferred(t.Name) && (st == nil || !loaded(s.active(st), t.Name)) {
			return xtool.Verdict{Hide: true}
		}
		if next == nil {
			return xtool.Verdict{}
		}
		return next(ctx, st, t, source, call)
	}
}
