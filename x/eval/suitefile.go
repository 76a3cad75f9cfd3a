package eval

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/lodeworks/lode/artifact"
	"github.com/lodeworks/lode/ledger"
	"github.com/lodeworks/lode/ledger/file"
	"github.com/lodeworks/lode/tool"
	"github.com/lodeworks/lode/x/policy"
	"github.com/lodeworks/lode/x/provider/openai"
	"github.com/lodeworks/lode/x/provider/script"
	"github.com/lodeworks/lode/x/tool/calculator"
	"github.com/lodeworks/lode/x/tool/filesystem"
)

// ErrSuiteFile matches every error LoadSuite returns for a file it cannot
// take.
var ErrSuiteFile = errors.New("eval: bad suite file")

// suiteFile is a suite written in YAML, for lode eval.
type suiteFile struct {
	Name  string     `yaml:"name"`
	Cases []caseFile `yaml:"cases"`
}

type caseFile struct {
	Name   string                    `yaml:"name"`
	System string                    `yaml:"system"`
	Prompt string                    `yaml:"prompt"`
	Tools  map[string]map[string]any `yaml:"tools"`
	Policy yaml.Node                 `yaml:"policy"`
	Roles  []string                  `yaml:"roles"`
	Model  modelFile                 `yaml:"model"`
	Expect expectFile                `yaml:"expect"`
	From   *fromFile                 `yaml:"from"`
}

// fromFile starts a case from a fork point of a recorded thread.
type fromFile struct {
	// Store is the ledger, as x/store.Parse takes it; a folder or SQLite
	// file is relative to the suite file's folder.
	Store  string `yaml:"store"`
	Thread string `yaml:"thread"`
	At     *int   `yaml:"at"`
}

type modelFile struct {
	// Script plays these steps; each is a text or a call.
	Script []struct {
		Text string `yaml:"text"`
		Call *struct {
			ID        string `yaml:"id"`
			Name      string `yaml:"name"`
			Arguments string `yaml:"arguments"`
		} `yaml:"call"`
	} `yaml:"script"`
	// Cassette (x/cassette, matched request by request) or Recorded (any
	// go-vcr file, answered in order) with the OpenAI adapter for Name.
	Cassette string `yaml:"cassette"`
	Recorded string `yaml:"recorded"`
	Name     string `yaml:"name"`
	BaseURL  string `yaml:"base_url"`
	Stream   *bool  `yaml:"stream"`
}

type callFile struct {
	Name   string `yaml:"name"`
	Args   string `yaml:"args"`
	Schema string `yaml:"schema"`
	Result string `yaml:"result"`
}

type expectFile struct {
	Calls         []callFile `yaml:"calls"`
	CallsAnyOrder []callFile `yaml:"calls_any_order"`
	Called        []callFile `yaml:"called"`
	NotCalled     []string   `yaml:"not_called"`
	Refused       []string   `yaml:"refused"`
	TextContains  []string   `yaml:"text_contains"`
	TextExcludes  []string   `yaml:"text_excludes"`
	TextMatches   []string   `yaml:"text_matches"`
	MaxTurns      int        `yaml:"max_turns"`
	MaxTokens     int64      `yaml:"max_tokens"`
	MaxCost       float64    `yaml:"max_cost"`
	MaxTime       string     `yaml:"max_time"`
	Fails         string     `yaml:"fails"`
}

// LoadOption configures LoadSuite.
type LoadOption func(*loadConfig)

type loadConfig struct {
	open func(ctx context.Context, spec string) (ledger.Store, error)
}

// WithStores opens the stores the cases' from: names, by spec: x/store's
// Open is one, for a folder, sqlite:PATH and postgres://. Without it
// from: takes a folder only (ledger/file), so that reading a suite file
// compiles no database driver.
func WithStores(open func(ctx context.Context, spec string) (ledger.Store, error)) LoadOption {
	return func(c *loadConfig) { c.open = open }
}

// LoadSuite reads a suite from a YAML file (see the package doc for its
// keys). Paths in it (cassettes, a filesystem root, a from: store's
// folder or SQLite file) are relative to the file's folder. Every problem
// is an error matching ErrSuiteFile that names the file and the case.
func LoadSuite(path string, opts ...LoadOption) (*Suite, error) {
	var lc loadConfig
	for _, o := range opts {
		o(&lc)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrSuiteFile, err)
	}
	d := yaml.NewDecoder(bytes.NewReader(b))
	d.KnownFields(true)
	var f suiteFile
	if err := d.Decode(&f); err != nil {
		return nil, fmt.Errorf("%w: %s: %w", ErrSuiteFile, path, err)
	}
	if len(f.Cases) == 0 {
		return nil, fmt.Errorf("%w: %s has no cases", ErrSuiteFile, path)
	}
	dir := filepath.Dir(path)
	s := &Suite{Name: f.Name}
	if s.Name == "" {
		s.Name = filepath.Base(path)
	}
	seen := map[string]bool{}
	for i, cf := range f.Cases {
		c, err := cf.build(dir, &lc)
		where := fmt.Sprintf("case %d", i+1)
		if cf.Name != "" {
			where = fmt.Sprintf("case %d (%s)", i+1, cf.Name)
		}
		switch {
		case err != nil:
			return nil, fmt.Errorf("%w: %s: %s: %w", ErrSuiteFile, path, where, err)
		case cf.Name == "":
			return nil, fmt.Errorf("%w: %s: %s has no name", ErrSuiteFile, path, where)
		case seen[cf.Name]:
			return nil, fmt.Errorf("%w: %s: %s: the name is taken by an earlier case", ErrSuiteFile, path, where)
		}
		seen[cf.Name] = true
		s.Cases = append(s.Cases, c)
	}
	return s, nil
}

func (cf caseFile) build(dir string, lc *loadConfig) (Case, error) {
	c := Case{Name: cf.Name, System: cf.System, Prompt: cf.Prompt, Roles: cf.Roles}
	m, err := cf.Model.build(dir)
	if err != nil {
		return c, err
	}
	c.Model = m
	if cf.From != nil {
		if c.From, err = cf.From.build(dir, lc); err != nil {
			return c, err
		}
	}
	if cf.Policy.Kind != 0 {
		p, err := policy.ParseNode(&cf.Policy)
		if err != nil {
			return c, err
		}
		c.Policy = p
	}
	names := make([]string, 0, len(cf.Tools))
	for n := range cf.Tools {
		names = append(names, n)
	}
	sort.Strings(names)
	var sources []tool.RemoteSource
	for _, n := range names {
		opts := cf.Tools[n]
		if opts == nil {
			opts = map[string]any{}
		}
		switch n {
		case "calculator":
			calc, err := calculator.FromOptions(opts)
			if err != nil {
				return c, err
			}
			sources = append(sources, calc)
		case "filesystem":
			if root, ok := opts["root"].(string); ok && !filepath.IsAbs(root) {
				opts["root"] = filepath.Join(dir, root)
			}
			fsys, err := filesystem.FromOptions(opts)
			if err != nil {
				return c, err
			}
			sources = append(sources, fsys)
		default:
			return c, fmt.Errorf("tools: unknown pack %q; the packs are calculator, filesystem", n)
		}
	}
	if len(sources) > 0 {
		c.Tools = func(ctx context.Context, reg tool.Registry) error {
			for _, s := range sources {
				if err := reg.Mount(ctx, s); err != nil {
					return err
				}
			}
			return nil
		}
	}
	exps, err := cf.Expect.build()
	c.Expect = exps
	return c, err
}

func (ff fromFile) build(dir string, lc *loadConfig) (Start, error) {
	switch {
	case strings.TrimSpace(ff.Store) == "":
		return nil, errors.New("from: give the store that keeps the thread (store: a folder, sqlite:PATH or postgres://...)")
	case ff.Thread == "":
		return nil, errors.New("from: give the thread's ID (thread:)")
	case ff.At == nil:
		return nil, errors.New("from: give how many of the thread's turns the case starts from (at:, from 0)")
	case *ff.At < 0:
		return nil, fmt.Errorf("from: at: %d is negative; at: 0 starts from none of the thread's turns", *ff.At)
	}
	if err := ledger.CheckID(ff.Thread); err != nil {
		return nil, fmt.Errorf("from: thread: %w", err)
	}
	spec, local := resolveStore(strings.TrimSpace(ff.Store), dir)
	open := lc.open
	if open == nil {
		if local == "" || spec != local {
			return nil, fmt.Errorf("from: store %s: only a folder opens here; LoadSuite(path, WithStores(...)) opens the others (lode eval does)", ff.Store)
		}
		open = func(_ context.Context, spec string) (ledger.Store, error) { return file.Open(spec) }
	}
	id, at := ff.Thread, *ff.At
	return func(ctx context.Context) (ledger.State, error) {
		// A folder or file that is not there is not created.
		if local != "" {
			if _, err := os.Stat(local); err != nil {
				return nil, fmt.Errorf("eval: from: store %s: %w", spec, err)
			}
		}
		s, err := open(ctx, spec)
		if err != nil {
			return nil, fmt.Errorf("eval: from: %w", err)
		}
		defer s.Close()
		return FromFork(s, id, at)(ctx)
	}, nil
}

// resolveStore makes a from: store's folder or SQLite file relative to
// the suite file's folder, as x/store reads a spec; local is the folder
// or file, "" for a database URL.
func resolveStore(spec, dir string) (resolved, local string) {
	lower := strings.ToLower(spec)
	switch {
	case strings.HasPrefix(lower, "postgres:"), strings.HasPrefix(lower, "postgresql:"), strings.Contains(spec, "://"):
		return spec, ""
	case strings.HasPrefix(lower, "sqlite:"):
		path := spec[len("sqlite:"):]
		if !filepath.IsAbs(path) {
			path = filepath.Join(dir, path)
		}
		return spec[:len("sqlite:")] + path, path
	}
	if !filepath.IsAbs(spec) {
		spec = filepath.Join(dir, spec)
	}
	return spec, spec
}

func (mf modelFile) build(dir string) (Model, error) {
	kinds := 0
	for _, set := range []bool{len(mf.Script) > 0, mf.Cassette != "", mf.Recorded != ""} {
		if set {
			kinds++
		}
	}
	if kinds != 1 {
		return nil, errors.New("model: give exactly one of script, cassette, recorded")
	}
	if len(mf.Script) > 0 {
		steps := make([]script.Step, len(mf.Script))
		for i, s := range mf.Script {
			switch {
			case s.Call != nil && s.Text == "":
				id := s.Call.ID
				if id == "" {
					id = fmt.Sprintf("call_%d", i+1)
				}
				steps[i] = script.Call(id, s.Call.Name, s.Call.Arguments)
			case s.Call == nil && s.Text != "":
				steps[i] = script.Reply(artifact.Text{Content: s.Text})
			default:
				return nil, fmt.Errorf("model: script step %d: give text or call, not both or neither", i+1)
			}
		}
		return Scripted(mf.Name, steps...), nil
	}
	if mf.Name == "" {
		return nil, errors.New("model: name the model the recording was made with (name:)")
	}
	var opts []openai.Option
	if mf.BaseURL != "" {
		opts = append(opts, openai.WithBaseURL(mf.BaseURL))
	}
	if mf.Stream != nil {
		opts = append(opts, openai.WithStreaming(*mf.Stream))
	}
	connect := OpenAI(mf.Name, opts...)
	if mf.Cassette != "" {
		return Cassette(filepath.Join(dir, mf.Cassette), connect), nil
	}
	return Recorded(filepath.Join(dir, mf.Recorded), connect), nil
}

func (ef expectFile) build() ([]Expectation, error) {
	specs := func(cs []callFile) []CallSpec {
		out := make([]CallSpec, len(cs))
		for i, c := range cs {
			out[i] = CallSpec{Name: c.Name, Args: c.Args, Schema: c.Schema, Result: c.Result}
		}
		return out
	}
	var out []Expectation
	if len(ef.Calls) > 0 {
		out = append(out, CallsInOrder(specs(ef.Calls)...))
	}
	if len(ef.CallsAnyOrder) > 0 {
		out = append(out, CallsAnyOrder(specs(ef.CallsAnyOrder)...))
	}
	for _, s := range specs(ef.Called) {
		out = append(out, Called(s))
	}
	if len(ef.NotCalled) > 0 {
		out = append(out, NotCalled(ef.NotCalled...))
	}
	for _, n := range ef.Refused {
		out = append(out, Refused(n))
	}
	for _, s := range ef.TextContains {
		out = append(out, TextContains(s))
	}
	for _, s := range ef.TextExcludes {
		out = append(out, TextExcludes(s))
	}
	for _, s := range ef.TextMatches {
		out = append(out, TextMatches(s))
	}
	if ef.MaxTurns > 0 {
		out = append(out, MaxTurns(ef.MaxTurns))
	}
	if ef.MaxTokens > 0 {
		out = append(out, MaxTokens(ef.MaxTokens))
	}
	if ef.MaxCost > 0 {
		out = append(out, MaxCost(ef.MaxCost))
	}
	if ef.MaxTime != "" {
		d, err := time.ParseDuration(ef.MaxTime)
		if err != nil {
			return nil, fmt.Errorf("expect.max_time: %w", err)
		}
		out = append(out, MaxTime(d))
	}
	if ef.Fails != "" {
		out = append(out, Fails(ef.Fails))
	}
	return out, nil
}
