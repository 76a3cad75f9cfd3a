package cli

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

func unavailable(w http.ResponseWriter, _ *http.Request) {
	// Retry-After: 0 lets the adapter's own retries go at once.
	w.Header().Set("Retry-After", "0")
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusServiceUnavailable)
	fmt.Fprint(w, `{"error":{"message":"the engine is overloaded","type":"server_error"}}`)
}

// lode run with two models: the first server answers 503 to every try
// (the adapter's two retries included), the second answers, with its own
// key.
func TestRunFallsBackToTheNextModel(t *testing.T) {
	down := &fakeOpenAI{replies: []func(http.ResponseWriter, *http.Request){unavailable, unavailable, unavailable}}
	up := &fakeOpenAI{replies: []func(http.ResponseWriter, *http.Request){textReply("from the backup")}}
	s1, s2 := httptest.NewServer(down), httptest.NewServer(up)
	defer s1.Close()
	defer s2.Close()
	dir := writeConfig(t, fmt.Sprintf(`model:
  base_url: %s/v1
  name: primary
  api_key_env: FIRST_KEY
  fallback:
    - base_url: %s/v1
      name: backup
      api_key_env: SECOND_KEY
`, s1.URL, s2.URL))
	r := lode(t, dir, map[string]string{"FIRST_KEY": "sk-first", "SECOND_KEY": "sk-second"}, "", "run", "hi")
	if r.code != 0 || r.stdout != "from the backup\n" {
		t.Fatalf("exit %d stdout %q stderr %q", r.code, r.stdout, r.stderr)
	}
	if !strings.Contains(r.stderr, "(primary failed: server; trying the next model)") {
		t.Errorf("stderr %q does not say the model fell back", r.stderr)
	}
	down.mu.Lock()
	defer down.mu.Unlock()
	up.mu.Lock()
	defer up.mu.Unlock()
	if len(down.requests) != 3 || len(up.requests) != 1 {
		t.Fatalf("requests: %d to the first, %d to the second", len(down.requests), len(up.requests))
	}
	if up.requests[0]["model"] != "backup" || up.headers[0].Get("Authorization") != "Bearer sk-second" {
		t.Errorf("the second got model %v with %q", up.requests[0]["model"], up.headers[0].Get("Authorization"))
	}
	if down.headers[0].Get("Authorization") != "Bearer sk-first" {
		t.Errorf("the first got %q", down.headers[0].Get("Authorization"))
	}
}

// A refusal that is the request's fault is not hidden by the fallback.
func TestRunDoesNotFallBackOnABadRequest(t *testing.T) {
	bad := func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		fmt.Fprint(w, `{"error":{"message":"unknown parameter"}}`)
	}
	down := &fakeOpenAI{replies: []func(http.ResponseWriter, *http.Request){bad}}
	up := &fakeOpenAI{}
	s1, s2 := httptest.NewServer(down), httptest.NewServer(up)
	defer s1.Close()
	defer s2.Close()
	dir := writeConfig(t, fmt.Sprintf("model:\n  base_url: %s/v1\n  name: a\n  fallback:\n    - {base_url: %s/v1, name: b}\n", s1.URL, s2.URL))
	r := lode(t, dir, nil, "", "run", "hi")
	if r.code == 0 || !strings.Contains(r.stderr, "openai: 400 Bad Request: unknown parameter") {
		t.Fatalf("exit %d stderr %q", r.code, r.stderr)
	}
	up.mu.Lock()
	defer up.mu.Unlock()
	if len(up.requests) != 0 {
		t.Errorf("the second model was asked")
	}
}

func TestFallbackConfigErrors(t *testing.T) {
	cases := []struct{ file, want string }{
		{"model:\n  name: a\n  fallback:\n    - base_url: http://x/v1\n", "lode.yaml:4: model.fallback[0] has no name: each fallback names its model"},
		{"model:\n  name: a\n  fallback:\n    - name: b\n      provider: nope\n", `lode.yaml:5: model.fallback[0].provider: "nope" is not a provider lode knows`},
		{"model:\n  name: a\n  fallback:\n    - name: b\n      api_key: sk\n", `lode.yaml:5: unknown key "api_key" in an entry of model.fallback: (the key never goes in the file`},
		{"model:\n  name: a\n  fallback:\n    - name: b\n      timeout: 1m\n", "lode.yaml:5: model.fallback[0].timeout: the run's time limit is set once, as model.timeout"},
		{"model:\n  name: a\n  fallback:\n    - name: b\n      hedge: 1s\n", "lode.yaml:5: model.fallback[0].hedge: the hedge delay is set once, as model.hedge"},
		{"model:\n  name: a\n  fallback:\n    - name: b\n      fallback: [{name: c}]\n", "lode.yaml:5: model.fallback[0].fallback: a fallback has no fallbacks of its own"},
		{"model:\n  name: a\n  hedge: 2s\n", "lode.yaml:3: model.hedge sends a second request to the next model of model.fallback, and there is none"},
		{"model:\n  name: a\n  hedge: -2s\n  fallback: [{name: b}]\n", "lode.yaml:3: model.hedge must not be negative"},
		{"model:\n  name: a\n  hedge: soon\n  fallback: [{name: b}]\n", `lode.yaml:3: model.hedge: "soon" is not a duration`},
		{"model:\n  name: a\n  fallback: {name: b}\n", "lode.yaml:3: model.fallback must be a list"},
	}
	for _, tc := range cases {
		_, err := parseConfig("lode.yaml", []byte(tc.file))
		if err == nil || !strings.HasPrefix(err.Error(), tc.want) {
			t.Errorf("%q:\n got %v\nwant %s…", tc.file, err, tc.want)
		}
	}
}

// Each fallback model takes its provider's key variable, not the first
// model's, and the first model's idle timeout, unless it names its own.
func TestFallbackDefaults(t *testing.T) {
	cfg, err := parseConfig("lode.yaml", []byte("model:\n  name: a\n  api_key_env: MINE\n  idle_timeout: 7s\n  fallback:\n    - {name: b}\n    - {name: c, provider: anthropic, idle_timeout: 3s}\n"))
	if err != nil {
		t.Fatal(err)
	}
	fillFallback(cfg)
	got := []string{cfg.Model.Fallback[0].APIKeyEnv, time.Duration(cfg.Model.Fallback[0].IdleTimeout).String(),
		cfg.Model.Fallback[1].APIKeyEnv, time.Duration(cfg.Model.Fallback[1].IdleTimeout).String()}
	want := []string{"OPENAI_API_KEY", "7s", "ANTHROPIC_API_KEY", "3s"}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("defaults %v, want %v", got, want)
	}
}

// The README's fallback example is a valid configuration.
func TestREADMEFallbackExample(t *testing.T) {
	cfg, err := parseConfig("README", []byte(readmeBlock(t, "```yaml", "fallback:")))
	if err != nil {
		t.Fatal(err)
	}
	if len(cfg.Model.Fallback) != 2 || cfg.Model.Hedge != Duration(3*time.Second) || cfg.Model.Fallback[0].Provider != providerAnthropic {
		t.Errorf("model %+v", cfg.Model)
	}
}

// A recorded session scrubs every fallback model's key, its default
// variable included.
func TestFallbackKeysAreSecrets(t *testing.T) {
	cfg, err := parseConfig("lode.yaml", []byte("model:\n  name: a\n  api_key_env: FIRST\n  fallback:\n    - {name: b, api_key_env: SECOND}\n    - {name: c, provider: anthropic}\n"))
	if err != nil {
		t.Fatal(err)
	}
	fillFallback(cfg)
	vars := map[string]string{"FIRST": "sk-1", "SECOND": "sk-2", "ANTHROPIC_API_KEY": "sk-3"}
	got := configSecrets(env{getenv: func(k string) string { return vars[k] }}, cfg)
	if strings.Join(got, " ") != "sk-1 sk-2 sk-3" {
		t.Errorf("secrets = %v", got)
	}
}

// With hedge:, a first model that never answers is cancelled once the
// second answers; the first server sees its request end.
func TestRunHedgesASilentModel(t *testing.T) {
	reached, gone := make(chan struct{}), make(chan struct{})
	silent := &fakeOpenAI{replies: []func(http.ResponseWriter, *http.Request){func(_ http.ResponseWriter, r *http.Request) {
		close(reached)
		<-r.Context().Done()
		close(gone)
	}}}
	up := &fakeOpenAI{replies: []func(http.ResponseWriter, *http.Request){textReply("from the hedge")}}
	s1, s2 := httptest.NewServer(silent), httptest.NewServer(up)
	defer s1.Close()
	defer s2.Close()
	dir := writeConfig(t, fmt.Sprintf("model:\n  base_url: %s/v1\n  name: slow\n  hedge: 1ms\n  fallback:\n    - {base_url: %s/v1, name: quick}\n", s1.URL, s2.URL))
	r := lode(t, dir, nil, "", "run", "hi")
	if r.code != 0 || r.stdout != "from the hedge\n" {
		t.Fatalf("exit %d stdout %q stderr %q", r.code, r.stdout, r.stderr)
	}
	if !strings.Contains(r.stderr, "(the model has not answered yet; asking quick as well)") {
		t.Errorf("stderr %q", r.stderr)
	}
	// A request that reached the silent server has ended there; one the
	// hedge cancelled on its way may never reach it.
	select {
	case <-reached:
		<-gone
	default:
	}
}
