package cli

import (
	"errors"
	"flag"
	"fmt"
	"math"
	"os"
	"time"

	"github.com/lodeworks/lode/x/provider/anthropic"
	"github.com/lodeworks/lode/x/provider/gemini"
	"github.com/lodeworks/lode/x/provider/openai"
)

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
