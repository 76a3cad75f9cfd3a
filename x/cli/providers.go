package cli

import (
	"errors"
	"fmt"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/lodeworks/lode/provider"
	"github.com/lodeworks/lode/x/provider/anthropic"
	"github.com/lodeworks/lode/x/provider/openai"
)

const noEndpoint = "no model endpoint configured: set --base-url and --model (or model: in lode.yaml) for any OpenAI-compatible server, or OPENAI_API_KEY for OpenAI — or try `lode demo`, which needs neither"

// modelProvider is a provider that says which server it talks to, for
// errors.
type modelProvider interface {
	provider.Provider
	BaseURL() string
}

// newProvider builds the provider a configuration names.
func newProvider(cfg *Config, e env, tracer trace.Tracer) (modelProvider, error) {
	warnKey(e, cfg.Model)
	switch cfg.Model.Provider {
	case providerAnthropic:
		return newAnthropic(cfg, e, tracer)
	case providerOpenAIResponses:
		return newResponses(cfg, e, tracer)
	case providerGemini:
		return newGemini(cfg, e, tracer)
	}
	return newOpenAI(cfg, e, tracer)
}

// newOpenAI builds the provider of an OpenAI-compatible server.
func newOpenAI(cfg *Config, e env, tracer trace.Tracer) (*openai.Provider, error) {
	httpc, key := cassetteClient(e, e.getenv(cfg.Model.APIKeyEnv))
	if cfg.Model.BaseURL == "" && key == "" {
		return nil, errors.New(noEndpoint)
	}
	if cfg.Model.Name == "" {
		return nil, errors.New("no model named: set --model, LODE_MODEL or model.name in lode.yaml")
	}
	// The key comes from api_key_env only: the provider's own fallback to
	// OPENAI_API_KEY would send an OpenAI key to a server configured with
	// a key of its own.
	getenv := func(k string) string {
		if k == openai.EnvAPIKey {
			return key
		}
		return e.getenv(k)
	}
	opts := []openai.Option{openai.WithModel(cfg.Model.Name), openai.WithEnv(getenv), openai.WithIdleTimeout(time.Duration(cfg.Model.IdleTimeout))}
	if tracer != nil {
		opts = append(opts, openai.WithTracer(tracer))
	}
	if cfg.Model.BaseURL != "" {
		opts = append(opts, openai.WithBaseURL(cfg.Model.BaseURL))
	}
	if cfg.Model.Stream != nil {
		opts = append(opts, openai.WithStreaming(*cfg.Model.Stream))
	}
	if key != "" {
		opts = append(opts, openai.WithAPIKey(key))
	}
	if httpc != nil {
		opts = append(opts, openai.WithHTTPClient(httpc))
	}
	return openai.New(opts...)
}

// newAnthropic builds the provider of the Messages API.
func newAnthropic(cfg *Config, e env, tracer trace.Tracer) (*anthropic.Provider, error) {
	httpc, key := cassetteClient(e, e.getenv(cfg.Model.APIKeyEnv))
	if cfg.Model.BaseURL == "" && key == "" {
		return nil, fmt.Errorf("no Anthropic API key: set %s (model.api_key_env in lode.yaml names the variable), or model.base_url for a server that needs none", cfg.Model.APIKeyEnv)
	}
	if cfg.Model.Name == "" {
		return nil, errors.New("no model named: set --model, LODE_MODEL or model.name in lode.yaml")
	}
	// As for openai: the key and URL come from lode's configuration only,
	// never from the provider's own fallback to its variables.
	getenv := func(k string) string {
		switch k {
		case anthropic.EnvAPIKey:
			return key
		case anthropic.EnvBaseURL:
			return cfg.Model.BaseURL
		}
		return e.getenv(k)
	}
	opts := []anthropic.Option{
		anthropic.WithModel(cfg.Model.Name), anthropic.WithAPIKey(key), anthropic.WithBaseURL(cfg.Model.BaseURL),
		anthropic.WithEnv(getenv), anthropic.WithIdleTimeout(time.Duration(cfg.Model.IdleTimeout)),
	}
	if tracer != nil {
		opts = append(opts, anthropic.WithTracer(tracer))
	}
	if cfg.Model.Stream != nil {
		opts = append(opts, anthropic.WithStreaming(*cfg.Model.Stream))
	}
	if httpc != nil {
		opts = append(opts, anthropic.WithHTTPClient(httpc))
	}
	if e.cassette != nil {
		// A replay judges a recorded container's expiry by the
		// recording's time, and so sends the requests it recorded.
		opts = append(opts, anthropic.WithClock(e.cassette.Clock()))
	}
	return anthropic.New(opts...)
}
