package cli

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"reflect"
	"slices"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/modelcontextprotocol/go-sdk/auth"

	"github.com/lodeworks/lode/loop"
	"github.com/lodeworks/lode/x/provider/anthropic"
	"github.com/lodeworks/lode/x/provider/gemini"
	"github.com/lodeworks/lode/x/provider/openai"
	"github.com/lodeworks/lode/x/tool/mcp"
	"github.com/lodeworks/lode/x/tool/pack"
)

// Config is lode.yaml.
type Config struct {
	Model ModelConfig `yaml:"model"`
	// System is the system prompt.
	System string `yaml:"system"`
	// MaxTurns bounds one run; 0 means DefaultMaxTurns.
	MaxTurns int `yaml:"max_turns"`
	// MaxCost bounds what one run may spend, in US dollars; 0 means no
	// limit. It needs the model's prices (lode's catalog, or Catalog).
	MaxCost float64 `yaml:"max_cost"`
	// Catalog gives models' windows and prices lode's catalog lacks or
	// has otherwise, by exact model name.
	Catalog map[string]CatalogEntry `yaml:"catalog"`
	// Tools is the seed's tools: map: pack name -> options.
	Tools pack.ToolsMap `yaml:"tools"`
	// MCP lists MCP servers to mount, each under its name.
	MCP []MCPServer `yaml:"mcp"`
	// A2A lists remote A2A agents to mount, each under its name (see
	// a2acall.go; only a build with an A2ACaller mounts them).
	A2A []A2AConfig `yaml:"a2a"`
	// History keeps long threads inside the context window.
	History HistoryConfig `yaml:"history"`
	// Approve names tools, packs and MCP servers whose calls wait for a
	// person's approval (destructive tools always do).
	Approve []string `yaml:"approve"`
	// Defer names packs and MCP servers whose tools lode run, chat,
	// resume and web offer only once the model found them with
	// tool_search (x/tool/toolsearch); lode tools marks them.
	Defer []string `yaml:"defer"`
	// Store is the directory of the ledger (--store).
	Store string `yaml:"store"`
	// Lease is how long the lease a run holds on its stored thread lasts
	// without renewal (loop.WithLease): how soon lode recover may take
	// over from a process that died. 0 means loop.DefaultLeaseTTL.
	Lease Duration `yaml:"lease"`
	// ApprovalExpiry lets lode recover and lode worker deny a call that
	// has waited this long for approval; 0 means calls wait for ever.
	ApprovalExpiry Duration `yaml:"approval_expiry"`
	// Policy says which roles may use which tools (x/policy); PolicyFile
	// names a file that holds it instead. Either is followed for changes.
	Policy     *yaml.Node `yaml:"policy"`
	PolicyFile string     `yaml:"policy_file"`
	// Tokens grant an identity (user, tenant, roles) to HTTP callers, each
	// token read from a variable or a file. lode web and serve --http
	// check them, and proxy:, whether or not a policy is configured.
	Tokens []TokenConfig `yaml:"tokens"`
	// Proxy trusts an authenticating proxy's headers from its addresses.
	Proxy ProxyConfig `yaml:"proxy"`
	// Sessions sets the cookie lode web's page trades a token for.
	Sessions SessionsConfig `yaml:"sessions"`
	// Temporal says where lode worker, run and resume --temporal find
	// their runs.
	Temporal TemporalConfig `yaml:"temporal"`
	// A2AServer describes lode serve --a2a's agent card (x/a2a).
	A2AServer A2AServerConfig `yaml:"a2a_server"`
	// Guards check what flows through every turn (x/guard).
	Guards GuardsConfig `yaml:"guards"`
	// Memory keeps facts about each user across threads (x/memory).
	Memory MemoryConfig `yaml:"memory"`
	// Trace says whether spans carry the conversation's content.
	Trace TraceConfig `yaml:"trace"`

	// file says where each key was, for errors found after parsing; nil
	// when no file was read.
	file *fileLines
	// a2a mounts A2A: the command's A2ACaller (bindA2A).
	a2a A2ACaller
}

// The providers model.provider and --provider name.
const (
	providerOpenAI    = "openai"
	providerAnthropic = "anthropic"
)

// checkProvider refuses a provider lode cannot build; where says where the
// value was written.
func checkProvider(where, name string) error {
	switch name {
	case "", providerOpenAI, providerAnthropic, providerOpenAIResponses, providerGemini:
		return nil
	}
	return fmt.Errorf("%s: %q is not a provider lode knows: write openai (the default, any OpenAI-compatible server), openai-responses, anthropic or gemini", where, name)
}

// DefaultMaxTurns bounds a run when neither lode.yaml nor --max-turns does.
const DefaultMaxTurns = 20

// ModelConfig is the model: section.
type ModelConfig struct {
	// Provider is the API the server speaks: "openai" (the default, for
	// OpenAI and every compatible server), "anthropic" (the Messages
	// API, for Claude's prompt caching, thinking and exact usage) or
	// "gemini" (the Gemini API, or Vertex AI; see newGemini).
	Provider string `yaml:"provider"`
	// BaseURL of the API: an OpenAI-compatible one (OpenAI, vLLM,
	// llama.cpp, Ollama, LiteLLM ...), or Anthropic's or a server
	// speaking the same.
	BaseURL string `yaml:"base_url"`
	Name    string `yaml:"name"`
	// APIKeyEnv names the environment variable holding the key (default
	// OPENAI_API_KEY, ANTHROPIC_API_KEY for provider anthropic,
	// GEMINI_API_KEY for provider gemini); the
	// key itself never goes in the file.
	APIKeyEnv string `yaml:"api_key_env"`
	// Stream false asks for whole answers, for a server that cannot
	// stream; the default is true.
	Stream *bool `yaml:"stream"`
	// Timeout bounds one whole run (every turn and tool call of one
	// prompt); 0 means no bound.
	Timeout Duration `yaml:"timeout"`
	// IdleTimeout bounds how long the model server may send nothing
	// (before its answer starts, and between two chunks of it); 0 means
	// openai.DefaultIdleTimeout.
	IdleTimeout Duration `yaml:"idle_timeout"`
	// Fallback lists the models to try, in order, when this one fails
	// before it starts answering; each entry has the keys above but
	// timeout (see fallback.go).
	Fallback []ModelConfig `yaml:"fallback"`
	// Hedge, when set, also asks the next model when this one has not
	// started answering after it; 0 means no hedging.
	Hedge Duration `yaml:"hedge"`
	// keyEnvDefault says APIKeyEnv is the provider's default variable,
	// not one lode.yaml named (for the warning about an unset key).
	keyEnvDefault bool
}

// MCPServer is one MCP server to mount: a command (stdio) or a URL
// (streamable HTTP).
type MCPServer struct {
	Name    string   `yaml:"name"`
	Command []string `yaml:"command"`
	// Env is added to the few variables a stdio server inherits (PATH,
	// HOME, ... — see mcp.InheritedEnv); InheritEnv passes lode's whole
	// environment, API keys included.
	Env        map[string]string `yaml:"env"`
	InheritEnv bool              `yaml:"inherit_env"`
	URL        string            `yaml:"url"`
	Headers    map[string]string `yaml:"headers"`
	// Timeout bounds each request to the server once connected; 0
	// (absent) leaves the MCP client's default (mcp.DefaultCallTimeout).
	Timeout Duration `yaml:"timeout"`
	// ConnectTimeout bounds connecting: starting a command and the MCP
	// handshake, or opening a url's session; 0 (absent) leaves
	// mcp.DefaultConnectTimeout, which fits npx on a cold cache.
	ConnectTimeout Duration `yaml:"connect_timeout"`
	// OAuth names a client registered in advance with the server's
	// authorization server; absent, lode mcp login registers one itself.
	OAuth MCPOAuth `yaml:"oauth"`
	// ReadOnly says every tool of the server changes nothing; Trust names
	// tools of it, as the server names them, that are not destructive.
	// MCP takes a tool without annotations as destructive, and lode asks
	// a person about every call to a destructive tool; these take the
	// operator's word over the server's (mcp.WithReadOnly, WithTrusted).
	// approve: and the policy's approve: rules still apply.
	ReadOnly bool     `yaml:"read_only"`
	Trust    []string `yaml:"trust"`
	// Labels are the flow labels of the server's tools, and ToolLabels
	// those of single tools, as the server names them, each field left
	// out taken from Labels. Left out, a tool's output is untrusted (any
	// server may pass on text written by others) and nothing else: see
	// mcp.WithLabels and the policy's flows:.
	Labels     MCPLabels            `yaml:"labels"`
	ToolLabels map[string]MCPLabels `yaml:"tool_labels"`
	// httpc carries the traffic of a url: server; nil means the MCP
	// client's own.
	httpc *http.Client
	// elicit answers the server's elicitations (lode chat); nil declines.
	elicit mcp.Elicitor
	// oauth sends the token of lode mcp login; nil sends none.
	oauth auth.OAuthHandler
	// notify takes the server's progress reports and logs; nil drops them.
	notify func(context.Context, mcp.Notification)
}

// MCPLabels are the flow labels of an MCP server's tools in lode.yaml;
// each field left out keeps its default (or, in tool_labels:, the
// server's labels:).
type MCPLabels struct {
	// Untrusted: the tools' output may carry text written by outside
	// parties; true unless said otherwise.
	Untrusted *bool `yaml:"untrusted"`
	// Private: the tools' output holds the user's private data.
	Private *bool `yaml:"private"`
	// SendsOut: a call sends data out to someone other than the user.
	SendsOut *bool `yaml:"sends_out"`
}

// over fills what l leaves out from base.
func (l MCPLabels) over(base MCPLabels) MCPLabels {
	if l.Untrusted == nil {
		l.Untrusted = base.Untrusted
	}
	if l.Private == nil {
		l.Private = base.Private
	}
	if l.SendsOut == nil {
		l.SendsOut = base.SendsOut
	}
	return l
}

// client is l for mcp.WithLabels.
func (l MCPLabels) client() mcp.Labels {
	return mcp.Labels{
		TrustOutput: l.Untrusted != nil && !*l.Untrusted,
		Private:     l.Private != nil && *l.Private,
		SendsOut:    l.SendsOut != nil && *l.SendsOut,
	}
}

// Duration is a lode.yaml duration, written as time.ParseDuration reads
// it: "90s", "5m", "1h30m".
type Duration time.Duration

// UnmarshalYAML reads a duration; checkKeys has already said where a bad
// one is, so the error here is only a safety net.
func (d *Duration) UnmarshalYAML(n *yaml.Node) error {
	if n.Tag == "!!null" {
		*d = 0
		return nil
	}
	v, err := time.ParseDuration(n.Value)
	if err != nil {
		return fmt.Errorf("line %d: %q is not a duration", n.Line, n.Value)
	}
	*d = Duration(v)
	return nil
}

// defaultTools mounts when no lode.yaml is read.
var defaultTools = pack.ToolsMap{{Name: "calculator"}}

// fileLines remembers the line of every key of a configuration file, by
// its path ("model.timeout", "mcp[0].name", "tools.calculator").
type fileLines struct {
	name  string
	lines map[string]int
}

// at names the place of path for an error: "lode.yaml:3", or only the file
// when the key is not in it.
func (f *fileLines) at(path string) string {
	if f == nil {
		return "lode.yaml"
	}
	if n, ok := f.lines[path]; ok {
		return fmt.Sprintf("%s:%d", f.name, n)
	}
	return f.name
}

var (
	durationType = reflect.TypeFor[Duration]()
	toolsMapType = reflect.TypeFor[pack.ToolsMap]()
)

// entryNames says what one entry of a list section is, for errors.
var entryNames = map[string]string{"mcp": "an mcp: server", "a2a": "an a2a: agent", "tokens": "a tokens: entry", "guards.rules": "a guards.rules: entry"}

// checkKeys walks a node of the file against the Go type it decodes into:
// every key must be one the type has, every section the shape it needs,
// every duration one time.ParseDuration reads. where says which section
// the node is, for the message about an unknown key.
func (f *fileLines) checkKeys(n *yaml.Node, t reflect.Type, path, where string) error {
	for n.Kind == yaml.AliasNode {
		n = n.Alias
	}
	if n.Tag == "!!null" {
		return nil
	}
	switch {
	case t == durationType:
		if n.Kind != yaml.ScalarNode {
			return fmt.Errorf("%s:%d: %s must be a duration (write e.g. 90s, 5m or 1h30m)", f.name, n.Line, path)
		}
		if _, err := time.ParseDuration(n.Value); err != nil {
			return fmt.Errorf("%s:%d: %s: %q is not a duration (write e.g. 90s, 5m or 1h30m)", f.name, n.Line, path, n.Value)
		}
	case t == toolsMapType:
		if n.Kind == yaml.MappingNode {
			for i := 0; i+1 < len(n.Content); i += 2 {
				k := n.Content[i]
				if _, seen := f.lines[path+"."+k.Value]; !seen {
					f.lines[path+"."+k.Value] = k.Line
				}
			}
		}
	case t.Kind() == reflect.Struct:
		if n.Kind != yaml.MappingNode {
			if path == "" {
				return fmt.Errorf("%s:%d: the file must be a mapping of keys (model:, system:, max_turns:, tools:, mcp:)", f.name, n.Line)
			}
			return fmt.Errorf("%s:%d: %s must be a mapping of keys", f.name, n.Line, path)
		}
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			if k.Value == "<<" { // a YAML merge key; its keys are checked where they are written
				continue
			}
			field, ok := fieldByKey(t, k.Value)
			if !ok {
				hint := ""
				if k.Value == "api_key" {
					hint = " (the key never goes in the file: api_key_env names the variable that holds it)"
				}
				if k.Value == "client_secret" && strings.HasSuffix(path, ".oauth") {
					hint = " (the secret never goes in the file: client_secret_env or client_secret_file says where it is)"
				}
				if k.Value == "token" && strings.HasPrefix(path, "tokens[") {
					hint = " (the token never goes in the file: env: or file: says where it is)"
				}
				return fmt.Errorf("%s:%d: unknown key %q %s%s", f.name, k.Line, k.Value, where, hint)
			}
			sub := k.Value
			if path != "" {
				sub = path + "." + k.Value
			}
			f.lines[sub] = k.Line
			if err := f.checkKeys(v, field.Type, sub, "in "+sub+":"); err != nil {
				return err
			}
		}
	case t.Kind() == reflect.Map && t.Elem().Kind() == reflect.Struct:
		if n.Kind != yaml.MappingNode {
			return fmt.Errorf("%s:%d: %s must be a mapping of names", f.name, n.Line, path)
		}
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			sub := path + "." + k.Value
			f.lines[sub] = k.Line
			if err := f.checkKeys(v, t.Elem(), sub, "in "+sub+":"); err != nil {
				return err
			}
		}
	case t.Kind() == reflect.Slice && t.Elem().Kind() == reflect.String && n.Kind == yaml.SequenceNode:
		// Each entry's line, for an error about one name of a list.
		for i, item := range n.Content {
			f.lines[fmt.Sprintf("%s[%d]", path, i)] = item.Line
		}
	case t.Kind() == reflect.Slice && t.Elem().Kind() == reflect.Struct:
		if n.Kind != yaml.SequenceNode {
			return fmt.Errorf("%s:%d: %s must be a list", f.name, n.Line, path)
		}
		entry, ok := entryNames[path]
		if !ok {
			entry = "an entry of " + path + ":"
		}
		for i, item := range n.Content {
			sub := fmt.Sprintf("%s[%d]", path, i)
			f.lines[sub] = item.Line
			if err := f.checkKeys(item, t.Elem(), sub, "in "+entry); err != nil {
				return err
			}
		}
	}
	return nil
}

// fieldByKey finds the field of struct type t that the YAML key k fills.
func fieldByKey(t reflect.Type, k string) (reflect.StructField, bool) {
	for i := range t.NumField() {
		f := t.Field(i)
		if name, _, _ := strings.Cut(f.Tag.Get("yaml"), ","); f.IsExported() && name == k && name != "-" {
			return f, true
		}
	}
	return reflect.StructField{}, false
}

// parseConfig reads a lode.yaml. An unknown key, a section of the wrong
// shape or a bad value is an error that names its line.
func parseConfig(name string, data []byte) (*Config, error) {
	// One document: a second one (after ---) would be dropped without a
	// word, and with it any policy:, approve: or tokens: it holds.
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil && !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("%s: %s", name, strings.TrimPrefix(err.Error(), "yaml: "))
	}
	var next yaml.Node
	switch err := dec.Decode(&next); {
	case err == nil:
		line := next.Line
		if len(next.Content) > 0 {
			line = next.Content[0].Line
		}
		return nil, fmt.Errorf("%s:%d: a second YAML document starts here; lode.yaml is one document, and the settings of any other would be ignored", name, line)
	case !errors.Is(err, io.EOF):
		return nil, fmt.Errorf("%s: after the first document: %s", name, strings.TrimPrefix(err.Error(), "yaml: "))
	}
	f := &fileLines{name: name, lines: map[string]int{}}
	cfg := &Config{file: f}
	if len(doc.Content) == 0 {
		return cfg, nil
	}
	root := doc.Content[0]
	if err := f.checkKeys(root, reflect.TypeFor[Config](), "", "at the top level"); err != nil {
		return nil, err
	}
	if err := root.Decode(cfg); err != nil {
		msg := strings.TrimPrefix(err.Error(), "yaml: ")
		msg = strings.ReplaceAll(msg, "unmarshal errors:\n  ", "")
		return nil, fmt.Errorf("%s: %s", name, msg)
	}
	for i, s := range cfg.MCP {
		at := f.at(fmt.Sprintf("mcp[%d]", i))
		switch {
		case s.Name == "":
			return nil, fmt.Errorf("%s: mcp[%d] has no name", at, i)
		case len(s.Command) == 0 && s.URL == "":
			return nil, fmt.Errorf("%s: mcp server %q needs a command or a url", at, s.Name)
		case s.URL != "" && (len(s.Env) > 0 || s.InheritEnv):
			return nil, fmt.Errorf("%s: mcp server %q: env and inherit_env apply to a command, not a url", at, s.Name)
		case len(s.Command) > 0 && s.URL != "":
			return nil, fmt.Errorf("%s: mcp server %q has both a command and a url; choose one", at, s.Name)
		case s.Timeout < 0 || (s.Timeout == 0 && f.lines[fmt.Sprintf("mcp[%d].timeout", i)] != 0):
			return nil, fmt.Errorf("%s: mcp server %q: timeout must be more than 0 (leave it out for the client's default)", f.at(fmt.Sprintf("mcp[%d].timeout", i)), s.Name)
		case s.ConnectTimeout < 0 || (s.ConnectTimeout == 0 && f.lines[fmt.Sprintf("mcp[%d].connect_timeout", i)] != 0):
			return nil, fmt.Errorf("%s: mcp server %q: connect_timeout must be more than 0 (leave it out for the default, %s)", f.at(fmt.Sprintf("mcp[%d].connect_timeout", i)), s.Name, mcp.DefaultConnectTimeout)
		}
		if s.ReadOnly && len(s.Trust) > 0 {
			return nil, fmt.Errorf("%s: mcp server %q: read_only: true already trusts every tool of the server; leave trust: out", f.at(fmt.Sprintf("mcp[%d].trust", i)), s.Name)
		}
		for n := range s.ToolLabels {
			if strings.TrimSpace(n) == "" {
				return nil, fmt.Errorf("%s: mcp server %q: tool_labels: a tool name is empty; write the names of the server's tools", f.at(fmt.Sprintf("mcp[%d].tool_labels", i)), s.Name)
			}
		}
		for j, n := range s.Trust {
			if strings.TrimSpace(n) == "" {
				return nil, fmt.Errorf("%s: mcp server %q: trust: entry %d is empty; write the names of the server's tools", f.at(fmt.Sprintf("mcp[%d].trust[%d]", i, j)), s.Name, j+1)
			}
		}
		if err := cfg.MCP[i].OAuth.check(f, fmt.Sprintf("mcp[%d].oauth", i), s); err != nil {
			return nil, err
		}
	}
	if err := checkA2A(cfg, f); err != nil {
		return nil, err
	}
	if err := checkProvider(f.at("model.provider")+": model.provider", cfg.Model.Provider); err != nil {
		return nil, err
	}
	if err := cfg.Guards.check(f); err != nil {
		return nil, err
	}
	if err := cfg.Memory.check(f); err != nil {
		return nil, err
	}
	if err := cfg.Trace.check(f); err != nil {
		return nil, err
	}
	if err := checkCost(cfg); err != nil {
		return nil, err
	}
	if err := checkFallback(cfg, f); err != nil {
		return nil, err
	}
	if cfg.MaxTurns < 0 {
		return nil, fmt.Errorf("%s: max_turns must not be negative (0 means the default, %d)", f.at("max_turns"), DefaultMaxTurns)
	}
	if cfg.Model.Timeout < 0 {
		return nil, fmt.Errorf("%s: model.timeout must not be negative (0 means no limit)", f.at("model.timeout"))
	}
	if cfg.Model.IdleTimeout < 0 {
		return nil, fmt.Errorf("%s: model.idle_timeout must not be negative (0 means the default, %s)", f.at("model.idle_timeout"), openai.DefaultIdleTimeout)
	}
	if err := checkLogins(cfg, f); err != nil {
		return nil, err
	}
	if cfg.Lease < 0 {
		return nil, fmt.Errorf("%s: lease must not be negative (0 means the default, %s)", f.at("lease"), loop.DefaultLeaseTTL)
	}
	if cfg.ApprovalExpiry < 0 {
		return nil, fmt.Errorf("%s: approval_expiry must not be negative (0 means calls wait for approval for ever)", f.at("approval_expiry"))
	}
	return cfg, nil
}

// options are the flags every agent command shares.
type options struct {
	config   string
	provider string
	baseURL  string
	model    string
	system   string
	maxTurns int
	maxCost  float64
	timeout  time.Duration
	idle     time.Duration
	trace    bool
	store    string
	role     string
	// approvalExpiry is --approval-expiry (lode recover and worker).
	approvalExpiry time.Duration
	// tenant is --tenant (lode run, chat and resume).
	tenant string
	// thread is what the stored thread a command goes on with remembers
	// of its model; load puts it between the environment and the flags.
	thread modelMemory
}

// register adds the flags of a command that runs the model (run, chat).
func (o *options) register(fs *flag.FlagSet) {
	o.registerTools(fs)
	fs.StringVar(&o.provider, "provider", "", "the API the model server speaks: openai (any OpenAI-compatible server), openai-responses, anthropic or gemini; empty means model.provider in lode.yaml, or openai")
	fs.StringVar(&o.baseURL, "base-url", "", "API base URL (env OPENAI_BASE_URL, ANTHROPIC_BASE_URL for --provider anthropic, GOOGLE_GEMINI_BASE_URL for --provider gemini)")
	fs.StringVar(&o.model, "model", "", "model name (env LODE_MODEL)")
	fs.StringVar(&o.system, "system", "", "system prompt")
	fs.IntVar(&o.maxTurns, "max-turns", 0, fmt.Sprintf("most model turns per run; 0 means max_turns in lode.yaml, or %d", DefaultMaxTurns))
	fs.Float64Var(&o.maxCost, "max-cost", 0, "stop a run that has spent this many US dollars with the model still calling tools; 0 means max_cost in lode.yaml, or no limit")
	fs.DurationVar(&o.timeout, "timeout", 0, "stop a run that takes longer than this (e.g. 5m); 0 means model.timeout in lode.yaml, or no limit")
	fs.DurationVar(&o.idle, "idle-timeout", 0, fmt.Sprintf("stop a run when the model server sends nothing for this long; 0 means model.idle_timeout in lode.yaml, or %s", openai.DefaultIdleTimeout))
	o.registerTrace(fs)
	o.registerStore(fs)
	o.registerRole(fs)
}

// registerTools adds the flags of a command that only mounts tools.
func (o *options) registerTools(fs *flag.FlagSet) {
	fs.StringVar(&o.config, "config", "", "configuration file (default ./lode.yaml when it exists)")
}

func (o *options) registerTrace(fs *flag.FlagSet) {
	fs.BoolVar(&o.trace, "trace", false, "print spans to stderr (OTEL_EXPORTER_OTLP_* also export them)")
}

// check refuses flag values that lode.yaml would refuse too, so that a
// value means the same in both places.
func (o *options) check() error {
	if err := checkProvider("--provider", o.provider); err != nil {
		return usageError{err.Error()}
	}
	if o.maxTurns < 0 {
		return usageError{fmt.Sprintf("--max-turns %d: must not be negative (0 means max_turns in lode.yaml, or %d)", o.maxTurns, DefaultMaxTurns)}
	}
	if o.maxCost < 0 || math.IsNaN(o.maxCost) || math.IsInf(o.maxCost, 0) {
		return usageError{fmt.Sprintf("--max-cost %v: must be a number of US dollars, not negative (0 means max_cost in lode.yaml, or no limit)", o.maxCost)}
	}
	if o.timeout < 0 {
		return usageError{fmt.Sprintf("--timeout %s: must not be negative (0 means model.timeout in lode.yaml, or no limit)", o.timeout)}
	}
	if o.idle < 0 {
		return usageError{fmt.Sprintf("--idle-timeout %s: must not be negative (0 means model.idle_timeout in lode.yaml, or %s)", o.idle, openai.DefaultIdleTimeout)}
	}
	return nil
}

// load reads the configuration and applies the environment and flags over it.
func (o *options) load(e env) (*Config, error) {
	if err := o.check(); err != nil {
		return nil, err
	}
	path, explicit := o.config, o.config != ""
	if !explicit {
		path = "lode.yaml"
	}
	cfg := &Config{}
	data, err := os.ReadFile(path)
	switch {
	case err == nil:
		if cfg, err = parseConfig(path, data); err != nil {
			return nil, err
		}
	case explicit || !errors.Is(err, os.ErrNotExist):
		return nil, fmt.Errorf("config: %w", err)
	}
	if cfg.Tools == nil && cfg.file == nil {
		// Without a lode.yaml the calculator makes a first run show a
		// tool call; a lode.yaml that names no tools: mounts none.
		cfg.Tools = defaultTools
	}
	fromThread := o.thread.applyProvider(cfg, o.provider)
	if o.provider != "" {
		cfg.Model.Provider = o.provider
	}
	baseURLEnv, keyEnv := "OPENAI_BASE_URL", "OPENAI_API_KEY"
	switch cfg.Model.Provider {
	case providerAnthropic:
		baseURLEnv, keyEnv = anthropic.EnvBaseURL, anthropic.EnvAPIKey
	case providerGemini:
		baseURLEnv, keyEnv = gemini.EnvBaseURL, gemini.EnvAPIKey
	}
	if v := e.getenv(baseURLEnv); v != "" {
		cfg.Model.BaseURL = v
	}
	if v := e.getenv("LODE_MODEL"); v != "" {
		cfg.Model.Name = v
	}
	if fromThread {
		o.thread.applyModel(cfg)
	}
	if o.baseURL != "" {
		cfg.Model.BaseURL = o.baseURL
	}
	if o.model != "" {
		cfg.Model.Name = o.model
	}
	if o.system != "" {
		cfg.System = o.system
	}
	if o.maxTurns > 0 {
		cfg.MaxTurns = o.maxTurns
	}
	if cfg.MaxTurns == 0 {
		cfg.MaxTurns = DefaultMaxTurns
	}
	if o.maxCost > 0 {
		cfg.MaxCost = o.maxCost
	}
	if o.timeout > 0 {
		cfg.Model.Timeout = Duration(o.timeout)
	}
	if o.idle > 0 {
		cfg.Model.IdleTimeout = Duration(o.idle)
	}
	if o.approvalExpiry > 0 {
		cfg.ApprovalExpiry = Duration(o.approvalExpiry)
	}
	if cfg.Model.IdleTimeout == 0 {
		cfg.Model.IdleTimeout = Duration(openai.DefaultIdleTimeout)
	}
	if cfg.Model.APIKeyEnv == "" || cfg.Model.APIKeyEnv == keyEnv && fromThread && o.thread.keyEnv == keyEnv {
		cfg.Model.APIKeyEnv, cfg.Model.keyEnvDefault = keyEnv, true
	}
	if err := bindA2A(e, cfg); err != nil {
		return nil, err
	}
	return cfg, nil
}

// parseFlags reads a command's flags wherever they stand among its other
// arguments, so that "lode run "hi" --model m" means what it says; "--"
// ends the flags, for arguments that start with "-". It returns the other
// arguments in order.
func parseFlags(fs *flag.FlagSet, e env, args []string) ([]string, error) {
	// The flag package prints the whole help after any mistake; a mistake
	// is one line (main prints it), and only -h prints the help.
	help := fs.Usage
	fs.Usage = func() {}
	fs.SetOutput(io.Discard)
	defer func() { fs.Usage = help; fs.SetOutput(e.stderr) }()
	var rest []string
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				fs.SetOutput(e.stderr)
				help()
				return nil, err
			}
			msg := err.Error()
			hint := ""
			if name, ok := strings.CutPrefix(msg, "flag provided but not defined: -"); ok {
				hint = suggestFlag(fs, name)
				msg += hint
			}
			// A close flag says it was a typo, not a prompt's word.
			if len(rest) > 0 && hint == "" {
				msg += ` (flags may come before or after the other arguments; put -- before an argument that starts with "-")`
			}
			return nil, usageError{msg}
		}
		left := fs.Args()
		if endedByTerminator(fs, args[:len(args)-len(left)]) {
			return append(rest, left...), nil
		}
		if len(left) == 0 {
			return rest, nil
		}
		rest = append(rest, left[0])
		args = left[1:]
	}
}

// endedByTerminator reports whether the arguments a Parse consumed end
// with the "--" that ends the flags, rather than with a flag's value that
// happens to be "--" (--system --).
func endedByTerminator(fs *flag.FlagSet, used []string) bool {
	n := len(used)
	if n == 0 || used[n-1] != "--" {
		return false
	}
	if n == 1 {
		return true
	}
	prev := strings.TrimLeft(used[n-2], "-")
	if !strings.HasPrefix(used[n-2], "-") || strings.Contains(prev, "=") {
		return true
	}
	f := fs.Lookup(prev)
	if f == nil {
		return true
	}
	b, ok := f.Value.(interface{ IsBoolFlag() bool })
	return ok && b.IsBoolFlag()
}

// noArgs refuses arguments to a command that takes only flags.
func noArgs(cmd string, args []string) error {
	if len(args) > 0 {
		return usageError{fmt.Sprintf("%s takes no arguments; got %q", cmd, args[0])}
	}
	return nil
}

// describe gives a command's -h its synopsis and, after the flags, notes.
// The flags named hidden still work and are left out of the list (an old
// spelling kept for the scripts that use it).
func describe(fs *flag.FlagSet, synopsis, notes string, hidden ...string) {
	fs.Usage = func() {
		out := fs.Output()
		fmt.Fprintf(out, "usage: %s\n\nflags (before or after the other arguments; -- ends them):\n", synopsis)
		shown := flag.NewFlagSet(fs.Name(), flag.ContinueOnError)
		shown.SetOutput(out)
		fs.VisitAll(func(f *flag.Flag) {
			if !slices.Contains(hidden, f.Name) {
				shown.Var(f.Value, f.Name, f.Usage)
			}
		})
		shown.PrintDefaults()
		if notes != "" {
			fmt.Fprintf(out, "\n%s\n", notes)
		}
	}
}

// suggestFlag is " (did you mean --NAME?)" for the flag of fs closest to a
// mistyped name, or "" when none is close: at most two edits apart, or
// one name the start of the other.
func suggestFlag(fs *flag.FlagSet, typed string) string {
	typed = strings.TrimLeft(typed, "-")
	best, dist := "", 3
	fs.VisitAll(func(f *flag.Flag) {
		if f.Usage == "" || strings.HasPrefix(f.Usage, "deprecated") {
			return
		}
		d := editDistance(typed, f.Name)
		if d > 2 && len(typed) >= 3 && (strings.HasPrefix(f.Name, typed) || strings.HasPrefix(typed, f.Name)) {
			d = 2
		}
		if d < dist {
			best, dist = f.Name, d
		}
	})
	if best == "" {
		return ""
	}
	return " (did you mean --" + best + "?)"
}

// editDistance counts the insertions, deletions, substitutions and
// swaps of two neighbours that turn a into b.
func editDistance(a, b string) int {
	prev2 := make([]int, len(b)+1)
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			if i > 1 && j > 1 && a[i-1] == b[j-2] && a[i-2] == b[j-1] {
				cur[j] = min(cur[j], prev2[j-2]+1)
			}
		}
		prev2, prev, cur = prev, cur, prev2
	}
	return prev[len(b)]
}
