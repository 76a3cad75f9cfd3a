package mcp

import (
	"github.com/modelcontextprotocol/go-sdk/auth"
)

// WithOAuth authorises HTTP requests with h, the go-sdk's OAuth support:
// on a 401 or 403 it finds the server's protected resource metadata and
// authorization server, registers the client (pre-registered, client ID
// metadata document or dynamic registration), obtains a token and
// retries; it also asks for more scope when the server says so. Use
// auth.NewAuthorizationCodeHandler for the authorization code flow with
// PKCE, and the go-sdk's extauth.NewClientCredentialsHandler for the
// client credentials grant (a service with a pre-registered client and
// secret, no person). It applies only to WithHTTP.
func WithOAuth(h auth.OAuthHandler) Option { return func(c *config) { c.features.oauth = h } }
