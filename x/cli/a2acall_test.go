package cli

import (
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lodeworks/lode/tool"
)

// fakeA2A mounts one tool, "ask", for each agent, and keeps what it was
// given.
type fakeA2A struct {
	got    []A2ARemote
	closed int
}

type fakeSource struct{ name string }

func (s fakeSource) Name() string { return s.name }
func (s fakeSource) Tools(context.Context) ([]tool.Tool, error) {
	return []tool.Tool{{Name: "ask", Description: "Ask the agent"}}, nil
}
func (s fakeSource) Call(context.Context, string, map[string]any) (any, error) { return "ok", nil }

func (f *fakeA2A) Mount(ctx context.Context, reg tool.Registry, a A2ARemote) (io.Closer, error) {
	f.got = append(f.got, a)
	if err := reg.Mount(ctx, fakeSource{a.Name}); err != nil {
		return nil, err
	}
	return closerFunc(func() error { f.closed++; return nil }), nil
}

type closerFunc func() error

func (c closerFunc) Close() error { return c() }

func lodeA2A(t *testing.T, c A2ACaller, vars map[string]string, yaml string, args ...string) result {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "lode.yaml"), []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Chdir(dir)
	var out, errb strings.Builder
	e := env{stdin: strings.NewReader(""), stdout: &out, stderr: &errb, getenv: func(k string) string { return vars[k] },
		interrupts: make(chan os.Signal), a2a: c}
	code := run(context.Background(), e, args)
	return result{code, out.String(), errb.String()}
}

const a2aYAML = `tools: {}
a2a:
  - name: billing
    url: https://billing.example/agent
    token_env: BILLING_TOKEN
    headers_env: {X-Team: TEAM_KEY}
    timeout: 2m
    approve: true
    labels: {untrusted: false, sends_out: true}
`

// The root module's lode refuses a2a: in one line naming the build that
// has it.
func TestA2ANotInThisBuild(t *testing.T) {
	want := "lode: lode.yaml:2: a2a: " + noA2ACaller + "\n"
	r := lodeA2A(t, nil, nil, a2aYAML, "tools")
	if r.code != exitError || r.stderr != want || r.stdout != "" {
		t.Fatalf("exit %d, stdout %q, stderr %q; want %q", r.code, r.stdout, r.stderr, want)
	}
	cmd := exec.Command(lodeBin, "tools")
	cmd.Dir = t.TempDir()
	if err := os.WriteFile(filepath.Join(cmd.Dir, "lode.yaml"), []byte(a2aYAML), 0o600); err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	err := cmd.Run()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != exitError || stderr.String() != want {
		t.Fatalf("binary: %v, stderr %q", err, stderr.String())
	}
}

func TestA2AMounted(t *testing.T) {
	f := &fakeA2A{}
	r := lodeA2A(t, f, map[string]string{"BILLING_TOKEN": "tok", "TEAM_KEY": "team"}, a2aYAML, "tools")
	if r.code != 0 {
		t.Fatalf("exit %d, stderr %q", r.code, r.stderr)
	}
	if !strings.Contains(r.stdout, "billing__ask") || !strings.Contains(r.stdout, "needs approval: approve: in lode.yaml names billing") {
		t.Errorf("stdout %q", r.stdout)
	}
	want := A2ARemote{Name: "billing", URL: "https://billing.example/agent", Token: "tok", Headers: map[string]string{"X-Team": "team"},
		Timeout: 2 * time.Minute, TrustOutput: true, SendsOut: true}
	if len(f.got) != 1 || f.got[0].Name != want.Name || f.got[0].URL != want.URL || f.got[0].Token != want.Token ||
		f.got[0].Headers["X-Team"] != "team" || f.got[0].Timeout != want.Timeout || !f.got[0].TrustOutput || !f.got[0].SendsOut ||
		f.got[0].Private || f.got[0].ReadOnly || f.got[0].HTTPClient != nil {
		t.Errorf("agent %+v", f.got)
	}
	if f.closed != 1 {
		t.Errorf("closed %d times", f.closed)
	}
}

func TestA2AConfigRefused(t *testing.T) {
	for _, tc := range []struct {
		name, yaml, want string
	}{
		{"no name", "a2a:\n  - url: https://x\n", "lode.yaml:2: a2a[0] has no name"},
		{"bad name", "a2a:\n  - name: a b\n    url: https://x\n", `lode.yaml:2: a2a agent "a b": the name prefixes its tools, so it takes only a-z, A-Z, 0-9, '_' and '-', without "__"`},
		{"separator in name", "a2a:\n  - name: a__b\n    url: https://x\n", `lode.yaml:2: a2a agent "a__b": the name prefixes its tools`},
		{"taken name", "mcp:\n  - name: x\n    url: https://m\na2a:\n  - name: x\n    url: https://x\n", `lode.yaml:5: a2a agent "x": the name is taken by another mcp: server or a2a: agent`},
		{"no url", "a2a:\n  - name: x\n", `lode.yaml:2: a2a agent "x" needs a url: the agent's http or https address`},
		{"bad scheme", "a2a:\n  - name: x\n    url: ftp://x\n", `lode.yaml:3: a2a agent "x" needs a url: the agent's http or https address`},
		{"password in url", "a2a:\n  - name: x\n    url: https://u:p@x\n", `lode.yaml:3: a2a agent "x": put credentials in token_env or headers_env, not in the url`},
		{"zero timeout", "a2a:\n  - name: x\n    url: https://x\n    timeout: 0s\n", `lode.yaml:4: a2a agent "x": timeout must be more than 0 (leave it out for the default)`},
		{"unknown key", "a2a:\n  - name: x\n    url: https://x\n    token: abc\n", "token"},
		{"unset token", "a2a:\n  - name: x\n    url: https://x\n    token_env: NOPE\n", `lode.yaml:4: a2a agent "x": token_env names NOPE, which is not set`},
		{"unset header", "a2a:\n  - name: x\n    url: https://x\n    headers_env: {X-K: NOPE}\n", `lode.yaml:4: a2a agent "x": headers_env: X-K names NOPE, which is not set`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := &fakeA2A{}
			r := lodeA2A(t, f, nil, tc.yaml, "tools")
			if r.code != exitError || !strings.Contains(r.stderr, tc.want) {
				t.Fatalf("exit %d, stderr %q; want %q", r.code, r.stderr, tc.want)
			}
			if len(f.got) != 0 {
				t.Errorf("mounted %+v", f.got)
			}
		})
	}
}
