package cli

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lodeworks/lode/tool"
	"github.com/lodeworks/lode/x/tool/mcp"
)

type addIn struct {
	A float64 `json:"a"`
	B float64 `json:"b"`
}

// TestRunRecordReplay records a run that calls a tool of a remote MCP
// server, then replays it with the model and the MCP server both gone.
func TestRunRecordReplay(t *testing.T) {
	served := tool.NewRegistry()
	if err := tool.RegisterFunc(served, "add", "Adds two numbers",
		func(_ context.Context, in addIn) (float64, error) { return in.A + in.B, nil },
		// Read-only: an MCP tool that says nothing counts as destructive,
		// and the run would stop for approval.
		tool.WithHints(tool.Hints{ReadOnly: true})); err != nil {
		t.Fatal(err)
	}
	srv, err := mcp.NewServer(served)
	if err != nil {
		t.Fatal(err)
	}
	mcpSrv := httptest.NewServer(srv)
	defer mcpSrv.Close()
	model := httptest.NewServer(&fakeOpenAI{replies: []func(http.ResponseWriter, *http.Request){
		callReply("call_1", "calc__add", `{"a":2,"b":40}`), textReply("It is ", "42."),
	}})
	defer model.Close()

	dir := writeConfig(t, "mcp:\n  - name: calc\n    url: "+mcpSrv.URL+"/mcp?access_token=mcp-url-token-5656\n    headers:\n      X-Api-Key: mcp-secret-3131\n      X-Trace: Token mcp-header-token-6464\n")
	file := filepath.Join(dir, "session.yaml")
	vars := map[string]string{"OPENAI_API_KEY": "sk-secret-2727"}
	args := func(flag, prompt string) []string {
		return []string{"run", "--base-url", model.URL + "/v1", "--model", "m", flag, file, prompt}
	}

	live := lode(t, dir, vars, "", args("--record", "What is 2 + 40?")...)
	if live.code != 0 || live.stdout != "It is 42.\n" {
		t.Fatalf("record: exit %d stdout %q stderr %q", live.code, live.stdout, live.stderr)
	}
	if !strings.Contains(live.stderr, "← calc__add: 42") || !strings.HasSuffix(live.stderr, "(session recorded in "+file+")\n") {
		t.Errorf("record: stderr %q", live.stderr)
	}
	model.Close()
	mcpSrv.Close()

	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	for _, secret := range []string{"sk-secret-2727", "mcp-secret-3131", "mcp-url-token-5656", "mcp-header-token-6464"} {
		if strings.Contains(string(data), secret) {
			t.Errorf("the cassette holds the secret %q", secret)
		}
	}

	// Replay needs no key: nothing leaves the process.
	replayed := lode(t, dir, nil, "", args("--replay", "What is 2 + 40?")...)
	if replayed.code != 0 || replayed.stdout != live.stdout || replayed.stderr != strings.TrimSuffix(live.stderr, "(session recorded in "+file+")\n") {
		t.Errorf("replay: exit %d stdout %q stderr %q; live stdout %q stderr %q", replayed.code, replayed.stdout, replayed.stderr, live.stdout, live.stderr)
	}

	changed := lode(t, dir, nil, "", args("--replay", "What is 2 + 41?")...)
	want := `differs at $.messages[0].content: recorded "What is 2 + 40?", request "What is 2 + 41?"; if the change is meant, record the session again with lode run --record ` + file + "\n"
	if changed.code != 1 || !strings.HasPrefix(changed.stderr, "lode: cassette: "+file+" holds no interaction for POST ") || !strings.HasSuffix(changed.stderr, want) || strings.Count(changed.stderr, "\n") != 1 {
		t.Errorf("changed prompt: exit %d stderr %q, want one line ending %q", changed.code, changed.stderr, want)
	}
	for _, not := range []string{"cannot reach", "LODE_RECORD"} {
		if strings.Contains(changed.stderr, not) {
			t.Errorf("changed prompt: stderr %q says %q", changed.stderr, not)
		}
	}

	// The MCP server's address changed: the miss comes while mounting.
	if err := os.WriteFile(filepath.Join(dir, "lode.yaml"), []byte("mcp:\n  - name: calc\n    url: "+mcpSrv.URL+"/other?access_token=mcp-url-token-5656\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	moved := lode(t, dir, nil, "", args("--replay", "What is 2 + 40?")...)
	if moved.code != 1 || !strings.Contains(moved.stderr, "holds no interaction for POST "+mcpSrv.URL+"/other?access_token=REDACTED") ||
		!strings.Contains(moved.stderr, "; if the change is meant, record the session again with lode run --record "+file) {
		t.Errorf("moved MCP server: exit %d stderr %q", moved.code, moved.stderr)
	}
	for _, not := range []string{"cannot reach", "LODE_RECORD", "mcp-url-token-5656"} {
		if strings.Contains(moved.stderr, not) {
			t.Errorf("moved MCP server: stderr %q says %q", moved.stderr, not)
		}
	}
}

func TestRunCassetteFlagsBad(t *testing.T) {
	dir := t.TempDir()
	corrupt := filepath.Join(dir, "corrupt.yaml")
	if err := os.WriteFile(corrupt, []byte("version: 2\ninteractions: [\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	missing := filepath.Join(dir, "missing.yaml")
	cases := []struct {
		name string
		args []string
		code int
		want string // the start of stderr
	}{
		{"both", []string{"--record", "a.yaml", "--replay", "b.yaml"}, 2, "lode: --record and --replay exclude each other: record a cassette once, then replay it\n"},
		{"missing", []string{"--replay", missing}, 1, "lode: cassette: no such cassette: " + missing + " does not exist: record it with LODE_RECORD=1 (or lode run --record)\n"},
		{"corrupt", []string{"--replay", corrupt}, 1, "lode: cassette: corrupted cassette: " + corrupt + ": yaml: "},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := lode(t, dir, nil, "", append(append([]string{"run", "--base-url", "http://model.test/v1", "--model", "m"}, tc.args...), "hi")...)
			if r.code != tc.code || !strings.HasPrefix(r.stderr, tc.want) {
				t.Errorf("exit %d stderr %q; want %d, %q", r.code, r.stderr, tc.code, tc.want)
			}
		})
	}
}

// TestConfigSecrets: every secret lode.yaml configures reaches the
// recorder, and a value that cannot be read is left out.
func TestConfigSecrets(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "client.secret"), []byte(" file-client-secret \n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "role.token"), []byte("file-role-token\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	vars := map[string]string{"MODEL_KEY": "model-key", "CLIENT_SECRET": "env-client-secret", "ROLE_TOKEN": "env-role-token"}
	e := env{getenv: func(k string) string { return vars[k] }}
	cfg := &Config{
		Model: ModelConfig{APIKeyEnv: "MODEL_KEY"},
		MCP: []MCPServer{
			{Name: "a", URL: "https://u:url-pass@mcp.test/mcp?access_token=url-token&page=2", Headers: map[string]string{"Authorization": "Bearer hdr-bearer"}},
			{Name: "b", URL: "https://mcp.test/b", OAuth: MCPOAuth{ClientSecretEnv: "CLIENT_SECRET"}},
			{Name: "c", URL: "https://mcp.test/c", OAuth: MCPOAuth{ClientSecretFile: filepath.Join(dir, "client.secret")}},
			{Name: "d", URL: "https://mcp.test/d", OAuth: MCPOAuth{ClientSecretFile: filepath.Join(dir, "missing")}},
		},
		Tokens: []TokenConfig{{Env: "ROLE_TOKEN"}, {File: "role.token"}},
		file:   &fileLines{name: filepath.Join(dir, "lode.yaml")},
	}
	got := map[string]bool{}
	for _, s := range configSecrets(e, cfg) {
		got[s] = true
	}
	want := []string{"model-key", "Bearer hdr-bearer", "hdr-bearer", "url-pass", "url-token", "env-client-secret", "file-client-secret", "env-role-token", "file-role-token"}
	for _, w := range want {
		if !got[w] {
			t.Errorf("configSecrets misses %q; got %v", w, got)
		}
	}
	for _, not := range []string{"2", "u"} {
		if got[not] {
			t.Errorf("configSecrets holds %q, which is no secret", not)
		}
	}
}
