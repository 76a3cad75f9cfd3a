package cli

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
	"golang.org/x/oauth2"

	"github.com/lodeworks/lode/x/tool/mcp"
)

// EnvMCPTokens names the file lode keeps MCP OAuth tokens in; empty means
// lode/mcp-tokens.json under the user's configuration directory.
const EnvMCPTokens = "LODE_MCP_TOKENS"

// login is what lode keeps for one server after lode mcp login: enough to
// send the token and to refresh it.
type login struct {
	URL          string        `json:"url"`
	ClientID     string        `json:"client_id"`
	ClientSecret string        `json:"client_secret,omitempty"`
	AuthURL      string        `json:"auth_url,omitempty"`
	TokenURL     string        `json:"token_url"`
	AuthStyle    int           `json:"auth_style,omitempty"`
	Scopes       []string      `json:"scopes,omitempty"`
	Token        *oauth2.Token `json:"token"`
}

// tokenStore is a JSON file of logins keyed by server name, readable only
// by its owner: it holds bearer tokens.
type tokenStore struct {
	path string
	mu   sync.Mutex
}

// errTokenFileOpen is returned for a token file others may read.
var errTokenFileOpen = errors.New("readable by other users")

func openTokenStore(e env) (*tokenStore, error) {
	path := e.getenv(EnvMCPTokens)
	if path == "" {
		dir, err := os.UserConfigDir()
		if err != nil {
			return nil, fmt.Errorf("mcp tokens: %w; set %s to a file path", err, EnvMCPTokens)
		}
		path = filepath.Join(dir, "lode", "mcp-tokens.json")
	}
	return &tokenStore{path: path}, nil
}

func (s *tokenStore) load() (map[string]login, error) {
	f, err := os.Open(s.path)
	if errors.Is(err, fs.ErrNotExist) {
		return map[string]login{}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("mcp tokens: %w", err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("mcp tokens: %w", err)
	}
	if st.Mode().Perm()&0o077 != 0 {
		return nil, fmt.Errorf("mcp tokens: %s is %w (mode %s): run chmod 600 on it", s.path, errTokenFileOpen, st.Mode().Perm())
	}
	logins := map[string]login{}
	if err := json.NewDecoder(f).Decode(&logins); err != nil {
		return nil, fmt.Errorf("mcp tokens: %s: %w", s.path, err)
	}
	return logins, nil
}

// put stores l under name, replacing the file whole so a crash leaves
// either the old file or the new one.
func (s *tokenStore) put(name string, l login) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	logins, err := s.load()
	if err != nil {
		return err
	}
	logins[name] = l
	data, err := json.MarshalIndent(logins, "", "  ")
	if err != nil {
		return err
	}
	dir := filepath.Dir(s.path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("mcp tokens: %w", err)
	}
	tmp, err := os.CreateTemp(dir, ".mcp-tokens-*")
	if err != nil {
		return fmt.Errorf("mcp tokens: %w", err)
	}
	defer os.Remove(tmp.Name())
	if err := tmp.Chmod(0o600); err == nil {
		_, err = tmp.Write(data)
		if err == nil {
			err = tmp.Sync()
		}
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), s.path)
	}
	if err != nil {
		return fmt.Errorf("mcp tokens: %w", err)
	}
	return nil
}

// oauthConfig rebuilds the OAuth client a login was made with.
func (l login) oauthConfig() *oauth2.Config {
	return &oauth2.Config{
		ClientID: l.ClientID, ClientSecret: l.ClientSecret, Scopes: l.Scopes,
		Endpoint: oauth2.Endpoint{AuthURL: l.AuthURL, TokenURL: l.TokenURL, AuthStyle: oauth2.AuthStyle(l.AuthStyle)},
	}
}

// savingSource stores each token its source hands out that differs from
// the last one stored, so a refreshed token outlives the process.
type savingSource struct {
	src   oauth2.TokenSource
	save  func(*oauth2.Token) error
	mu    sync.Mutex
	saved string
}

func (s *savingSource) Token() (*oauth2.Token, error) {
	t, err := s.src.Token()
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if t.AccessToken != s.saved {
		if err := s.save(t); err != nil {
			return nil, err
		}
		s.saved = t.AccessToken
	}
	return t, nil
}

// storedOAuth is the OAuth handler of a server lode mcp login logged in
// to: it sends the stored token, refreshes it, and keeps the refreshed
// one. When the server wants a new login, the call fails saying to run
// lode mcp login again; nil when there is no login for the server. pre
// is the client of the server's oauth: block, nil without one: its secret
// is read from where the block says rather than kept with the token, and a
// login made with another client is not used.
func storedOAuth(ctx context.Context, store *tokenStore, s MCPServer, pre *oauthex.ClientCredentials) (auth.OAuthHandler, error) {
	if store == nil || s.URL == "" {
		return nil, nil
	}
	logins, err := store.load()
	if err != nil {
		return nil, err
	}
	l, ok := logins[s.Name]
	usable := ok && l.URL == s.URL && l.Token != nil && (pre == nil || pre.ClientID == l.ClientID)
	if !usable && pre != nil {
		// The file says the server wants a login: say how to make one
		// when it asks, rather than a bare 401.
		return auth.NewAuthorizationCodeHandler(&auth.AuthorizationCodeHandlerConfig{
			PreregisteredClient: pre,
			RedirectURL:         "http://127.0.0.1/callback",
			AuthorizationCodeFetcher: func(context.Context, *auth.AuthorizationArgs) (*auth.AuthorizationResult, error) {
				return nil, fmt.Errorf("MCP server %q needs a login with client %s: run lode mcp login %s", s.Name, pre.ClientID, s.Name)
			},
		})
	}
	if !usable {
		return nil, nil
	}
	client := &oauthex.ClientCredentials{ClientID: l.ClientID}
	if pre != nil {
		client = pre
		l.ClientSecret = ""
		if pre.ClientSecretAuth != nil {
			l.ClientSecret = pre.ClientSecretAuth.ClientSecret
		}
	}
	keep := l
	src := &savingSource{
		src:   l.oauthConfig().TokenSource(context.WithoutCancel(ctx), l.Token),
		saved: l.Token.AccessToken,
		save: func(t *oauth2.Token) error {
			keep.Token = t
			if pre != nil {
				keep.ClientSecret = ""
			}
			return store.put(s.Name, keep)
		},
	}
	return auth.NewAuthorizationCodeHandler(&auth.AuthorizationCodeHandlerConfig{
		PreregisteredClient: client,
		RedirectURL:         "http://127.0.0.1/callback",
		AuthorizationCodeFetcher: func(context.Context, *auth.AuthorizationArgs) (*auth.AuthorizationResult, error) {
			return nil, fmt.Errorf("the login to MCP server %q has expired: run lode mcp login %s", s.Name, s.Name)
		},
		InitialTokenSource: src,
	})
}

// cmdMCP runs lode mcp SUBCOMMAND.
func cmdMCP(ctx context.Context, e env, args []string) error {
	if len(args) == 0 || args[0] != "login" {
		return usageError{"usage: lode mcp login NAME (log in to the MCP server NAME of lode.yaml)"}
	}
	return cmdMCPLogin(ctx, e, args[1:])
}

// cmdMCPLogin logs in to a url: server with the OAuth authorization code
// flow and PKCE: it uses the client of the server's oauth: block, or else
// registers lode with the server's authorization server (dynamic
// registration), prints the link to open in a browser, receives
// the redirect on a loopback port, and keeps the token in the token file.
func cmdMCPLogin(ctx context.Context, e env, args []string) error {
	fs := flag.NewFlagSet("lode mcp login", flag.ContinueOnError)
	var o options
	o.registerTools(fs)
	describe(fs, "lode mcp login [flags] NAME", "Prints a link to open in a browser; the browser comes back to lode on a loopback port.\nThe token is kept in $"+EnvMCPTokens+" (default: lode/mcp-tokens.json in the user's configuration directory), readable only by you.")
	rest, err := parseFlags(fs, e, args)
	if err != nil {
		return err
	}
	if len(rest) != 1 {
		return usageError{"lode mcp login takes one MCP server name"}
	}
	name := rest[0]
	cfg, err := o.load(e)
	if err != nil {
		return err
	}
	var srv *MCPServer
	for i := range cfg.MCP {
		if cfg.MCP[i].Name == name {
			srv = &cfg.MCP[i]
		}
	}
	switch {
	case srv == nil:
		return fmt.Errorf("no MCP server %q in the configuration", name)
	case srv.URL == "":
		return fmt.Errorf("MCP server %q runs a command; only url: servers log in", name)
	}
	store, err := openTokenStore(e)
	if err != nil {
		return err
	}
	pre, err := srv.OAuth.credentials(e, name)
	if err != nil {
		return err
	}
	if srv.OAuth.clientCredentials() {
		return checkClientCredentials(ctx, e, *srv)
	}

	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", fmt.Sprintf("127.0.0.1:%d", srv.OAuth.RedirectPort))
	if err != nil {
		return err
	}
	redirect := "http://" + ln.Addr().String() + "/callback"
	results := make(chan *auth.AuthorizationResult, 1)
	hs := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/callback" {
			http.NotFound(w, r)
			return
		}
		q := r.URL.Query()
		if msg := q.Get("error"); msg != "" {
			fmt.Fprintf(w, "lode: the login failed: %s %s\n", msg, q.Get("error_description"))
		} else {
			fmt.Fprintln(w, "lode: logged in; you may close this page.")
		}
		select {
		case results <- &auth.AuthorizationResult{Code: q.Get("code"), State: q.Get("state"), Iss: q.Get("iss")}:
		default:
		}
	})}
	go hs.Serve(ln)
	defer hs.Close()

	var got login
	hc := &auth.AuthorizationCodeHandlerConfig{
		RedirectURL:         redirect,
		PreregisteredClient: pre,
		RequestRefreshToken: true,
		AuthorizationCodeFetcher: func(ctx context.Context, args *auth.AuthorizationArgs) (*auth.AuthorizationResult, error) {
			fmt.Fprintf(e.stderr, "open this link to log in to %s:\n\n  %s\n\nwaiting for the browser on %s …\n", name, args.URL, redirect)
			select {
			case <-ctx.Done():
				return nil, ctx.Err()
			case r := <-results:
				if r.Code == "" {
					return nil, errors.New("the authorization server sent no code")
				}
				return r, nil
			}
		},
		NewTokenSource: func(ctx context.Context, c *oauth2.Config, t *oauth2.Token) (oauth2.TokenSource, error) {
			got = login{URL: srv.URL, ClientID: c.ClientID, ClientSecret: c.ClientSecret, AuthURL: c.Endpoint.AuthURL,
				TokenURL: c.Endpoint.TokenURL, AuthStyle: int(c.Endpoint.AuthStyle), Scopes: c.Scopes, Token: t}
			if pre != nil {
				got.ClientSecret = "" // read from the oauth: block on each run
			}
			return c.TokenSource(ctx, t), nil
		},
	}
	if pre == nil {
		hc.DynamicClientRegistrationConfig = &auth.DynamicClientRegistrationConfig{Metadata: &oauthex.ClientRegistrationMetadata{
			ClientName:   "lode",
			RedirectURIs: []string{redirect},
			GrantTypes:   []string{"authorization_code", "refresh_token"},
		}}
	}
	if scopes := srv.OAuth.Scopes; len(scopes) > 0 {
		hc.ScopeFilter = func([]string) []string { return scopes }
	}
	h, err := auth.NewAuthorizationCodeHandler(hc)
	if err != nil {
		return err
	}
	copts := []mcp.Option{mcp.WithName(name), mcp.WithHTTP(srv.URL), mcp.WithOAuth(h)}
	if srv.httpc != nil {
		copts = append(copts, mcp.WithHTTPClient(srv.httpc))
	}
	c, err := mcp.NewClient(copts...)
	if err != nil {
		return err
	}
	defer c.Close()
	if err := c.Connect(ctx); err != nil {
		return err
	}
	if got.Token == nil {
		return fmt.Errorf("MCP server %q asked for no login: its requests go through without a token", name)
	}
	if err := store.put(name, got); err != nil {
		return err
	}
	fmt.Fprintf(e.stderr, "logged in to %s; the token is kept in %s\n", name, store.path)
	return nil
}
