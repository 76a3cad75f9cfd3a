package cli

import (
	"errors"
	"fmt"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/lodeworks/lode/x/provider/gemini"
)

// providerGemini is model.provider for Google's Gemini models.
const providerGemini = "gemini"

// newGemini builds the provider of the Gemini API, or of Vertex AI when
// GOOGLE_GENAI_USE_VERTEXAI is set (with GOOGLE_CLOUD_PROJECT and
// GOOGLE_CLOUD_LOCATION, and Application Default Credentials).
func newGemini(cfg *Config, e env, tracer trace.Tracer) (*gemini.Provider, error) {
	key := e.getenv(cfg.Model.APIKeyEnv)
	if key == "" && cfg.Model.APIKeyEnv == gemini.EnvAPIKey {
		// The SDK's other name for the key, when lode.yaml names none.
		key = e.getenv(gemini.EnvGoogleAPIKey)
	}
	httpc, key := cassetteClient(e, key)
	vertex := e.getenv(gemini.EnvUseVertex) == "true" || e.getenv(gemini.EnvUseVertex) == "1"
	if key == "" && !vertex {
		return nil, fmt.Errorf("no Gemini API key: set %s (model.api_key_env in lode.yaml names the variable), or %s=true for Vertex AI", cfg.Model.APIKeyEnv, gemini.EnvUseVertex)
	}
	if cfg.Model.Name == "" {
		return nil, errors.New("no model named: set --model, LODE_MODEL or model.name in lode.yaml")
	}
	// The key and URL come from lode's configuration only; the Vertex AI
	// variables pass through.
	getenv := func(k string) string {
		switch k {
		case gemini.EnvAPIKey, gemini.EnvGoogleAPIKey:
			return key
		case gemini.EnvBaseURL, gemini.EnvVertexURL:
			return cfg.Model.BaseURL
		}
		return e.getenv(k)
	}
	opts := []gemini.Option{
		gemini.WithModel(cfg.Model.Name), gemini.WithBaseURL(cfg.Model.BaseURL),
		gemini.WithEnv(getenv), gemini.WithIdleTimeout(time.Duration(cfg.Model.IdleTimeout)),
	}
	if tracer != nil {
		opts = append(opts, gemini.WithTracer(tracer))
	}
	if cfg.Model.Stream != nil {
		opts = append(opts, gemini.WithStreaming(*cfg.Model.Stream))
	}
	if httpc != nil {
		opts = append(opts, gemini.WithHTTPClient(httpc))
	}
	return gemini.New(opts...)
}

// explainGemini says what to set in lode's terms for the Gemini failures a
// newcomer meets, where the provider's own hint names Go options; nil for
// any other error.
func explainGemini(err error, cfg *Config, baseURL string) error {
	var te *gemini.TimeoutError
	if errors.As(err, &te) && te.Idle {
		return fmt.Errorf("the model endpoint %s sent nothing for %s (--idle-timeout, or model.idle_timeout in lode.yaml) and the run was stopped", baseURL, te.Limit)
	}
	var ae *gemini.APIError
	if errors.As(err, &ae) && errors.Is(ae, gemini.ErrUnauthorized) {
		msg := fmt.Sprintf("gemini: %d", ae.StatusCode)
		if ae.Message != "" {
			msg += ": " + ae.Message
		}
		return fmt.Errorf("%s — check the API key in $%s (model.api_key_env in lode.yaml names the variable)", msg, cfg.Model.APIKeyEnv)
	}
	return nil
}
