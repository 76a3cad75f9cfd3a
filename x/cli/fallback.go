package cli

import (
	"fmt"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/lodeworks/lode/provider"
	"github.com/lodeworks/lode/x/provider/anthropic"
	"github.com/lodeworks/lode/x/provider/fallback"
	"github.com/lodeworks/lode/x/provider/gemini"
	"github.com/lodeworks/lode/x/provider/openai"
)

// newModel builds the provider lode.yaml's model: names: the one model, or,
// with model.fallback, one provider over the model and its fallbacks in
// order. Each entry is built by newProvider, as the model itself is, so
// that every provider kind lode knows works in the list.
func newModel(cfg *Config, e env, tracer trace.Tracer) (modelProvider, error) {
	primary, err := newProvider(cfg, e, tracer)
	if err != nil || len(cfg.Model.Fallback) == 0 {
		return primary, err
	}
	fillFallback(cfg)
	provs := []provider.Provider{primary}
	for i, m := range cfg.Model.Fallback {
		sub := *cfg
		sub.Model = m
		p, err := newProvider(&sub, e, tracer)
		if err != nil {
			return nil, fmt.Errorf("%s: model.fallback[%d]: %w", cfg.file.at(fmt.Sprintf("model.fallback[%d]", i)), i, err)
		}
		provs = append(provs, p)
	}
	opts := []fallback.Option{fallback.WithHedge(time.Duration(cfg.Model.Hedge))}
	if tracer != nil {
		opts = append(opts, fallback.WithTracer(tracer))
	}
	fb, err := fallback.New(provs, opts...)
	if err != nil {
		return nil, err
	}
	return fallbackModel{fb, primary.BaseURL()}, nil
}

// fallbackModel is a fallback provider that names the first model's
// server, for errors.
type fallbackModel struct {
	*fallback.Provider
	baseURL string
}

func (f fallbackModel) BaseURL() string { return f.baseURL }

// fillFallback gives each fallback entry what it leaves out: the variable
// of its provider's key (never the first model's, whose key is for another
// server) and the first model's idle timeout.
func fillFallback(cfg *Config) {
	for i := range cfg.Model.Fallback {
		m := &cfg.Model.Fallback[i]
		if m.APIKeyEnv == "" {
			m.APIKeyEnv, m.keyEnvDefault = defaultKeyEnv(m.Provider), true
		}
		if m.IdleTimeout == 0 {
			m.IdleTimeout = cfg.Model.IdleTimeout
		}
	}
}

// defaultKeyEnv is the variable a provider kind reads its key from when
// api_key_env does not say.
func defaultKeyEnv(kind string) string {
	switch kind {
	case providerAnthropic:
		return anthropic.EnvAPIKey
	case providerGemini:
		return gemini.EnvAPIKey
	}
	return openai.EnvAPIKey
}

// checkFallback checks model.fallback and model.hedge as parseConfig
// reads them: each entry a provider lode knows, with a name, and none of
// the keys that belong to the run rather than to one model.
func checkFallback(cfg *Config, f *fileLines) error {
	if cfg.Model.Hedge < 0 {
		return fmt.Errorf("%s: model.hedge must not be negative (0 means no hedging)", f.at("model.hedge"))
	}
	if cfg.Model.Hedge > 0 && len(cfg.Model.Fallback) == 0 {
		return fmt.Errorf("%s: model.hedge sends a second request to the next model of model.fallback, and there is none: add one (the same model again hedges it)", f.at("model.hedge"))
	}
	for i, m := range cfg.Model.Fallback {
		at := func(key string) string { return f.at(fmt.Sprintf("model.fallback[%d].%s", i, key)) }
		where := fmt.Sprintf("model.fallback[%d]", i)
		if err := checkProvider(at("provider")+": "+where+".provider", m.Provider); err != nil {
			return err
		}
		switch {
		case m.Name == "":
			return fmt.Errorf("%s: %s has no name: each fallback names its model", f.at(where), where)
		case len(m.Fallback) > 0:
			return fmt.Errorf("%s: %s.fallback: a fallback has no fallbacks of its own; list them all under model.fallback", at("fallback"), where)
		case m.Hedge != 0:
			return fmt.Errorf("%s: %s.hedge: the hedge delay is set once, as model.hedge", at("hedge"), where)
		case m.Timeout != 0:
			return fmt.Errorf("%s: %s.timeout: the run's time limit is set once, as model.timeout", at("timeout"), where)
		case m.IdleTimeout < 0:
			return fmt.Errorf("%s: %s.idle_timeout must not be negative (0 means model.idle_timeout)", at("idle_timeout"), where)
		}
	}
	return nil
}

// attemptLine is what lode prints when a model fails and the next one is
// tried, or a hedge is sent; false for the events that need no word.
func attemptLine(ev fallback.AttemptEvent) (string, bool) {
	name := ev.Model
	if name == "" {
		name = fmt.Sprintf("model %d", ev.Provider+1)
	}
	switch {
	case ev.Status == fallback.StatusFailed && ev.FellBack:
		return fmt.Sprintf("(%s failed: %s; trying the next model)", name, ev.Class), true
	case ev.Status == fallback.StatusStarted && ev.Hedge:
		return fmt.Sprintf("(the model has not answered yet; asking %s as well)", name), true
	}
	return "", false
}
