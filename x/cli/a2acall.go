package cli

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/lodeworks/lode/tool"
)

// A2ACaller mounts the remote A2A agents lode.yaml's a2a: lists as tool
// sources. The root module's lode has none, as that module never requires
// the A2A SDK; x/a2a/cmd/lode passes one to Main with WithA2ACaller.
type A2ACaller interface {
	// Mount reads the card of agent a and mounts its skills in reg as
	// tools named "<a.Name>__<skill>"; the returned Closer releases its
	// connections when the command ends.
	Mount(ctx context.Context, reg tool.Registry, a A2ARemote) (io.Closer, error)
}

// A2ARemote is one entry of a2a: with its secrets read from the
// environment, as an A2ACaller needs it.
type A2ARemote struct {
	// Name prefixes the agent's tools; URL is its base URL (or its
	// card's).
	Name, URL string
	// Token is sent as a bearer token, and Headers as they are, to the
	// URL's origin only; empty means none.
	Token   string
	Headers map[string]string
	// Timeout bounds one remote task; 0 means the caller's default.
	Timeout time.Duration
	// ReadOnly takes every skill as changing nothing; without it every
	// skill is destructive, and each call waits for a person.
	ReadOnly bool
	// TrustOutput, Private and SendsOut are the flow labels of the
	// agent's tools (labels: in lode.yaml): by default the answers are
	// untrusted, hold nothing private, and calls send nothing out.
	TrustOutput, Private, SendsOut bool
	// HTTPClient carries the traffic (a cassette's, with lode run
	// --record or --replay); nil means the caller's default.
	HTTPClient *http.Client
}

// WithA2ACaller gives the commands that mount tools c for lode.yaml's a2a:.
func WithA2ACaller(c A2ACaller) Option { return func(e *env) { e.a2a = c } }

// noA2ACaller is what a build without an A2ACaller says of a2a: in lode.yaml.
const noA2ACaller = "this build of lode cannot call A2A agents; install the one that can: go install github.com/lodeworks/lode/x/a2a/cmd/lode@latest"

// A2AConfig is one entry of a2a: in lode.yaml: a remote A2A agent whose
// skills are mounted as tools, beside the mcp: servers.
type A2AConfig struct {
	Name string `yaml:"name"`
	URL  string `yaml:"url"`
	// TokenEnv names the variable holding a bearer token for the agent;
	// the token itself never goes in the file.
	TokenEnv string `yaml:"token_env"`
	// HeadersEnv maps header names to the variables holding their values.
	HeadersEnv map[string]string `yaml:"headers_env"`
	// Timeout bounds one remote task; absent means the caller's default
	// (five minutes in x/a2a).
	Timeout Duration `yaml:"timeout"`
	// Approve makes every call to the agent wait for a person, as
	// approve: [NAME] at the top level does.
	Approve bool `yaml:"approve"`
	// ReadOnly takes the agent's skills as changing nothing, so they do
	// not count as destructive.
	ReadOnly bool `yaml:"read_only"`
	// Labels are the flow labels of the agent's tools (see MCPLabels).
	Labels MCPLabels `yaml:"labels"`

	// agent is the entry with its secrets read (bindA2A); httpc carries
	// its traffic when a cassette does.
	agent A2ARemote
	httpc *http.Client
}

// checkA2A checks the a2a: entries as written.
func checkA2A(cfg *Config, f *fileLines) error {
	names := map[string]bool{}
	for _, s := range cfg.MCP {
		names[s.Name] = true
	}
	for i, a := range cfg.A2A {
		at := f.at(fmt.Sprintf("a2a[%d]", i))
		if a.Name == "" {
			return fmt.Errorf("%s: a2a[%d] has no name", at, i)
		}
		if err := tool.ValidateName(a.Name); err != nil || strings.Contains(a.Name, tool.Separator) {
			return fmt.Errorf("%s: a2a agent %q: the name prefixes its tools, so it takes only a-z, A-Z, 0-9, '_' and '-', without \"__\"", at, a.Name)
		}
		if names[a.Name] {
			return fmt.Errorf("%s: a2a agent %q: the name is taken by another mcp: server or a2a: agent", at, a.Name)
		}
		names[a.Name] = true
		if a.URL == "" {
			return fmt.Errorf("%s: a2a agent %q needs a url: the agent's http or https address", at, a.Name)
		}
		u, err := url.Parse(a.URL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return fmt.Errorf("%s: a2a agent %q needs a url: the agent's http or https address", f.at(fmt.Sprintf("a2a[%d].url", i)), a.Name)
		}
		if u.User != nil {
			return fmt.Errorf("%s: a2a agent %q: put credentials in token_env or headers_env, not in the url", f.at(fmt.Sprintf("a2a[%d].url", i)), a.Name)
		}
		if a.Timeout < 0 || (a.Timeout == 0 && f != nil && f.lines[fmt.Sprintf("a2a[%d].timeout", i)] != 0) {
			return fmt.Errorf("%s: a2a agent %q: timeout must be more than 0 (leave it out for the default)", f.at(fmt.Sprintf("a2a[%d].timeout", i)), a.Name)
		}
		for h, v := range a.HeadersEnv {
			if strings.TrimSpace(h) == "" || strings.TrimSpace(v) == "" {
				return fmt.Errorf("%s: a2a agent %q: headers_env maps a header name to the variable holding its value; one is empty", f.at(fmt.Sprintf("a2a[%d].headers_env", i)), a.Name)
			}
		}
	}
	return nil
}

// bindA2A readies the a2a: entries for the command: it refuses them in a
// build without an A2ACaller, and adds the agents approve: marks to the
// names every call of which waits for a person.
func bindA2A(e env, cfg *Config) error {
	if len(cfg.A2A) == 0 {
		return nil
	}
	if e.a2a == nil {
		return fmt.Errorf("%s: a2a: %s", cfg.file.at("a2a"), noA2ACaller)
	}
	cfg.a2a = e.a2a
	for i, a := range cfg.A2A {
		if a.Approve && !slices.Contains(cfg.Approve, a.Name) {
			cfg.Approve = append(cfg.Approve, a.Name)
		}
		ag, err := a2aAgent(e, cfg, i)
		if err != nil {
			return err
		}
		cfg.A2A[i].agent = ag
	}
	return nil
}

// a2aAgent is entry i with its secrets read.
func a2aAgent(e env, cfg *Config, i int) (A2ARemote, error) {
	a := cfg.A2A[i]
	out := A2ARemote{Name: a.Name, URL: a.URL, Timeout: time.Duration(a.Timeout), ReadOnly: a.ReadOnly,
		TrustOutput: a.Labels.Untrusted != nil && !*a.Labels.Untrusted,
		Private:     a.Labels.Private != nil && *a.Labels.Private,
		SendsOut:    a.Labels.SendsOut != nil && *a.Labels.SendsOut}
	if a.TokenEnv != "" {
		if out.Token = e.getenv(a.TokenEnv); out.Token == "" {
			return out, fmt.Errorf("%s: a2a agent %q: token_env names %s, which is not set", cfg.file.at(fmt.Sprintf("a2a[%d].token_env", i)), a.Name, a.TokenEnv)
		}
	}
	for h, v := range a.HeadersEnv {
		val := e.getenv(v)
		if val == "" {
			return out, fmt.Errorf("%s: a2a agent %q: headers_env: %s names %s, which is not set", cfg.file.at(fmt.Sprintf("a2a[%d].headers_env", i)), a.Name, h, v)
		}
		if out.Headers == nil {
			out.Headers = map[string]string{}
		}
		out.Headers[h] = val
	}
	return out, nil
}

// mountA2A mounts the a2a: agents in tb with the command's A2ACaller.
func mountA2A(ctx context.Context, tb *toolbox, cfg *Config) error {
	if len(cfg.A2A) == 0 {
		return nil
	}
	if cfg.a2a == nil {
		return fmt.Errorf("%s: a2a: %s", cfg.file.at("a2a"), noA2ACaller)
	}
	for i := range cfg.A2A {
		a := cfg.A2A[i].agent
		a.HTTPClient = cfg.A2A[i].httpc
		c, err := cfg.a2a.Mount(ctx, tb.reg, a)
		if err != nil {
			return fmt.Errorf("%s: a2a agent %q: %w", cfg.file.at(fmt.Sprintf("a2a[%d]", i)), a.Name, err)
		}
		if c != nil {
			tb.closers = append(tb.closers, c.Close)
		}
	}
	return nil
}

// useCassetteA2A sends the agents' traffic through the session's
// cassette, and hands it their tokens and header values.
func useCassetteA2A(e env, cfg *Config) {
	for i := range cfg.A2A {
		cfg.A2A[i].httpc = e.cassette.Client()
		a := cfg.A2A[i].agent
		if a.Token != "" {
			e.cassette.AddSecrets(a.Token)
		}
		for _, v := range a.Headers {
			e.cassette.AddSecrets(v)
		}
	}
}
