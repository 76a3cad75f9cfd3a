package cli

import (
	"bufio"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/lodeworks/lode/tool"
	"github.com/lodeworks/lode/x/policy"
	"github.com/lodeworks/lode/x/tool/mcp"
)

const policyConfig = `tools:
  calculator: {}
  filesystem:
    root: .
policy:
  roles:
    viewer:
      allow:
        packs: [calculator]
        tools: [filesystem__read, "filesystem__l*"]
    editor:
      allow:
        packs: [calculator, filesystem]
      deny:
        tools: [filesystem__edit]
      approve:
        tools: [filesystem__write]
      limits:
        calls_per_turn: 3
tokens:
  - roles: [viewer]
    env: VIEWER_TOKEN
  - roles: [viewer, editor]
    file: editor.token
`

func TestPolicyCheck(t *testing.T) {
	for _, tc := range []struct {
		name, config   string
		files          map[string]string
		code           int
		stdout, stderr string
	}{
		{"ok", policyConfig, nil, 0, "policy ok: 2 roles (editor, viewer) over 8 tools\n", ""},
		{"names nothing mounted", strings.Replace(strings.Replace(policyConfig, "filesystem__l*", "filesystem__lsit", 1), "packs: [calculator, filesystem]", "packs: [calculator, filesytem]", 1), nil, 1, "",
			"lode.yaml:10: role viewer, allow tools \"filesystem__lsit\": no mounted tool matches\n" +
				"lode.yaml:13: role editor, allow packs \"filesytem\": no mounted pack matches\n" +
				"lode: policy: 2 rules name nothing mounted\n"},
		{"policy_file", "tools:\n  calculator: {}\npolicy_file: roles.yaml\n", map[string]string{"roles.yaml": "roles:\n  a:\n    allow:\n      tools: [calc]\n"}, 1, "",
			"roles.yaml:4: role a, allow tools \"calc\": no mounted tool matches\nlode: policy: 1 rule names nothing mounted\n"},
		{"both", "policy_file: x.yaml\npolicy:\n  roles: {}\n", nil, 1, "", "lode: lode.yaml:1: policy: and policy_file: both given; choose one\n"},
		{"none", "tools:\n  calculator: {}\n", nil, 1, "", "lode: policy: lode.yaml has no policy: section and no policy_file:\n"},
		{"invalid", "policy:\n  roles:\n    a:\n      allow: [x]\n", nil, 1, "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := writeConfig(t, tc.config)
			for name, body := range tc.files {
				if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			r := lode(t, dir, nil, "", "policy", "check")
			if r.code != tc.code || r.stdout != tc.stdout || (tc.stderr != "" && r.stderr != tc.stderr) {
				t.Errorf("exit %d\nstdout %q\nstderr %q\nwant exit %d, %q, %q", r.code, r.stdout, r.stderr, tc.code, tc.stdout, tc.stderr)
			}
			if tc.name == "invalid" && !strings.Contains(r.stderr, "policy: invalid document") {
				t.Errorf("stderr %q", r.stderr)
			}
		})
	}
}

func TestPolicyExplain(t *testing.T) {
	dir := writeConfig(t, policyConfig)
	for _, tc := range []struct {
		args   []string
		code   int
		stdout string
	}{
		{[]string{"--role", "viewer"}, 0, `allowed  calculator__eval    viewer allow packs "calculator" (line 9)
denied   filesystem__edit    no rule allows it
denied   filesystem__glob    no rule allows it
allowed  filesystem__list    viewer allow tools "filesystem__l*" (line 10)
allowed  filesystem__read    viewer allow tools "filesystem__read" (line 10)
denied   filesystem__search  no rule allows it
denied   filesystem__stat    no rule allows it
denied   filesystem__write   no rule allows it
`},
		{[]string{"--role", "viewer,editor", "filesystem__write"}, 0,
			"filesystem__write approval: editor allow packs \"filesystem\" (line 13); approval: editor approve tools \"filesystem__write\" (line 17)\n"},
		{[]string{"--role", "viewer,editor", "filesystem__edit"}, 0, "filesystem__edit denied: editor deny tools \"filesystem__edit\" (line 15)\n"},
		{[]string{"--role", "ghost", "calculator__eval"}, 0, "role ghost: not in the policy, so it allows nothing\ncalculator__eval denied: no rule allows it\n"},
		{[]string{"--role", "editor", "nope"}, 1, ""},
		{[]string{"calculator__eval"}, 2, ""},
	} {
		r := lode(t, dir, nil, "", append([]string{"policy", "explain"}, tc.args...)...)
		if r.code != tc.code || r.stdout != tc.stdout {
			t.Errorf("%v: exit %d\nstdout %q\nstderr %q\nwant exit %d, %q", tc.args, r.code, r.stdout, r.stderr, tc.code, tc.stdout)
		}
	}
	r := lode(t, dir, nil, "", "policy", "explain", "--role", "editor")
	if !strings.HasSuffix(r.stdout, "limits: 3 per answer, no limit per run\n") {
		t.Errorf("explain without a tool: %q", r.stdout)
	}
}

// lode serve --http asks the policy, with each caller's roles from the
// bearer token it presents; the tokens come from a variable and a file.
func TestServePolicyOverHTTP(t *testing.T) {
	dir := writeConfig(t, policyConfig)
	if err := os.WriteFile(filepath.Join(dir, "editor.token"), []byte("ed-secret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(lodeBin, "serve", "--http", "127.0.0.1:0", "--config", filepath.Join(dir, "lode.yaml"))
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "VIEWER_TOKEN=view-secret")
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	line, err := bufio.NewReader(stderr).ReadString('\n')
	if err != nil {
		t.Fatalf("no address line: %v", err)
	}
	url := strings.TrimSpace(line[strings.Index(line, "http://"):])
	ctx := context.Background()
	for _, tc := range []struct {
		token string
		tools int
		call  string
		want  string
	}{
		{"view-secret", 3, "filesystem__edit", `unknown tool "filesystem__edit". Tools available to this caller: calculator__eval, filesystem__list, filesystem__read.`},
		{"ed-secret", 7, "calculator__eval", "4"},
	} {
		c, err := mcp.NewClient(mcp.WithName("lode"), mcp.WithHTTP(url), mcp.WithHeader("Authorization", "Bearer "+tc.token))
		if err != nil {
			t.Fatal(err)
		}
		tools, err := c.Tools(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if len(tools) != tc.tools {
			t.Errorf("%s: %d tools listed, want %d", tc.token, len(tools), tc.tools)
		}
		out, err := c.Call(ctx, tc.call, map[string]any{"expression": "2+2"})
		if err != nil {
			t.Fatal(err)
		}
		if res, _ := out.(*tool.Result); res == nil || res.Content != tc.want {
			t.Errorf("%s: call %s = %+v, want %q", tc.token, tc.call, out, tc.want)
		}
		_ = c.Close()
	}
	c, err := mcp.NewClient(mcp.WithName("lode"), mcp.WithHTTP(url), mcp.WithHeader("Authorization", "Bearer wrong"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Tools(ctx); err == nil || !strings.Contains(err.Error(), "Unauthorized") {
		t.Errorf("a wrong token: %v, want Unauthorized", err)
	}
}

// lode run offers the model what --role may use, and refuses the rest
// as an unknown tool.
func TestRunWithRole(t *testing.T) {
	for _, tc := range []struct {
		role    string
		offered int
		result  string
	}{
		{"viewer", 2, `✗ calculator__eval: unknown tool "calculator__eval". Tools available in this turn: filesystem__list, filesystem__read`},
		{"editor", 7, "← calculator__eval: 4"},
		{"", 0, `✗ calculator__eval: unknown tool "calculator__eval". No tools are available in this turn.`},
	} {
		t.Run(tc.role, func(t *testing.T) {
			// The viewer may not use the calculator here.
			cfg := strings.Replace(policyConfig, "packs: [calculator]\n        tools: [filesystem__read", "tools: [filesystem__read", 1)
			dir := writeConfig(t, cfg)
			fake := &fakeOpenAI{replies: []func(http.ResponseWriter, *http.Request){
				callReply("call_1", "calculator__eval", `{"expression":"2+2"}`),
				textReply("done"),
			}}
			srv := httptest.NewServer(fake)
			defer srv.Close()
			args := []string{"run", "--model", "m", "hi"}
			if tc.role != "" {
				args = append(args, "--role", tc.role)
			}
			r := lode(t, dir, map[string]string{"OPENAI_BASE_URL": srv.URL + "/v1"}, "", args...)
			if r.code != 0 {
				t.Fatalf("exit %d: %s", r.code, r.stderr)
			}
			if !strings.Contains(r.stderr, tc.result) {
				t.Errorf("stderr lacks %q:\n%s", tc.result, r.stderr)
			}
			fake.mu.Lock()
			defer fake.mu.Unlock()
			tools, _ := fake.requests[0]["tools"].([]any)
			if len(tools) != tc.offered {
				t.Errorf("%d tools offered, want %d", len(tools), tc.offered)
			}
		})
	}
	r := lode(t, t.TempDir(), map[string]string{"OPENAI_BASE_URL": "http://127.0.0.1:1/v1"}, "", "run", "--model", "m", "--role", "viewer", "hi")
	if r.code != 2 || !strings.Contains(r.stderr, "--role needs a policy") {
		t.Errorf("--role without a policy: exit %d, %q", r.code, r.stderr)
	}
}

// lode web takes each caller's roles from its bearer token: no token is
// 401, and a viewer's call to a tool it may not use reads as unknown.
func TestWebPolicyTokens(t *testing.T) {
	dir := writeConfig(t, policyConfig)
	if err := os.WriteFile(filepath.Join(dir, "editor.token"), []byte("ed-secret"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Chdir(dir)
	fake := &fakeOpenAI{replies: []func(http.ResponseWriter, *http.Request){
		callReply("call_1", "filesystem__edit", `{}`),
		textReply("done"),
	}}
	model := httptest.NewServer(fake)
	defer model.Close()
	lines := make(chan string, 10)
	vars := map[string]string{"VIEWER_TOKEN": "view-secret"}
	e := env{stdin: strings.NewReader(""), stdout: &strings.Builder{}, stderr: lineWriter{lines}, getenv: func(k string) string { return vars[k] }, interrupts: make(chan os.Signal)}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan int, 1)
	go func() {
		done <- run(ctx, e, []string{"web", "--addr", "127.0.0.1:0", "--store", filepath.Join(dir, "threads"), "--base-url", model.URL + "/v1", "--model", "m"})
	}()
	var url string
	select {
	case l := <-lines:
		m := regexp.MustCompile(`chat at (http://\S+/)`).FindStringSubmatch(l)
		if m == nil {
			t.Fatalf("lode web said %q", l)
		}
		url = m[1]
	case code := <-done:
		t.Fatalf("lode web exited with %d", code)
	}
	post := func(token string) (int, string) {
		body := `{"messages":[{"role":"user","parts":[{"type":"text","text":"edit"}]}]}`
		req, _ := http.NewRequest(http.MethodPost, url+"api/chat", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if code, _ := post(""); code != http.StatusUnauthorized {
		t.Errorf("no token: %d", code)
	}
	code, stream := post("view-secret")
	want := `"errorText":"unknown tool \"filesystem__edit\". Tools available in this turn: calculator__eval, filesystem__list, filesystem__read."`
	if code != http.StatusOK || !strings.Contains(stream, want) {
		t.Errorf("viewer: %d\n%s\nwant %s", code, stream, want)
	}
	cancel()
	if code := <-done; code != 0 {
		t.Errorf("lode web ended with %d", code)
	}
}

// Every mistake in tokens: is one line naming its entry.
func TestTokensRefused(t *testing.T) {
	for _, tc := range []struct {
		name, tokens string
		vars         map[string]string
		want         string
	}{
		{"neither", "tokens:\n  - roles: [viewer]\n", nil, "lode: lode.yaml:2: a token needs env: VARIABLE or file: PATH (the token itself never goes in lode.yaml)\n"},
		{"both", "tokens:\n  - roles: [viewer]\n    env: T\n    file: t\n", nil, "lode: lode.yaml:2: a token comes from env: or file:, not both\n"},
		{"unset", "tokens:\n  - roles: [viewer]\n    env: T\n", nil, "lode: lode.yaml:2: the variable T that should hold the token is empty or unset\n"},
		{"twice", "tokens:\n  - roles: [viewer]\n    env: T\n  - roles: [editor]\n    env: U\n", map[string]string{"T": "same-token", "U": "same-token"}, "lode: lode.yaml:4: the same token is granted twice\n"},
		{"a token in the file", "tokens:\n  - roles: [viewer]\n    token: abc\n", nil, "lode: lode.yaml:3: unknown key \"token\" in a tokens: entry (the token never goes in the file: env: or file: says where it is)\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := writeConfig(t, "tools:\n  calculator: {}\npolicy:\n  roles:\n    viewer:\n      allow:\n        packs: [calculator]\n")
			cfg := tc.tokens + "tools:\n  calculator: {}\npolicy:\n  roles:\n    viewer:\n      allow:\n        packs: [calculator]\n"
			if err := os.WriteFile(filepath.Join(dir, "lode.yaml"), []byte(cfg), 0o644); err != nil {
				t.Fatal(err)
			}
			r := lode(t, dir, tc.vars, "", "serve", "--http", "127.0.0.1:0")
			if r.code != 1 || r.stderr != tc.want {
				t.Errorf("exit %d, stderr %q; want 1, %q", r.code, r.stderr, tc.want)
			}
		})
	}
}

func TestPolicySchemaAndUsage(t *testing.T) {
	r := lode(t, t.TempDir(), nil, "", "policy", "schema")
	if r.code != 0 || string(policy.Schema()) != r.stdout {
		t.Errorf("schema: exit %d, %.60q", r.code, r.stdout)
	}
	r = lode(t, t.TempDir(), nil, "", "policy")
	if r.code != 2 || !strings.HasPrefix(r.stderr, "lode: lode policy needs check, explain or schema") {
		t.Errorf("no subcommand: exit %d, %q", r.code, r.stderr)
	}
}

// A policy file whose deny: sits in a second YAML document is refused, by
// line, at every door and by lode policy check: no door may run with the
// first document alone.
func TestPolicyFileOfTwoDocumentsRefused(t *testing.T) {
	dir := writeConfig(t, "tools:\n  calculator: {}\npolicy_file: policy.yaml\n")
	doc := "roles:\n  viewer:\n    allow: {packs: [calculator]}\n---\nroles:\n  viewer:\n    deny: {packs: [calculator]}\n"
	if err := os.WriteFile(filepath.Join(dir, "policy.yaml"), []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	want := "line 5: a second YAML document starts here"
	for _, args := range [][]string{
		{"policy", "check"},
		{"tools", "--role", "viewer"},
		{"serve", "--role", "viewer"},
		{"serve", "--http", "127.0.0.1:0", "--role", "viewer"},
		{"run", "--base-url", "http://127.0.0.1:1/v1", "--model", "m", "--role", "viewer", "hi"},
		{"web", "--addr", "127.0.0.1:0", "--base-url", "http://127.0.0.1:1/v1", "--model", "m", "--role", "viewer"},
	} {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			r := lode(t, dir, nil, "", args...)
			if r.code != 1 || !strings.Contains(r.stderr, want) || strings.Count(r.stderr, "\n") != 1 {
				t.Errorf("%v: exit %d, stderr %q; want 1 and one line with %q", args, r.code, r.stderr, want)
			}
		})
	}
}
