package cli

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lodeworks/lode/x/provider/anthropic"
)

// fakeMessages answers every request with one streamed text answer in the
// Messages API's wire format, and keeps what it was sent.
type fakeMessages struct {
	answer string
	// container, when set, is the container object the answer reports.
	container string
	// pauses is how many answers, first, end with stop_reason pause_turn.
	pauses int
	requestLog
}

func (f *fakeMessages) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	key := r.Header.Get("X-Api-Key")
	if key == "" { // the SDK may send the key as a bearer token
		key = strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
	}
	f.record(r, key, r.URL.Path)
	stop := "end_turn"
	f.mu.Lock()
	if len(f.bodies) <= f.pauses {
		stop = "pause_turn"
	}
	f.mu.Unlock()
	text, _ := json.Marshal(f.answer)
	container := ""
	if f.container != "" {
		container = `,"container":` + f.container
	}
	events := []struct{ typ, data string }{
		{"message_start", `{"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","model":"claude-test","content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":12,"output_tokens":1}}}`},
		{"content_block_start", `{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`},
		{"ping", `{"type":"ping"}`},
		{"content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":` + string(text) + `}}`},
		{"content_block_stop", `{"type":"content_block_stop","index":0}`},
		{"message_delta", `{"type":"message_delta","delta":{"stop_reason":"` + stop + `","stop_sequence":null` + container + `},"usage":{"output_tokens":4}}`},
		{"message_stop", `{"type":"message_stop"}`},
	}
	w.Header().Set("Content-Type", "text/event-stream")
	for _, e := range events {
		io.WriteString(w, "event: "+e.typ+"\ndata: "+e.data+"\n\n")
	}
}

func TestRunAgainstAnthropicServer(t *testing.T) {
	cases := []struct {
		name   string
		config string
		vars   func(url string) map[string]string
		args   []string
		key    string
	}{
		{"provider in lode.yaml, URL and key from the environment",
			"model:\n  provider: anthropic\n  name: claude-test\n",
			func(u string) map[string]string {
				return map[string]string{"ANTHROPIC_BASE_URL": u, "ANTHROPIC_API_KEY": "sk-ant", "OPENAI_BASE_URL": "http://127.0.0.1:1/v1"}
			},
			[]string{"run", "--system", "Be exact.", "hello"}, "sk-ant"},
		{"--provider flag, key from api_key_env",
			"model:\n  name: claude-test\n  api_key_env: MY_CLAUDE_KEY\n",
			func(u string) map[string]string {
				return map[string]string{"ANTHROPIC_BASE_URL": u, "MY_CLAUDE_KEY": "mine", "ANTHROPIC_API_KEY": "not this one"}
			},
			[]string{"run", "--provider", "anthropic", "--system", "Be exact.", "hello"}, "mine"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			fake := &fakeMessages{answer: "Hello from Claude."}
			srv := httptest.NewServer(fake)
			defer srv.Close()
			r := lode(t, writeConfig(t, c.config), c.vars(srv.URL), "", c.args...)
			if r.code != 0 {
				t.Fatalf("exit %d: %s", r.code, r.stderr)
			}
			if r.stdout != "Hello from Claude.\n" {
				t.Errorf("stdout = %q", r.stdout)
			}
			fake.mu.Lock()
			defer fake.mu.Unlock()
			if len(fake.bodies) != 1 || fake.paths[0] != "/v1/messages" || fake.keys[0] != c.key {
				t.Fatalf("requests: %d, paths %v, keys %v", len(fake.bodies), fake.paths, fake.keys)
			}
			body := fake.bodies[0]
			if body["model"] != "claude-test" || body["stream"] != true {
				t.Errorf("model %v, stream %v", body["model"], body["stream"])
			}
			sys, _ := json.Marshal(body["system"])
			if !strings.Contains(string(sys), `"text":"Be exact."`) {
				t.Errorf("system = %s", sys)
			}
		})
	}
}

func TestAnthropicBadInputsAreOneClearLine(t *testing.T) {
	unauthorized := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusUnauthorized)
		io.WriteString(w, `{"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key"}}`)
	}))
	defer unauthorized.Close()
	cases := []struct {
		name   string
		config string
		vars   map[string]string
		args   []string
		code   int
		want   string
	}{
		{"no key", "model:\n  provider: anthropic\n  name: claude-test\n", map[string]string{"OPENAI_API_KEY": "sk-openai"}, []string{"run", "hi"}, 1,
			"lode: no Anthropic API key: set ANTHROPIC_API_KEY (model.api_key_env in lode.yaml names the variable), or model.base_url for a server that needs none"},
		{"no key in api_key_env", "model:\n  provider: anthropic\n  name: claude-test\n  api_key_env: MY_KEY\n", map[string]string{"ANTHROPIC_API_KEY": "sk-ant"}, []string{"run", "hi"}, 1,
			"lode: no Anthropic API key: set MY_KEY (model.api_key_env in lode.yaml names the variable), or model.base_url for a server that needs none"},
		{"no model", "model:\n  provider: anthropic\n", map[string]string{"ANTHROPIC_API_KEY": "k"}, []string{"run", "hi"}, 1,
			"lode: no model named: set --model, LODE_MODEL or model.name in lode.yaml"},
		{"bad provider in lode.yaml", "model:\n  name: m\n  provider: claude\n", nil, []string{"run", "hi"}, 1,
			`lode: lode.yaml:3: model.provider: "claude" is not a provider lode knows: write openai (the default, any OpenAI-compatible server), openai-responses, anthropic or gemini`},
		{"bad --provider", "", nil, []string{"run", "--provider", "bard", "hi"}, 2,
			`lode: --provider: "bard" is not a provider lode knows: write openai (the default, any OpenAI-compatible server), openai-responses, anthropic or gemini`},
		{"unreachable", "model:\n  provider: anthropic\n  name: claude-test\n  base_url: http://127.0.0.1:1\n", nil, []string{"run", "hi"}, 1,
			"lode: cannot reach the model endpoint http://127.0.0.1:1: "},
		{"wrong key", "model:\n  provider: anthropic\n  name: claude-test\n", map[string]string{"ANTHROPIC_API_KEY": "bad", "ANTHROPIC_BASE_URL": unauthorized.URL}, []string{"run", "hi"}, 1,
			"lode: anthropic: 401 Unauthorized: invalid x-api-key — check the API key in $ANTHROPIC_API_KEY (model.api_key_env in lode.yaml names the variable)"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			if c.config != "" {
				dir = writeConfig(t, c.config)
			}
			r := lode(t, dir, c.vars, "", c.args...)
			if r.code != c.code {
				t.Fatalf("exit %d, want %d; stderr %q", r.code, c.code, r.stderr)
			}
			lines := strings.Split(strings.TrimSpace(r.stderr), "\n")
			if last := lines[len(lines)-1]; !strings.HasPrefix(last, c.want) {
				t.Fatalf("stderr %q, want a line starting %q", r.stderr, c.want)
			}
			if c.code == 1 && len(lines) != 1 {
				t.Fatalf("more than one line on stderr: %q", r.stderr)
			}
		})
	}
}

// anthropic's provider knows the window of its own model, which history's
// table cannot match under a gateway's "vendor." prefix.
func TestHistoryWindowFromAnthropic(t *testing.T) {
	cfg, err := parseConfig("lode.yaml", []byte("model:\n  provider: anthropic\n  name: anthropic.claude-3-haiku-20240307\nhistory:\n  reserve: 1000\n"))
	if err != nil {
		t.Fatal(err)
	}
	prov, err := anthropic.New(anthropic.WithModel(cfg.Model.Name), anthropic.WithBaseURL("http://127.0.0.1:1"))
	if err != nil {
		t.Fatal(err)
	}
	pol, _, err := historyPolicy(cfg, prov, nil)
	if err != nil {
		t.Fatal(err)
	}
	if pol.Budget() != 199000 {
		t.Fatalf("budget = %d, want 199000", pol.Budget())
	}
}

// lode run on a stored thread names the code execution container the
// thread's last answer reported, so the files written in one run are there
// in the next.
func TestRunCarriesTheAnthropicContainer(t *testing.T) {
	dir := writeConfig(t, "model:\n  provider: anthropic\n  name: claude-test\n")
	store := filepath.Join(t.TempDir(), "ledger")
	fake := &fakeMessages{answer: "Written.", container: `{"id":"container_011CPR5CNjB747bTd36fQLFk","expires_at":"2999-01-01T00:00:00Z"}`}
	srv := httptest.NewServer(fake)
	defer srv.Close()
	vars := map[string]string{"ANTHROPIC_BASE_URL": srv.URL, "ANTHROPIC_API_KEY": "sk-ant"}
	r := lode(t, dir, vars, "", "run", "--store", store, "write n.txt")
	m := threadLine.FindStringSubmatch(r.stderr)
	if r.code != 0 || m == nil {
		t.Fatalf("first run: exit %d, stderr:\n%s", r.code, r.stderr)
	}
	if r = lode(t, dir, vars, "", "run", "--store", store, "--thread", m[1], "read it"); r.code != 0 {
		t.Fatalf("second run: exit %d, stderr:\n%s", r.code, r.stderr)
	}
	fake.mu.Lock()
	defer fake.mu.Unlock()
	if len(fake.bodies) != 2 {
		t.Fatalf("%d requests", len(fake.bodies))
	}
	if c, ok := fake.bodies[0]["container"]; ok {
		t.Errorf("the first request names container %v", c)
	}
	if c := fake.bodies[1]["container"]; c != "container_011CPR5CNjB747bTd36fQLFk" {
		t.Errorf("the second request names container %v", c)
	}
}

// lode run carries on an answer the server paused (pause_turn, as its
// server tools do): the next request ends with the paused answer, and the
// run ends with the answer that finishes it.
func TestRunCarriesOnAPausedAnswer(t *testing.T) {
	dir := writeConfig(t, "model:\n  provider: anthropic\n  name: claude-test\n")
	fake := &fakeMessages{answer: "Searching.", pauses: 2}
	srv := httptest.NewServer(fake)
	defer srv.Close()
	r := lode(t, dir, map[string]string{"ANTHROPIC_BASE_URL": srv.URL, "ANTHROPIC_API_KEY": "sk-ant"}, "", "run", "find it")
	if r.code != 0 || strings.Count(r.stdout, "Searching.") != 3 {
		t.Fatalf("exit %d stdout %q stderr:\n%s", r.code, r.stdout, r.stderr)
	}
	fake.mu.Lock()
	defer fake.mu.Unlock()
	if len(fake.bodies) != 3 {
		t.Fatalf("%d requests, want 3", len(fake.bodies))
	}
	msgs, _ := fake.bodies[2]["messages"].([]any)
	if len(msgs) != 2 || msgs[1].(map[string]any)["role"] != "assistant" {
		t.Errorf("the third request's messages: %v", msgs)
	}
}
