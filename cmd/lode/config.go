package main

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"regexp"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/lodeworks/lode/x/tool/pack"
)

// Config is lode.yaml.
type Config struct {
	Model ModelConfig `yaml:"model"`
	// System is the system prompt.
	System string `yaml:"system"`
	// MaxTurns bounds one run (default 20).
	MaxTurns int `yaml:"max_turns"`
	// Tools is the seed's tools: map: pack name -> options.
	Tools pack.ToolsMap `yaml:"tools"`
	// MCP lists MCP servers to mount, each under its name.
	MCP []MCPServer `yaml:"mcp"`
}

// ModelConfig is the model: section.
type ModelConfig struct {
	// BaseURL of an OpenAI-compatible API (OpenAI, vLLM, llama.cpp,
	// Ollama, LiteLLM ...).
	BaseURL string `yaml:"base_url"`
	Name    string `yaml:"name"`
	// APIKeyEnv names the environment variable holding the key (default
	// OPENAI_API_KEY); the key itself never goes in the file.
	APIKeyEnv string `yaml:"api_key_env"`
	// Stream false asks for whole answers, for a server that cannot
	// stream; the default is true.
	Stream *bool `yaml:"stream"`
}

// sections names the YAML section each configuration type is read from.
var sections = map[string]string{"main.ModelConfig": "model:", "main.MCPServer": "an mcp: server"}

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
}

// defaultTools mounts when the configuration has no tools: map.
var defaultTools = pack.ToolsMap{{Name: "calculator"}}

var unknownField = regexp.MustCompile(`line (\d+): field (\S+) not found in type (\S+)`)

// parseConfig reads a lode.yaml; an unknown key is an error that names it.
func parseConfig(name string, data []byte) (*Config, error) {
	cfg := &Config{}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(cfg); err != nil && !errors.Is(err, io.EOF) {
		msg := err.Error()
		if m := unknownField.FindStringSubmatch(msg); m != nil {
			where := "at the top level"
			if sec, ok := sections[m[3]]; ok {
				where = "in " + sec
			}
			hint := ""
			if m[2] == "api_key" {
				hint = " (the key never goes in the file: api_key_env names the variable that holds it)"
			}
			return nil, fmt.Errorf("%s:%s: unknown key %q %s%s", name, m[1], m[2], where, hint)
		}
		msg = strings.TrimPrefix(msg, "yaml: ")
		msg = strings.ReplaceAll(msg, "unmarshal errors:\n  ", "")
		return nil, fmt.Errorf("%s: %s", name, msg)
	}
	for i, s := range cfg.MCP {
		switch {
		case s.Name == "":
			return nil, fmt.Errorf("%s: mcp[%d] has no name", name, i)
		case len(s.Command) == 0 && s.URL == "":
			return nil, fmt.Errorf("%s: mcp server %q needs a command or a url", name, s.Name)
		case s.URL != "" && (len(s.Env) > 0 || s.InheritEnv):
			return nil, fmt.Errorf("%s: mcp server %q: env and inherit_env apply to a command, not a url", name, s.Name)
		case len(s.Command) > 0 && s.URL != "":
			return nil, fmt.Errorf("%s: mcp server %q has both a command and a url; choose one", name, s.Name)
		}
	}
	if cfg.MaxTurns < 0 {
		return nil, fmt.Errorf("%s: max_turns must not be negative", name)
	}
	return cfg, nil
}

// options are the flags every agent command shares.
type options struct {
	config   string
	baseURL  string
	model    string
	system   string
	maxTurns int
	trace    bool
}

// register adds the flags of a command that runs the model (run, chat).
func (o *options) register(fs *flag.FlagSet) {
	o.registerTools(fs)
	fs.StringVar(&o.baseURL, "base-url", "", "OpenAI-compatible API base URL (env OPENAI_BASE_URL)")
	fs.StringVar(&o.model, "model", "", "model name (env LODE_MODEL)")
	fs.StringVar(&o.system, "system", "", "system prompt")
	fs.IntVar(&o.maxTurns, "max-turns", 0, "most model turns per run (default 20)")
	o.registerTrace(fs)
}

// registerTools adds the flags of a command that only mounts tools.
func (o *options) registerTools(fs *flag.FlagSet) {
	fs.StringVar(&o.config, "config", "", "configuration file (default ./lode.yaml when it exists)")
}

func (o *options) registerTrace(fs *flag.FlagSet) {
	fs.BoolVar(&o.trace, "trace", false, "print spans to stderr (OTEL_EXPORTER_OTLP_* also export them)")
}

// load reads the configuration and applies the environment and flags over it.
func (o *options) load(e env) (*Config, error) {
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
	if cfg.Tools == nil {
		cfg.Tools = defaultTools
	}
	if v := e.getenv("OPENAI_BASE_URL"); v != "" {
		cfg.Model.BaseURL = v
	}
	if v := e.getenv("LODE_MODEL"); v != "" {
		cfg.Model.Name = v
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
		cfg.MaxTurns = 20
	}
	if cfg.Model.APIKeyEnv == "" {
		cfg.Model.APIKeyEnv = "OPENAI_API_KEY"
	}
	return cfg, nil
}

func parseFlags(fs *flag.FlagSet, e env, args []string) error {
	fs.SetOutput(e.stderr)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return usageError{err.Error()}
	}
	return nil
}
