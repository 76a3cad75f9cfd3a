package cli

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/lodeworks/lode/artifact"
	xtool "github.com/lodeworks/lode/x/tool"
)

// oauthServer is an MCP server behind bearer tokens with its own
// authorization server: metadata, dynamic registration, an authorization
// endpoint that redirects at once (the person said yes), and a token
// endpoint that checks the PKCE verifier is there.
type oauthServer struct {
	*httptest.Server
	mu     sync.Mutex
	issued []string
	// secret, when set, makes lode-client a confidential client: the token
	// endpoint wants it (basic auth) and also grants client_credentials.
	secret string
	// registrations counts dynamic registrations.
	registrations int
	// scope is the scope the last authorization request asked for.
	scope string
}

func newOAuthServer(t *testing.T) *oauthServer {
	t.Helper()
	o := &oauthServer{}
	mux := http.NewServeMux()
	o.Server = httptest.NewServer(mux)
	t.Cleanup(o.Close)
	base := o.URL
	js := func(w http.ResponseWriter, status int, v any) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		_ = json.NewEncoder(w).Encode(v)
	}
	mux.HandleFunc("/.well-known/oauth-protected-resource/mcp", func(w http.ResponseWriter, r *http.Request) {
		js(w, 200, map[string]any{"resource": base + "/mcp", "authorization_servers": []string{base}})
	})
	mux.HandleFunc("/.well-known/oauth-authorization-server", func(w http.ResponseWriter, r *http.Request) {
		methods := []string{"none"}
		o.mu.Lock()
		if o.secret != "" {
			methods = []string{"client_secret_basic"}
		}
		o.mu.Unlock()
		js(w, 200, map[string]any{"issuer": base, "authorization_endpoint": base + "/authorize", "token_endpoint": base + "/token",
			"registration_endpoint": base + "/register", "response_types_supported": []string{"code"},
			"code_challenge_methods_supported": []string{"S256"}, "grant_types_supported": []string{"authorization_code", "refresh_token", "client_credentials"},
			"token_endpoint_auth_methods_supported": methods})
	})
	mux.HandleFunc("/register", func(w http.ResponseWriter, r *http.Request) {
		o.mu.Lock()
		o.registrations++
		o.mu.Unlock()
		var m map[string]any
		_ = json.NewDecoder(r.Body).Decode(&m)
		m["client_id"] = "lode-client"
		m["token_endpoint_auth_method"] = "none"
		js(w, 201, m)
	})
	mux.HandleFunc("/authorize", func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		o.mu.Lock()
		o.scope = q.Get("scope")
		o.mu.Unlock()
		if q.Get("code_challenge") == "" || q.Get("code_challenge_method") != "S256" || q.Get("client_id") != "lode-client" {
			http.Error(w, "no PKCE challenge or unknown client", 400)
			return
		}
		http.Redirect(w, r, q.Get("redirect_uri")+"?code=code-1&state="+q.Get("state"), http.StatusFound)
	})
	mux.HandleFunc("/token", func(w http.ResponseWriter, r *http.Request) {
		_ = r.ParseForm()
		o.mu.Lock()
		secret := o.secret
		o.mu.Unlock()
		if id, sec, _ := r.BasicAuth(); secret != "" && (id != "lode-client" || sec != secret) {
			js(w, 401, map[string]any{"error": "invalid_client"})
			return
		}
		code := r.Form.Get("grant_type") == "authorization_code" && r.Form.Get("code") == "code-1" && r.Form.Get("code_verifier") != ""
		if !code && (secret == "" || r.Form.Get("grant_type") != "client_credentials") {
			js(w, 400, map[string]any{"error": "invalid_grant"})
			return
		}
		o.mu.Lock()
		tok := "token-" + string(rune('1'+len(o.issued)))
		o.issued = append(o.issued, tok)
		o.mu.Unlock()
		js(w, 200, map[string]any{"access_token": tok, "token_type": "Bearer", "expires_in": 3600, "refresh_token": "refresh-1"})
	})
	srv := sdk.NewServer(&sdk.Implementation{Name: "guarded", Version: "1"}, nil)
	sdk.AddTool(srv, &sdk.Tool{Name: "secret", Annotations: &sdk.ToolAnnotations{ReadOnlyHint: true}}, func(ctx context.Context, req *sdk.CallToolRequest, _ struct{}) (*sdk.CallToolResult, any, error) {
		return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "42"}}}, nil, nil
	})
	verify := func(ctx context.Context, token string, r *http.Request) (*auth.TokenInfo, error) {
		o.mu.Lock()
		defer o.mu.Unlock()
		for _, t := range o.issued {
			if t == token {
				return &auth.TokenInfo{Expiration: time.Now().Add(time.Hour)}, nil
			}
		}
		return nil, auth.ErrInvalidToken
	}
	mux.Handle("/mcp", auth.RequireBearerToken(verify, &auth.RequireBearerTokenOptions{ResourceMetadataURL: base + "/.well-known/oauth-protected-resource/mcp"})(
		sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return srv }, nil)))
	return o
}

// browse plays the person's browser: it opens the link lode prints and
// follows the redirect back to lode's loopback listener.
func browse(stderr io.Reader, out io.Writer, done chan<- error, finished chan<- struct{}) {
	defer close(finished)
	sc := bufio.NewScanner(stderr)
	opened := false
	for sc.Scan() {
		line := sc.Text()
		io.WriteString(out, line+"\n")
		if link := strings.TrimSpace(line); !opened && strings.HasPrefix(link, "http") {
			opened = true
			go func() {
				resp, err := http.Get(link)
				if err == nil {
					resp.Body.Close()
				}
				done <- err
			}()
		}
	}
}

func TestMCPLogin(t *testing.T) {
	o := newOAuthServer(t)
	dir := t.TempDir()
	cfgPath := filepath.Join(dir, "lode.yaml")
	if err := os.WriteFile(cfgPath, []byte("mcp:\n  - name: guarded\n    url: "+o.URL+"/mcp\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	tokens := filepath.Join(dir, "private", "tokens.json")
	getenv := func(k string) string {
		if k == EnvMCPTokens {
			return tokens
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
	if !strings.Contains(shown.String(), "logged in to guarded; the token is kept in "+tokens) {
		t.Fatalf("output:\n%s", shown.String())
	}
	st, err := os.Stat(tokens)
	if err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("token file: %v, mode %v; want 0600", err, st.Mode().Perm())
	}
	if st, _ := os.Stat(filepath.Dir(tokens)); st.Mode().Perm() != 0o700 {
		t.Fatalf("token directory mode %v, want 0700", st.Mode().Perm())
	}
	store := &tokenStore{path: tokens}
	logins, err := store.load()
	if l := logins["guarded"]; err != nil || l.ClientID != "lode-client" || l.Token.AccessToken != "token-1" || l.Token.RefreshToken != "refresh-1" || l.TokenURL != o.URL+"/token" {
		t.Fatalf("stored login: %+v, %v", logins, err)
	}

	// A later run sends the stored token: no browser, no new token.
	cfg, err := (&options{config: cfgPath}).load(env{getenv: getenv})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := prepareMCP(context.Background(), env{getenv: getenv}, cfg); err != nil {
		t.Fatal(err)
	}
	tb, err := mountTools(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer tb.Close()
	res := xtool.NewHandler(tb.reg).Execute(context.Background(), artifact.ToolCall{ID: "1", Name: "guarded__secret", Arguments: "{}"})
	if res.IsError || res.Content != "42" {
		t.Fatalf("call with the stored token: %+v", res)
	}
	if o.issued[len(o.issued)-1] != "token-1" || len(o.issued) != 1 {
		t.Fatalf("tokens issued: %v, want only the login's", o.issued)
	}
}

// Bad inputs: no such server, a command server, no name, and a token file
// other users may read.
func TestMCPLoginRefuses(t *testing.T) {
	dir := t.TempDir()
	cfgPath := filepath.Join(dir, "lode.yaml")
	if err := os.WriteFile(cfgPath, []byte("mcp:\n  - name: local\n    command: [\"true\"]\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		args []string
		want string
		code int
	}{
		{"unknown server", []string{"mcp", "login", "--config", cfgPath, "nope"}, `lode: no MCP server "nope" in the configuration`, exitError},
		{"command server", []string{"mcp", "login", "--config", cfgPath, "local"}, `lode: MCP server "local" runs a command; only url: servers log in`, exitError},
		{"no name", []string{"mcp", "login", "--config", cfgPath}, "lode: lode mcp login takes one MCP server name", exitUsage},
		{"no subcommand", []string{"mcp"}, "lode: usage: lode mcp login NAME (log in to the MCP server NAME of lode.yaml)", exitUsage},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var stderr strings.Builder
			code := run(context.Background(), env{stdin: strings.NewReader(""), stdout: io.Discard, stderr: &stderr, getenv: func(string) string { return "" }}, tc.args)
			if code != tc.code || strings.TrimSpace(stderr.String()) != tc.want {
				t.Fatalf("exit %d, stderr %q; want %d, %q", code, stderr.String(), tc.code, tc.want)
			}
		})
	}
	t.Run("open token file", func(t *testing.T) {
		path := filepath.Join(dir, "tokens.json")
		if err := os.WriteFile(path, []byte("{}"), 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := (&tokenStore{path: path}).load()
		want := "mcp tokens: " + path + " is readable by other users (mode -rw-r--r--): run chmod 600 on it"
		if err == nil || err.Error() != want || !errors.Is(err, errTokenFileOpen) {
			t.Fatalf("got %v, want %q", err, want)
		}
	})
}
