package cli

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func TestWarnKey(t *testing.T) {
	for _, tc := range []struct {
		name  string
		model ModelConfig
		vars  map[string]string
		want  string
	}{
		{"named and unset", ModelConfig{BaseURL: "http://127.0.0.1:11434/v1", APIKeyEnv: "OLLAMA_KEY"}, nil,
			"lode: warning: model.api_key_env names OLLAMA_KEY, which is not set: requests to http://127.0.0.1:11434/v1 go out with no key\n"},
		{"named and set", ModelConfig{BaseURL: "http://127.0.0.1:11434/v1", APIKeyEnv: "OLLAMA_KEY"}, map[string]string{"OLLAMA_KEY": "k"}, ""},
		{"default, remote server", ModelConfig{BaseURL: "https://gateway.example/v1", APIKeyEnv: "OPENAI_API_KEY", keyEnvDefault: true}, nil,
			"lode: warning: OPENAI_API_KEY is not set: requests to https://gateway.example/v1 go out with no key (set it, or name the key's variable in model.api_key_env)\n"},
		{"default, anthropic remote", ModelConfig{Provider: providerAnthropic, BaseURL: "https://proxy.example", APIKeyEnv: "ANTHROPIC_API_KEY", keyEnvDefault: true}, nil,
			"lode: warning: ANTHROPIC_API_KEY is not set: requests to https://proxy.example go out with no key (set it, or name the key's variable in model.api_key_env)\n"},
		{"default, loopback", ModelConfig{BaseURL: "http://127.0.0.1:8000/v1", APIKeyEnv: "OPENAI_API_KEY", keyEnvDefault: true}, nil, ""},
		{"default, localhost", ModelConfig{BaseURL: "http://localhost:8000/v1", APIKeyEnv: "OPENAI_API_KEY", keyEnvDefault: true}, nil, ""},
		{"default, [::1]", ModelConfig{BaseURL: "http://[::1]:8000/v1", APIKeyEnv: "OPENAI_API_KEY", keyEnvDefault: true}, nil, ""},
		{"default, set", ModelConfig{BaseURL: "https://gateway.example/v1", APIKeyEnv: "OPENAI_API_KEY", keyEnvDefault: true}, map[string]string{"OPENAI_API_KEY": "k"}, ""},
		{"no base URL: the missing key is an error instead", ModelConfig{APIKeyEnv: "MY_KEY"}, nil, ""},
		{"not an http URL: an error instead", ModelConfig{BaseURL: "127.0.0.1:8000/v1", APIKeyEnv: "MY_KEY"}, nil, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var b strings.Builder
			warnKey(env{stderr: &b, getenv: func(k string) string { return tc.vars[k] }}, tc.model)
			if b.String() != tc.want {
				t.Fatalf("said %q, want %q", b.String(), tc.want)
			}
		})
	}
}

// The warnings of lode run, each the exact first line of stderr; the run
// goes on.
func TestRunWarns(t *testing.T) {
	for _, tc := range []struct {
		name, config string
		args         []string
		want         string
	}{
		{"policy without --role", "tools:\n  calculator: {}\npolicy:\n  roles:\n    viewer:\n      allow: { packs: [calculator] }\n", nil, noRoleWarning(noRoleModel) + "\n"},
		{"policy with --role", "tools:\n  calculator: {}\npolicy:\n  roles:\n    viewer:\n      allow: { packs: [calculator] }\n", []string{"--role", "viewer"}, ""},
		{"api_key_env unset", "model:\n  api_key_env: LOCAL_KEY\n", nil,
			"lode: warning: model.api_key_env names LOCAL_KEY, which is not set: requests to BASE go out with no key\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fake := &fakeOpenAI{replies: []func(http.ResponseWriter, *http.Request){textReply("ok")}}
			srv := httptest.NewServer(fake)
			defer srv.Close()
			args := append([]string{"run", "--model", "m"}, tc.args...)
			r := lode(t, writeConfig(t, tc.config), map[string]string{"OPENAI_BASE_URL": srv.URL + "/v1"}, "", append(args, "hi")...)
			want := strings.ReplaceAll(tc.want, "BASE", srv.URL+"/v1")
			if r.code != 0 || r.stdout != "ok\n" || !strings.HasPrefix(r.stderr, want) || strings.Contains(strings.TrimPrefix(r.stderr, want), "warning") {
				t.Fatalf("exit %d, stdout %q, stderr:\n%s\nwant it to start %q", r.code, r.stdout, r.stderr, want)
			}
		})
	}
}
