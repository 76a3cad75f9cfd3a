package cli

import (
	"fmt"

	"github.com/lodeworks/lode/capture"
)

// TraceConfig is lode.yaml's trace: what lode's spans carry beyond the
// names, models, tokens and tool calls they always do.
type TraceConfig struct {
	// Content records the conversation on the spans (the messages sent
	// and received, system instructions, tool arguments and results), with
	// the secrets this configuration names scrubbed. Unset, the standard
	// OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT decides; set, it
	// wins over that variable.
	Content *bool `yaml:"content"`
	// ContentBytes bounds each content attribute; 0 means
	// capture.DefaultMaxBytes (16 KiB).
	ContentBytes int `yaml:"content_bytes"`
}

// check reports the first mistake in trace:, naming its line.
func (t *TraceConfig) check(f *fileLines) error {
	if t.ContentBytes < 0 {
		return fmt.Errorf("%s: trace.content_bytes must be 0 (%d bytes) or more", f.at("trace.content_bytes"), capture.DefaultMaxBytes)
	}
	return nil
}

// captureOf is the content capture trace: and the environment ask for; an
// environment value lode does not know is an error, not a silent "off".
func captureOf(e env, cfg *Config) (capture.Config, error) {
	on, err := capture.ParseEnv(e.getenv(capture.EnvVar))
	if err != nil {
		return capture.Config{}, fmt.Errorf("lode: %w", err)
	}
	if c := cfg.Trace.Content; c != nil {
		on = *c
	}
	if !on {
		return capture.Config{}, nil
	}
	return capture.Config{On: true, MaxBytes: cfg.Trace.ContentBytes, Secrets: configSecrets(e, cfg)}, nil
}
