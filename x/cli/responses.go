package cli

import (
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/lodeworks/lode/provider"
	"github.com/lodeworks/lode/x/provider/openai/responses"
)

// providerOpenAIResponses is OpenAI's Responses API: model.provider in
// lode.yaml and --provider. It reads the same OPENAI_API_KEY and
// OPENAI_BASE_URL as provider openai.
const providerOpenAIResponses = "openai-responses"

// newResponses builds the provider of the Responses API.
func newResponses(cfg *Config, e env, tracer trace.Tracer) (*responses.Provider, error) {
	httpc, key := cassetteClient(e, e.getenv(cfg.Model.APIKeyEnv))
	if cfg.Model.BaseURL == "" && key == "" {
		return nil, errors.New(noEndpoint)
	}
	if cfg.Model.Name == "" {
		return nil, errors.New("no model named: set --model, LODE_MODEL or model.name in lode.yaml")
	}
	// As for openai: the key comes from api_key_env only, never from the
	// provider's own fallback to OPENAI_API_KEY.
	getenv := func(k string) string {
		switch k {
		case responses.EnvAPIKey:
			return key
		case responses.EnvBaseURL:
			return cfg.Model.BaseURL
		}
		return e.getenv(k)
	}
	opts := []responses.Option{
		responses.WithModel(cfg.Model.Name), responses.WithAPIKey(key), responses.WithBaseURL(cfg.Model.BaseURL),
		responses.WithEnv(getenv), responses.WithIdleTimeout(time.Duration(cfg.Model.IdleTimeout)),
	}
	if tracer != nil {
		opts = append(opts, responses.WithTracer(tracer))
	}
	if cfg.Model.Stream != nil {
		opts = append(opts, responses.WithStreaming(*cfg.Model.Stream))
	}
	if httpc != nil {
		opts = append(opts, responses.WithHTTPClient(httpc))
	}
	return responses.New(opts...)
}

// responsesInvoke is what every turn of provider openai-responses adds:
// the thread's ID as the prompt cache key.
func responsesInvoke(cfg *Config) []provider.InvokeOption {
	if cfg.Model.Provider != providerOpenAIResponses {
		return nil
	}
	return []provider.InvokeOption{responses.WithThreadCacheKey()}
}

// explainResponses words the Responses adapter's failures for the command
// line, as explain does for the others; ok is false for any other error.
func explainResponses(err error, cfg *Config, baseURL string) (_ error, ok bool) {
	var timeout *responses.TimeoutError
	if errors.As(err, &timeout) && timeout.Idle {
		return fmt.Errorf("the model endpoint %s sent nothing for %s (--idle-timeout, or model.idle_timeout in lode.yaml) and the run was stopped", baseURL, timeout.Limit), true
	}
	var apiErr *responses.APIError
	if errors.As(err, &apiErr) && apiErr.StatusCode == http.StatusUnauthorized {
		// The provider's hint names its Go options; say what to set here.
		msg := "responses: 401 Unauthorized"
		if apiErr.Message != "" {
			msg += ": " + apiErr.Message
		}
		return fmt.Errorf("%s — check the API key in $%s (model.api_key_env in lode.yaml names the variable)", msg, cfg.Model.APIKeyEnv), true
	}
	var respErr *responses.ResponseError
	if errors.As(err, &respErr) && errors.Is(err, responses.ErrIncomplete) && strings.Contains(respErr.Detail, "no stream events") {
		return fmt.Errorf("the model endpoint %s did not stream its answer: if it cannot, set stream: false under model: in lode.yaml", baseURL), true
	}
	return nil, false
}
