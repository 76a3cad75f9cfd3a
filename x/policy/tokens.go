package policy

import (
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"net/http"
	"strings"

	"github.com/lodeworks/lode/ledger"
)

// ErrUnauthenticated is what Tokens return for a request without a known
// bearer token; HTTP doors answer it with 401.
var ErrUnauthenticated = errors.New("policy: no known bearer token")

// Tokens identify HTTP callers by static bearer tokens, each granting a
// list of roles: the verifier an operator configures without an identity
// provider. The tokens themselves belong in the environment or in files,
// never in a configuration file. A Tokens is safe for concurrent use.
//
// x/auth's Tokens do the same and grant a whole auth.Identity (user,
// tenant, roles), for its Sessions and Chain; lode's doors use those.
type Tokens struct {
	entries []tokenEntry
}

type tokenEntry struct {
	sum   [sha256.Size]byte
	roles []string
}

// NewTokens returns Tokens granting, for each token, its roles. Blank
// tokens are ignored.
func NewTokens(grants map[string][]string) *Tokens {
	t := &Tokens{}
	for tok, roles := range grants {
		if strings.TrimSpace(tok) == "" {
			continue
		}
		t.entries = append(t.entries, tokenEntry{sum: sha256.Sum256([]byte(tok)), roles: roles})
	}
	return t
}

// Roles returns the roles of the request's bearer token. Every known
// token is compared, in constant time, so timing tells nothing.
func (t *Tokens) Roles(r *http.Request) ([]string, error) {
	_, roles, err := t.Lookup(r)
	return roles, err
}

// Lookup returns, for the request's bearer token, a caller ID that names
// the token without revealing it (a hash prefix, stable across restarts)
// and the token's roles.
func (t *Tokens) Lookup(r *http.Request) (caller string, roles []string, err error) {
	tok, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if !ok || tok == "" {
		return "", nil, ErrUnauthenticated
	}
	sum := sha256.Sum256([]byte(tok))
	found := false
	for _, e := range t.entries {
		if subtle.ConstantTimeCompare(sum[:], e.sum[:]) == 1 {
			roles, found = e.roles, true
		}
	}
	if !found {
		return "", nil, ErrUnauthenticated
	}
	return "token:" + hex.EncodeToString(sum[:6]), roles, nil
}

// Identify returns, for the request's bearer token, a thread whose
// metadata holds its roles: it fits an MCP server's WithIdentify.
func (t *Tokens) Identify(r *http.Request) (ledger.State, error) {
	roles, err := t.Roles(r)
	if err != nil {
		return nil, err
	}
	return ledger.NewThread(ledger.WithMetadata(map[string]string{RolesKey: strings.Join(roles, ",")})), nil
}
