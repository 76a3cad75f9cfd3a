package cli

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"strings"
	"sync"

	"github.com/lodeworks/lode/artifact"
	"github.com/lodeworks/lode/ledger"
	"github.com/lodeworks/lode/loop"
	"github.com/lodeworks/lode/provider"
	"github.com/lodeworks/lode/x/auth"
	"github.com/lodeworks/lode/x/memory"
	mempg "github.com/lodeworks/lode/x/memory/postgres"
	memsqlite "github.com/lodeworks/lode/x/memory/sqlite"
	"github.com/lodeworks/lode/x/policy"
	xstore "github.com/lodeworks/lode/x/store"
	"github.com/lodeworks/lode/x/tool/mcp"
)

// MemoryConfig is lode.yaml's memory: facts about each user that outlive
// a thread (x/memory), scoped by the caller's identity at every door.
type MemoryConfig struct {
	// Store is where facts live: a folder, sqlite:PATH or
	// postgres://USER@HOST/DB (the password from PGPASSWORD or
	// ~/.pgpass, never from lode.yaml). A database may be the ledger's;
	// a folder must be one of its own. Without it there is no memory.
	Store string `yaml:"store"`
	// Tools offers memory_save and memory_search at every door (true
	// unless set to false).
	Tools *bool `yaml:"tools"`
	// Roles, when given, keep memory to callers holding one of them.
	Roles []string `yaml:"roles"`
	// Recall is how many facts are added to a run for the user's
	// message, after it, where the prompt cache keeps them; 0 (the
	// default) adds none.
	Recall int `yaml:"recall"`
	// Extract asks the model, after each run, for the facts worth
	// keeping and saves them (false unless set).
	Extract bool `yaml:"extract"`
	// ExtractFacts bounds the facts one extraction saves (0:
	// memory.DefaultExtractFacts).
	ExtractFacts int `yaml:"extract_facts"`
}

// on says whether lode.yaml configures memory.
func (m *MemoryConfig) on() bool { return m.Store != "" }

// tools says whether the memory tools are offered.
func (m *MemoryConfig) tools() bool { return m.on() && (m.Tools == nil || *m.Tools) }

// check refuses a memory: block lode cannot keep, naming the key.
func (m *MemoryConfig) check(f *fileLines) error {
	set := func(key string) bool { return f.lines["memory."+key] != 0 }
	if !m.on() {
		for _, k := range []string{"tools", "roles", "recall", "extract", "extract_facts"} {
			if set(k) {
				return fmt.Errorf("%s: memory.%s needs memory.store: where the facts live (a folder, sqlite:PATH or postgres://USER@HOST/DB)", f.at("memory."+k), k)
			}
		}
		if set("store") {
			return fmt.Errorf("%s: memory.store is empty: write a folder, sqlite:PATH or postgres://USER@HOST/DB", f.at("memory.store"))
		}
		return nil
	}
	if _, err := xstore.Parse(m.Store); err != nil {
		return fmt.Errorf("%s: memory.store: %s", f.at("memory.store"), strings.TrimPrefix(err.Error(), "store: "))
	}
	for i, r := range m.Roles {
		if strings.TrimSpace(r) == "" {
			return fmt.Errorf("%s: memory.roles: entry %d is empty; write the roles that may use memory", f.at(fmt.Sprintf("memory.roles[%d]", i)), i+1)
		}
	}
	if m.Recall < 0 || m.Recall > memory.MaxLimit {
		return fmt.Errorf("%s: memory.recall must be from 0 (off) to %d facts, got %d", f.at("memory.recall"), memory.MaxLimit, m.Recall)
	}
	if m.ExtractFacts < 0 || m.ExtractFacts > memory.MaxLimit {
		return fmt.Errorf("%s: memory.extract_facts must be from 0 (the default, %d) to %d, got %d", f.at("memory.extract_facts"), memory.DefaultExtractFacts, memory.MaxLimit, m.ExtractFacts)
	}
	if m.ExtractFacts != 0 && !m.Extract {
		return fmt.Errorf("%s: memory.extract_facts applies with extract: true", f.at("memory.extract_facts"))
	}
	if !m.tools() && m.Recall == 0 && !m.Extract {
		return fmt.Errorf("%s: memory: with tools: false, recall: 0 and extract: false does nothing; leave memory: out, or turn one on", f.at("memory"))
	}
	return nil
}

// options are the memory.Options lode.yaml's memory: gives.
func (m *MemoryConfig) options() []memory.Option {
	var opts []memory.Option
	if len(m.Roles) > 0 {
		opts = append(opts, memory.WithRoles(m.Roles...))
	}
	if m.ExtractFacts > 0 {
		opts = append(opts, memory.WithMaxFacts(m.ExtractFacts))
	}
	return opts
}

// lazyMemory is the memory store of lode.yaml, opened at its first use,
// once per process: a command that only lists tools reaches no database
// and creates no folder. Close closes it if it was opened.
type lazyMemory struct {
	spec  string
	once  sync.Once
	store memory.Store
	err   error
}

var _ memory.Store = (*lazyMemory)(nil)

func (l *lazyMemory) open(ctx context.Context) (memory.Store, error) {
	l.once.Do(func() {
		l.store, l.err = openMemory(context.WithoutCancel(ctx), l.spec)
	})
	return l.store, l.err
}

// openMemory opens the memory store spec names, parsed by x/store's
// rules.
func openMemory(ctx context.Context, spec string) (memory.Store, error) {
	sp, err := xstore.Parse(spec)
	if err != nil {
		return nil, err
	}
	var s memory.Store
	switch sp.Kind {
	case xstore.SQLite:
		s, err = memsqlite.Open(ctx, sp.Path)
	case xstore.Postgres:
		s, err = mempg.Open(ctx, sp.URL)
	default:
		s, err = memory.OpenFile(sp.Path)
	}
	if err != nil {
		return nil, fmt.Errorf("memory.store %s: %w", sp, err)
	}
	return s, nil
}

func (l *lazyMemory) Save(ctx context.Context, s memory.Scope, texts ...string) ([]memory.Fact, error) {
	st, err := l.open(ctx)
	if err != nil {
		return nil, err
	}
	return st.Save(ctx, s, texts...)
}

func (l *lazyMemory) Search(ctx context.Context, s memory.Scope, query string, limit int) ([]memory.Fact, error) {
	st, err := l.open(ctx)
	if err != nil {
		return nil, err
	}
	return st.Search(ctx, s, query, limit)
}

func (l *lazyMemory) Forget(ctx context.Context, s memory.Scope, id string) error {
	st, err := l.open(ctx)
	if err != nil {
		return err
	}
	return st.Forget(ctx, s, id)
}

func (l *lazyMemory) List(ctx context.Context, s memory.Scope) ([]memory.Fact, error) {
	st, err := l.open(ctx)
	if err != nil {
		return nil, err
	}
	return st.List(ctx, s)
}

// Close closes the store if it was opened; a later call opens nothing.
func (l *lazyMemory) Close() error {
	l.once.Do(func() { l.err = errors.New("memory: the store is closed") })
	if l.store != nil {
		return l.store.Close()
	}
	return nil
}

// mountMemory gives tb lode.yaml's memory store and, unless tools: false,
// registers memory_save and memory_search, which every door then offers
// under its policy, approvals and guards like any tool.
func mountMemory(tb *toolbox, cfg *Config) error {
	m := &cfg.Memory
	if !m.on() {
		return nil
	}
	lm := &lazyMemory{spec: m.Store}
	tb.memory = lm
	tb.closers = append(tb.closers, lm.Close)
	if m.tools() {
		if err := memory.Register(tb.reg, lm, m.options()...); err != nil {
			return fmt.Errorf("%s: memory: %w", cfg.file.at("memory"), err)
		}
	}
	return nil
}

// memoryInvoke is the door's recall option (memory.recall), or nothing.
func memoryInvoke(cfg *Config, tb *toolbox) []provider.InvokeOption {
	if tb.memory == nil || cfg.Memory.Recall == 0 {
		return nil
	}
	return []provider.InvokeOption{memory.Recall(tb.memory, append(cfg.Memory.options(), memory.WithLimit(cfg.Memory.Recall))...)}
}

// memoryExtractor is the door's extraction after each run
// (memory.extract), asked of prov, the door's model; nil for a door with
// no loop. With a policy, each extraction request is admitted by its
// spend limits as the run's own requests are, so the day's counters count
// it too.
func memoryExtractor(cfg *Config, tb *toolbox, d *door, prov provider.Provider) loop.Handler {
	if tb.memory == nil || !cfg.Memory.Extract || prov == nil {
		return nil
	}
	if d.enf != nil {
		a := admitted{Provider: prov, adm: d.enf.SpendLimit()}
		prov = a
		if _, ok := a.Provider.(interface{ Models() []string }); ok {
			prov = admittedModels{a}
		}
	}
	return memory.Extractor(tb.memory, prov, cfg.Memory.options()...)
}

// admitted asks adm to admit each request made in a turn (a handler's
// model call), for the turn's thread, and settles it with the answer.
type admitted struct {
	provider.Provider
	adm loop.Admitter
}

// Model names the wrapped provider's model, so that the extraction's
// usage is priced as the model's.
func (p admitted) Model() string {
	if m, ok := p.Provider.(interface{ Model() string }); ok {
		return m.Model()
	}
	return ""
}

// admittedModels is admitted over a provider that may answer with
// several models (fallbacks), which prices by all of them.
type admittedModels struct{ admitted }

func (p admittedModels) Models() []string {
	return p.Provider.(interface{ Models() []string }).Models()
}

func (p admitted) Invoke(ctx context.Context, req *provider.Request) iter.Seq2[artifact.Artifact, error] {
	return func(yield func(artifact.Artifact, error) bool) {
		info, ok := loop.CurrentTurn(ctx)
		if !ok || info.State == nil {
			yield(nil, errors.New("memory: extraction outside a turn: no caller to admit it for"))
			return
		}
		settle, err := p.adm.Admit(ctx, info.State, req, loop.Estimate{InputTokens: loop.EstimateInput(req)})
		if err != nil {
			yield(nil, err)
			return
		}
		var answer []artifact.Artifact
		var failed error
		defer func() {
			if settle != nil {
				settle(ctx, answer, failed)
			}
		}()
		for a, err := range p.Provider.Invoke(ctx, req) {
			if err != nil {
				failed = &loop.ProviderError{Err: err, Partial: answer, Started: len(answer) > 0}
				yield(nil, err)
				return
			}
			answer = append(answer, a)
			if !yield(a, nil) {
				return
			}
		}
	}
}

// memoryServe is who lode serve's memory belongs to over stdio: the
// local login, as at lode run and chat, since the MCP client that starts
// lode serve runs as that user. Over HTTP the caller is who its token
// names, and without logins nobody: memory refuses an anonymous caller.
func memoryServe(d *door, tb *toolbox, spec doorSpec) []mcp.ServerOption {
	if spec.kind != doorServe || spec.http || tb.memory == nil {
		return nil
	}
	meta := newThreadMeta(auth.Identity{User: loginName()})
	if d.enf != nil {
		meta[policy.RolesKey] = spec.roles
	}
	return []mcp.ServerOption{mcp.WithState(ledger.NewThread(ledger.WithMetadata(meta)))}
}

// extractLine says on stderr what memory.extract did after a run: the
// facts it saved, or why it saved none; the run's answer stands either way.
func extractLine(ev memory.ExtractEvent) string {
	line := fmt.Sprintf("memory: saved %s from this run", plural(len(ev.Saved), "fact"))
	if ev.Dropped > 0 {
		line += fmt.Sprintf(", dropped %d the model gave that cannot be kept", ev.Dropped)
	}
	if ev.Err != nil {
		line = "memory: nothing saved from this run: " + strings.TrimPrefix(ev.Err.Error(), "memory: ")
	}
	return line
}
