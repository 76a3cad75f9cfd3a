package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/lodeworks/lode/artifact"
	xtool "github.com/lodeworks/lode/x/tool"
)

// callGuarded mounts the servers of the configuration at cfgPath as a run
// does and calls guarded's tool, returning its result.
func callGuarded(t *testing.T, e env, cfgPath string) artifact.ToolResult {
	t.Helper()
	cfg, err := (&options{config: cfgPath}).load(e)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := prepareMCP(context.Background(), e, cfg); err != nil {
		t.Fatal(err)
	}
	tb, err := mountTools(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer tb.Close()
	return xtool.NewHandler(tb.reg).Execute(context.Background(), artifact.ToolCall{ID: "1", Name: "guarded__secret", Arguments: "{}"})
}

func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	return port
}

// A client registered in advance logs in with its own id and secret, on
// the redirect port and with the scopes the file names; lode registers
// nothing, keeps no secret with the token, and later runs send the token.
func TestMCPLoginPreregistered(t *testing.T) {
	o := newOAuthServer(t)
	o.secret = "s3cret"
	dir := t.TempDir()
	port := freePort(t)
	cfgPath := filepath.Join(dir, "lode.yaml")
	yaml := fmt.Sprintf("mcp:\n  - name: guarded\n    url: %s/mcp\n    oauth:\n      client_id: lode-client\n      client_secret_env: GUARDED_SECRET\n      scopes: [read, write]\n      redirect_port: %d\n", o.URL, port)
	if err := os.WriteFile(cfgPath, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	tokens := filepath.Join(dir, "tokens.json")
	getenv := func(k string) string {
		switch k {
		case EnvMCPTokens:
			return tokens
		case "GUARDED_SECRET":
			return "s3cret"
		}
		return ""
	}
	pr, pw := io.Pipe()
	var shown strings.Builder
	browsed, finished := make(chan error, 1), make(chan struct{})
	go browse(pr, &shown, browsed, finished)
	code := run(context.Background(), env{stdin: strings.NewReader(""), stdout: io.Discard, stderr: pw, getenv: getenv},
		[]string{"mcp", "login", "--config", cfgPath, "guarded"})
	pw.Close()
	<-finished
	if err := <-browsed; err != nil {
		t.Fatalf("the browser: %v", err)
	}
	if code != 0 {
		t.Fatalf("lode mcp login: exit %d\n%s", code, shown.String())
	}
	if want := fmt.Sprintf("waiting for the browser on http://127.0.0.1:%d/callback", port); !strings.Contains(shown.String(), want) {
		t.Fatalf("output lacks %q:\n%s", want, shown.String())
	}
	// The go-sdk may reorder the scopes it asks for.
	scopes := strings.Fields(o.scope)
	slices.Sort(scopes)
	if o.registrations != 0 || !slices.Equal(scopes, []string{"read", "write"}) {
		t.Fatalf("registrations %d, scope %q; want 0, read and write", o.registrations, o.scope)
	}
	data, err := os.ReadFile(tokens)
	if err != nil || strings.Contains(string(data), "s3cret") {
		t.Fatalf("token file (%v) holds the client secret:\n%s", err, data)
	}
	if res := callGuarded(t, env{getenv: getenv}, cfgPath); res.IsError || res.Content != "42" {
		t.Fatalf("call with the stored token: %+v", res)
	}
	if len(o.issued) != 1 {
		t.Fatalf("tokens issued: %v, want only the login's", o.issued)
	}
}

// The client credentials grant needs no login: each run gets its token
// with the secret from the file the configuration names; lode mcp login
// only checks the credentials, and a wrong secret is refused.
func TestMCPClientCredentials(t *testing.T) {
	o := newOAuthServer(t)
	o.secret = "s3cret"
	dir := t.TempDir()
	secretPath := filepath.Join(dir, "secret")
	cfgPath := filepath.Join(dir, "lode.yaml")
	yaml := fmt.Sprintf("mcp:\n  - name: guarded\n    url: %s/mcp\n    oauth:\n      grant: client_credentials\n      client_id: lode-client\n      client_secret_file: %s\n", o.URL, secretPath)
	if err := os.WriteFile(cfgPath, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	tokens := filepath.Join(dir, "tokens.json")
	getenv := func(k string) string {
		if k == EnvMCPTokens {
			return tokens
		}
		return ""
	}
	login := func() (int, string) {
		var stderr strings.Builder
		code := run(context.Background(), env{stdin: strings.NewReader(""), stdout: io.Discard, stderr: &stderr, getenv: getenv},
			[]string{"mcp", "login", "--config", cfgPath, "guarded"})
		return code, stderr.String()
	}

	if err := os.WriteFile(secretPath, []byte("wrong\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if code, stderr := login(); code != exitError || !strings.Contains(stderr, "invalid_client") {
		t.Fatalf("wrong secret: exit %d, %s", code, stderr)
	}

	if err := os.WriteFile(secretPath, []byte("s3cret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	code, stderr := login()
	if want := "guarded accepts the client credentials of lode.yaml; each run gets its own token, so nothing is kept\n"; code != 0 || stderr != want {
		t.Fatalf("exit %d, stderr %q; want 0, %q", code, stderr, want)
	}
	if _, err := os.Stat(tokens); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("token file: %v; want none", err)
	}
	if res := callGuarded(t, env{getenv: getenv}, cfgPath); res.IsError || res.Content != "42" {
		t.Fatalf("call with client credentials: %+v", res)
	}
	if len(o.issued) != 2 || o.registrations != 0 {
		t.Fatalf("tokens issued %v, registrations %d; want one per connection, none", o.issued, o.registrations)
	}
}

// Bad oauth: blocks are refused naming their line.
func TestMCPOAuthConfigRefused(t *testing.T) {
	const head = "mcp:\n  - name: g\n    url: http://127.0.0.1:1/mcp\n    oauth:\n"
	cases := []struct{ name, yaml, want string }{
		{"secret in the file", head + "      client_id: c\n      client_secret: x\n",
			`lode.yaml:6: unknown key "client_secret" in mcp[0].oauth: (the secret never goes in the file: client_secret_env or client_secret_file says where it is)`},
		{"command server", "mcp:\n  - name: g\n    command: [\"true\"]\n    oauth:\n      client_id: c\n",
			`lode.yaml:4: mcp server "g": oauth applies to a url: server, not a command`},
		{"no client id", head + "      scopes: [a]\n",
			`lode.yaml:4: mcp server "g": oauth needs a client_id (the client registered with the server's authorization server)`},
		{"unknown grant", head + "      client_id: c\n      grant: password\n",
			`lode.yaml:6: mcp server "g": oauth.grant "password" is not one lode knows: write authorization_code (the default) or client_credentials`},
		{"two secrets", head + "      client_id: c\n      client_secret_env: S\n      client_secret_file: s.txt\n",
			`lode.yaml:7: mcp server "g": oauth: give client_secret_env or client_secret_file, not both`},
		{"bad port", head + "      client_id: c\n      redirect_port: 70000\n",
			`lode.yaml:6: mcp server "g": oauth.redirect_port must be a port from 1 to 65535 (leave it out for any free port)`},
		{"client credentials without a secret", head + "      client_id: c\n      grant: client_credentials\n",
			`lode.yaml:4: mcp server "g": oauth: the client_credentials grant needs client_secret_env or client_secret_file`},
		{"client credentials with a port", head + "      client_id: c\n      grant: client_credentials\n      client_secret_env: S\n      redirect_port: 8000\n",
			`lode.yaml:8: mcp server "g": oauth.redirect_port applies to authorization_code; client_credentials opens no browser`},
		{"client credentials with scopes", head + "      client_id: c\n      grant: client_credentials\n      client_secret_env: S\n      scopes: [a]\n",
			`lode.yaml:8: mcp server "g": oauth.scopes applies to authorization_code; with client_credentials lode asks for the scopes the server names`},
		{"oauth not a mapping", "mcp:\n  - name: g\n    url: http://127.0.0.1:1/mcp\n    oauth: yes\n",
			`lode.yaml:4: mcp[0].oauth must be a mapping of keys`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := parseConfig("lode.yaml", []byte(tc.yaml))
			if err == nil || err.Error() != tc.want {
				t.Fatalf("got %v\nwant %s", err, tc.want)
			}
		})
	}
}

// A secret that is not where the oauth: block says stops the run before
// any connection, naming the block's line.
func TestMCPOAuthSecretMissing(t *testing.T) {
	dir := t.TempDir()
	missing := filepath.Join(dir, "nope")
	empty := filepath.Join(dir, "empty")
	if err := os.WriteFile(empty, []byte("\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	const head = "mcp:\n  - name: g\n    url: http://127.0.0.1:1/mcp\n    oauth:\n      client_id: c\n"
	cases := []struct {
		name, yaml, want string
		is               error
	}{
		{"env not set", head + "      client_secret_env: G_SECRET\n",
			`lode.yaml:4: mcp server "g": $G_SECRET (oauth.client_secret_env) holds no client secret: set it`, errNoSecret},
		{"empty file", head + "      client_secret_file: " + empty + "\n",
			`lode.yaml:4: mcp server "g": ` + empty + ` (oauth.client_secret_file) holds no client secret`, errNoSecret},
		{"missing file", head + "      client_secret_file: " + missing + "\n",
			`lode.yaml:4: mcp server "g": oauth.client_secret_file: open ` + missing + `: no such file or directory`, os.ErrNotExist},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := parseConfig("lode.yaml", []byte(tc.yaml))
			if err != nil {
				t.Fatal(err)
			}
			e := env{getenv: func(k string) string {
				if k == EnvMCPTokens {
					return filepath.Join(dir, "tokens.json")
				}
				return ""
			}}
			_, err = prepareMCP(context.Background(), e, cfg)
			if err == nil || err.Error() != tc.want || !errors.Is(err, tc.is) {
				t.Fatalf("got %v\nwant %s", err, tc.want)
			}
		})
	}
}

// The README's oauth: example is a valid configuration.
func TestREADMEOAuthExample(t *testing.T) {
	cfg, err := parseConfig("lode.yaml", []byte(readmeBlock(t, "```yaml", "oauth:")))
	if err != nil {
		t.Fatal(err)
	}
	if o := cfg.MCP[0].OAuth; !o.set() || o.ClientID != "lode-cli" || o.ClientSecretEnv != "TRACKER_SECRET" || o.RedirectPort != 8765 || len(o.Scopes) != 1 {
		t.Fatalf("oauth: %+v", o)
	}
}

// With an oauth: block and no login made with its client, a run fails
// saying which login to make.
func TestMCPOAuthNeedsLogin(t *testing.T) {
	o := newOAuthServer(t)
	o.secret = "s3cret"
	dir := t.TempDir()
	cfgPath := filepath.Join(dir, "lode.yaml")
	yaml := fmt.Sprintf("mcp:\n  - name: guarded\n    url: %s/mcp\n    oauth:\n      client_id: lode-client\n      client_secret_env: GUARDED_SECRET\n", o.URL)
	if err := os.WriteFile(cfgPath, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	getenv := func(k string) string {
		switch k {
		case EnvMCPTokens:
			return filepath.Join(dir, "tokens.json")
		case "GUARDED_SECRET":
			return "s3cret"
		}
		return ""
	}
	var stderr strings.Builder
	code := run(context.Background(), env{stdin: strings.NewReader(""), stdout: io.Discard, stderr: &stderr, getenv: getenv},
		[]string{"tools", "--config", cfgPath})
	want := `MCP server "guarded" needs a login with client lode-client: run lode mcp login guarded`
	if code != exitError || !strings.Contains(stderr.String(), want) {
		t.Fatalf("exit %d, stderr %q; want %d and %q", code, stderr.String(), exitError, want)
	}
}
