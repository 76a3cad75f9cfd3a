package cli

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/modelcontextprotocol/go-sdk/auth"

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
