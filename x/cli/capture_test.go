package cli

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
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

// lode run records the conversation on the spans it exports when
// trace.content or the standard variable asks, and not otherwise; the
// model's key never leaves.
func TestRunExportsContent(t *testing.T) {
	cases := []struct {
		name, config, env string
		want              bool
	}{
		{"off", pricedTiny, "", false},
		{"by variable", pricedTiny, "SPAN_ONLY", true},
		{"by lode.yaml", pricedTiny + "trace:\n  content: true\n", "", true},
		{"lode.yaml wins", pricedTiny + "trace:\n  content: false\n", "true", false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var mu sync.Mutex
			var got []byte
			recv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				b, _ := io.ReadAll(r.Body)
				mu.Lock()
				got = append(got, b...)
				mu.Unlock()
			}))
			defer recv.Close()
			_, url := costServer(t)
			dir := writeConfig(t, c.config+"model:\n  api_key_env: TINY_KEY\n")
			r := lode(t, dir, map[string]string{"OPENAI_BASE_URL": url, "TINY_KEY": "sk-tiny-0123456789",
				"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": recv.URL + "/v1/traces", capture.EnvVar: c.env},
				"", "run", "--model", "tiny", "what is 1+1? my key: sk-tiny-0123456789")
			if r.code != 0 {
				t.Fatalf("exit %d: %s", r.code, r.stderr)
			}
			mu.Lock()
			defer mu.Unlock()
			if len(got) == 0 {
				t.Fatal("no spans exported")
			}
			for _, w := range []string{"gen_ai.input.messages", "gen_ai.output.messages", "gen_ai.tool.call.arguments", "what is 1+1?"} {
				if bytes.Contains(got, []byte(w)) != c.want {
					t.Errorf("%q exported: %v, want %v", w, !c.want, c.want)
				}
			}
			if bytes.Contains(got, []byte("sk-tiny-0123456789")) {
				t.Error("the model's key was exported")
			}
		})
	}
}
