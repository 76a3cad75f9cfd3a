package cli

import (
	"strings"
	"testing"

	"github.com/lodeworks/lode/capture"
)

func TestTraceConfigErrors(t *testing.T) {
	cases := []struct{ yaml, want string }{
		{"trace:\n  content_bytes: -1\n", `lode.yaml:2: trace.content_bytes must be 0 (16384 bytes) or more`},
		{"trace:\n  contents: true\n", `lode.yaml:2: unknown key "contents" in trace:`},
	}
	for _, c := range cases {
		dir := writeConfig(t, c.yaml)
		r := lode(t, dir, nil, "", "tools")
		if r.code != 1 || strings.TrimSpace(r.stderr) != "lode: "+c.want {
			t.Errorf("%q: exit %d\n%s\nwant lode: %s", c.yaml, r.code, r.stderr, c.want)
		}
	}
}

// trace.content, when set, decides; unset, the standard variable does; a
// value of it lode does not know is an error.
func TestCaptureOf(t *testing.T) {
	on, off := true, false
	cases := []struct {
		name    string
		env     string
		content *bool
		bytes   int
		want    bool
		wantErr string
	}{
		{"nothing", "", nil, 0, false, ""},
		{"env true", "TRUE", nil, 0, true, ""},
		{"env span only", "span_only", nil, 0, true, ""},
		{"env span and event", "SPAN_AND_EVENT", nil, 0, true, ""},
		{"env event only", "EVENT_ONLY", nil, 0, false, ""},
		{"env no content", "NO_CONTENT", nil, 0, false, ""},
		{"env false, yaml on", "false", &on, 100, true, ""},
		{"env on, yaml off", "true", &off, 0, false, ""},
		{"env unknown", "yes", nil, 0, false, `lode: capture: OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT="yes": want true, false, SPAN_ONLY, SPAN_AND_EVENT, EVENT_ONLY or NO_CONTENT`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			vars := map[string]string{capture.EnvVar: c.env, "MODEL_KEY": "sk-model-key-123"}
			e := env{getenv: func(k string) string { return vars[k] }}
			cfg := &Config{Trace: TraceConfig{Content: c.content, ContentBytes: c.bytes}}
			cfg.Model.APIKeyEnv = "MODEL_KEY"
			got, err := captureOf(e, cfg)
			if c.wantErr != "" {
				if err == nil || err.Error() != c.wantErr {
					t.Fatalf("err = %v, want %s", err, c.wantErr)
				}
				return
			}
			if err != nil || got.On != c.want {
				t.Fatalf("captureOf = %+v, %v; want On %v", got, err, c.want)
			}
			if got.On && (got.MaxBytes != c.bytes || len(got.Secrets) != 1 || got.Secrets[0] != "sk-model-key-123") {
				t.Errorf("captureOf = %+v, want the bound and the model's key as a secret", got)
			}
		})
	}
}
