package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/auth/extauth"
	"github.com/modelcontextprotocol/go-sdk/oauthex"

	"github.com/lodeworks/lode/x/tool/mcp"
)

// The grants an oauth: block names.
const (
	grantAuthorizationCode = "authorization_code"
	grantClientCredentials = "client_credentials"
)

// MCPOAuth is the oauth: block of a url: MCP server: a client registered
// in advance. The secret never goes in the file; ClientSecretEnv or
// ClientSecretFile says where it is.
type MCPOAuth struct {
	// Grant is authorization_code (the default: a person logs in with lode
	// mcp login) or client_credentials (a service logs in with its secret on
	// each run, no person involved).
	Grant            string `yaml:"grant"`
	ClientID         string `yaml:"client_id"`
	ClientSecretEnv  string `yaml:"client_secret_env"`
	ClientSecretFile string `yaml:"client_secret_file"`
	// Scopes replaces the scopes the server names, for authorization_code;
	// empty asks for those.
	Scopes []string `yaml:"scopes"`
	// RedirectPort fixes the loopback port lode mcp login listens on, for
	// a client registered with that redirect; 0 takes any free port.
	RedirectPort int `yaml:"redirect_port"`

	// at says where the block is, for errors found when it is used.
	at string
}

// set reports whether the server has an oauth: block.
func (o MCPOAuth) set() bool { return o.at != "" }

func (o MCPOAuth) clientCredentials() bool { return o.Grant == grantClientCredentials }

// check validates the oauth: block at path of server s; every error names
// the line of the key at fault.
func (o *MCPOAuth) check(f *fileLines, path string, s MCPServer) error {
	if _, ok := f.lines[path]; !ok {
		return nil
	}
	o.at = f.at(path)
	at := func(key string) string { return f.at(path + "." + key) }
	prefix := fmt.Sprintf("mcp server %q: oauth", s.Name)
	switch {
	case s.URL == "":
		return fmt.Errorf("%s: %s applies to a url: server, not a command", o.at, prefix)
	case o.Grant != "" && o.Grant != grantAuthorizationCode && o.Grant != grantClientCredentials:
		return fmt.Errorf("%s: %s.grant %q is not one lode knows: write %s (the default) or %s", at("grant"), prefix, o.Grant, grantAuthorizationCode, grantClientCredentials)
	case o.ClientID == "":
		return fmt.Errorf("%s: %s needs a client_id (the client registered with the server's authorization server)", o.at, prefix)
	case o.ClientSecretEnv != "" && o.ClientSecretFile != "":
		return fmt.Errorf("%s: %s: give client_secret_env or client_secret_file, not both", at("client_secret_file"), prefix)
	case o.RedirectPort < 0 || o.RedirectPort > 65535:
		return fmt.Errorf("%s: %s.redirect_port must be a port from 1 to 65535 (leave it out for any free port)", at("redirect_port"), prefix)
	}
	if o.clientCredentials() {
		switch {
		case o.ClientSecretEnv == "" && o.ClientSecretFile == "":
			return fmt.Errorf("%s: %s: the client_credentials grant needs client_secret_env or client_secret_file", o.at, prefix)
		case o.RedirectPort != 0:
			return fmt.Errorf("%s: %s.redirect_port applies to authorization_code; client_credentials opens no browser", at("redirect_port"), prefix)
		case len(o.Scopes) > 0:
			return fmt.Errorf("%s: %s.scopes applies to authorization_code; with client_credentials lode asks for the scopes the server names", at("scopes"), prefix)
		}
	}
	return nil
}

// errNoSecret is returned when the place an oauth: block names for the
// client secret holds none.
var errNoSecret = errors.New("holds no client secret")

// credentials reads the client's secret from where the block says and
// returns the client as the go-sdk takes it; nil without an oauth: block.
func (o MCPOAuth) credentials(e env, name string) (*oauthex.ClientCredentials, error) {
	if !o.set() {
		return nil, nil
	}
	c := &oauthex.ClientCredentials{ClientID: o.ClientID}
	var secret string
	switch {
	case o.ClientSecretEnv != "":
		if secret = e.getenv(o.ClientSecretEnv); secret == "" {
			return nil, fmt.Errorf("%s: mcp server %q: $%s (oauth.client_secret_env) %w: set it", o.at, name, o.ClientSecretEnv, errNoSecret)
		}
	case o.ClientSecretFile != "":
		b, err := os.ReadFile(o.ClientSecretFile)
		if err != nil {
			return nil, fmt.Errorf("%s: mcp server %q: oauth.client_secret_file: %w", o.at, name, err)
		}
		if secret = strings.TrimSpace(string(b)); secret == "" {
			return nil, fmt.Errorf("%s: mcp server %q: %s (oauth.client_secret_file) %w", o.at, name, o.ClientSecretFile, errNoSecret)
		}
	default:
		return c, nil
	}
	c.ClientSecretAuth = &oauthex.ClientSecretAuth{ClientSecret: secret}
	return c, nil
}

// mcpOAuth is the OAuth handler a run gives url: server s: the client
// credentials grant when its oauth: block asks for it, else the login of
// lode mcp login (made with the block's client when there is one); nil
// when there is nothing to send.
func mcpOAuth(ctx context.Context, e env, store *tokenStore, s MCPServer) (auth.OAuthHandler, error) {
	if s.URL == "" {
		return nil, nil
	}
	creds, err := s.OAuth.credentials(e, s.Name)
	if err != nil {
		return nil, err
	}
	if s.OAuth.clientCredentials() {
		h, err := extauth.NewClientCredentialsHandler(&extauth.ClientCredentialsHandlerConfig{Credentials: creds, HTTPClient: s.httpc})
		if err != nil {
			return nil, fmt.Errorf("%s: mcp server %q: oauth: %w", s.OAuth.at, s.Name, err)
		}
		return h, nil
	}
	h, err := storedOAuth(ctx, store, s, creds)
	if err != nil {
		return nil, fmt.Errorf("mcp server %q: %w", s.Name, err)
	}
	return h, nil
}

// checkClientCredentials is lode mcp login for a server on the client
// credentials grant: there is nothing to keep, since each run asks for its
// own token, so it only checks that the credentials are accepted.
func checkClientCredentials(ctx context.Context, e env, s MCPServer) error {
	h, err := mcpOAuth(ctx, e, nil, s)
	if err != nil {
		return err
	}
	opts := []mcp.Option{mcp.WithName(s.Name), mcp.WithHTTP(s.URL), mcp.WithOAuth(h)}
	if s.httpc != nil {
		opts = append(opts, mcp.WithHTTPClient(s.httpc))
	}
	c, err := mcp.NewClient(opts...)
	if err != nil {
		return err
	}
	defer c.Close()
	if err := c.Connect(ctx); err != nil {
		return err
	}
	fmt.Fprintf(e.stderr, "%s accepts the client credentials of lode.yaml; each run gets its own token, so nothing is kept\n", s.Name)
	return nil
}
