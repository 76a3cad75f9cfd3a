package cli

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// fakeGemini answers every request with one streamed text answer in the
// Gemini API's wire format (alt=sse), and keeps what it was sent.
type fakeGemini struct {
	answer string
	requestLog
}

func (f *fakeGemini) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.record(r, r.Header.Get("X-Goog-Api-Key"), r.URL.Path+"?"+r.URL.RawQuery)
	text, _ := json.Marshal(f.answer)
	w.Header().Set("Content-Type", "text/event-stream")
	io.WriteString(w, `data: {"candidates": [{"content": {"parts": [{"text": `+string(text)+`}],"role": "model"},"index": 0}],"usageMetadata": {"promptTokenCount": 9,"totalTokenCount": 9},"modelVersion": "gemini-test"}`+"\r\n\r\n")
	io.WriteString(w, `data: {"candidates": [{"content": {"parts": [{"text": ""}],"role": "model"},"finishReason": "STOP","index": 0}],"usageMetadata": {"promptTokenCount": 9,"candidatesTokenCount": 4,"totalTokenCount": 13},"modelVersion": "gemini-test"}`+"\r\n\r\n")
}

func TestRunAgainstGeminiServer(t *testing.T) {
	cases := []struct {
		name   string
		config string
		vars   func(url string) map[string]string
		args   []string
		key    string
	}{
		{"provider in lode.yaml, URL and key from the environment",
			"model:\n  provider: gemini\n  name: gemini-test\n",
			func(u string) map[string]string {
				return map[string]string{"GOOGLE_GEMINI_BASE_URL": u, "GEMINI_API_KEY": "g-key", "OPENAI_BASE_URL": "http://127.0.0.1:1/v1"}
			},
			[]string{"run", "--system", "Be exact.", "hello"}, "g-key"},
		{"--provider flag, GOOGLE_API_KEY when lode.yaml names no variable",
			"model:\n  name: gemini-test\n",
			func(u string) map[string]string {
				return map[string]string{"GOOGLE_GEMINI_BASE_URL": u, "GOOGLE_API_KEY": "google-key"}
			},
			[]string{"run", "--provider", "gemini", "--system", "Be exact.", "hello"}, "google-key"},
		{"key from api_key_env, base URL from lode.yaml",
			"model:\n  provider: gemini\n  name: gemini-test\n  api_key_env: MY_GEMINI_KEY\n  base_url: URL\n",
			func(u string) map[string]string {
				return map[string]string{"MY_GEMINI_KEY": "mine", "GEMINI_API_KEY": "not this one", "GOOGLE_API_KEY": "nor this"}
			},
			[]string{"run", "--system", "Be exact.", "hello"}, "mine"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			fake := &fakeGemini{answer: "Hello from Gemini."}
			srv := httptest.NewServer(fake)
			defer srv.Close()
			r := lode(t, writeConfig(t, strings.ReplaceAll(c.config, "URL", srv.URL)), c.vars(srv.URL), "", c.args...)
			if r.code != 0 {
				t.Fatalf("exit %d: %s", r.code, r.stderr)
			}
			if r.stdout != "Hello from Gemini.\n" {
				t.Errorf("stdout = %q", r.stdout)
			}
			fake.mu.Lock()
			defer fake.mu.Unlock()
			if len(fake.bodies) != 1 || fake.paths[0] != "/v1beta/models/gemini-test:streamGenerateContent?alt=sse" || fake.keys[0] != c.key {
				t.Fatalf("requests: %d, paths %v, keys %v", len(fake.bodies), fake.paths, fake.keys)
			}
			sys, _ := json.Marshal(fake.bodies[0]["systemInstruction"])
			if !strings.Contains(string(sys), `"text":"Be exact."`) {
				t.Errorf("systemInstruction = %s", sys)
			}
		})
	}
}

func TestGeminiBadInputsAreOneClearLine(t *testing.T) {
	badKey := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		io.WriteString(w, `{"error":{"code":400,"message":"API key not valid. Please pass a valid API key.","status":"INVALID_ARGUMENT","details":[{"@type":"type.googleapis.com/google.rpc.ErrorInfo","reason":"API_KEY_INVALID","domain":"googleapis.com"}]}}`)
	}))
	defer badKey.Close()
	cases := []struct {
		name   string
		config string
		vars   map[string]string
		want   string
	}{
		{"no key", "model:\n  provider: gemini\n  name: gemini-test\n", map[string]string{"OPENAI_API_KEY": "sk-openai"},
			"lode: no Gemini API key: set GEMINI_API_KEY (model.api_key_env in lode.yaml names the variable), or GOOGLE_GENAI_USE_VERTEXAI=true for Vertex AI"},
		{"no model", "model:\n  provider: gemini\n", map[string]string{"GEMINI_API_KEY": "k"},
			"lode: no model named: set --model, LODE_MODEL or model.name in lode.yaml"},
		{"wrong key", "model:\n  provider: gemini\n  name: gemini-test\n", map[string]string{"GEMINI_API_KEY": "bad", "GOOGLE_GEMINI_BASE_URL": badKey.URL},
			"lode: gemini: 400: API key not valid. Please pass a valid API key. — check the API key in $GEMINI_API_KEY (model.api_key_env in lode.yaml names the variable)"},
		{"unreachable", "model:\n  provider: gemini\n  name: gemini-test\n  base_url: http://127.0.0.1:1\n", map[string]string{"GEMINI_API_KEY": "k"},
			"lode: cannot reach the model endpoint http://127.0.0.1:1: "},
		{"vertex without a project", "model:\n  provider: gemini\n  name: gemini-test\n", map[string]string{"GOOGLE_GENAI_USE_VERTEXAI": "true"},
			"lode: gemini: Vertex AI needs WithProject and WithLocation"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := lode(t, writeConfig(t, c.config), c.vars, "", "run", "hi")
			if r.code != 1 {
				t.Fatalf("exit %d; stderr %q", r.code, r.stderr)
			}
			lines := strings.Split(strings.TrimSpace(r.stderr), "\n")
			if len(lines) != 1 || !strings.HasPrefix(lines[0], c.want) {
				t.Fatalf("stderr %q, want one line starting %q", r.stderr, c.want)
			}
		})
	}
}
