package auth

import (
	"crypto/hmac"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
)

// ErrOption is what the constructors of this package return, wrapped, for
// a setting they cannot take.
var ErrOption = errors.New("auth: invalid option")

// Token is one static bearer token and the Identity it grants. An empty
// Identity.User is filled with TokenUser(Secret), which names the token
// without revealing it.
type Token struct {
	// Secret is the token itself: it belongs in the environment or in a
	// file, never in a configuration file.
	Secret string
	Identity
}

// Tokens authenticate requests by static bearer tokens (Authorization:
// Bearer TOKEN), each granting an Identity: the verifier an operator
// configures without an identity provider. A Tokens is safe for
// concurrent use.
type Tokens struct {
	entries []tokenEntry
}

type tokenEntry struct {
	sum [sha256.Size]byte
	// key signs the sessions this token logs in (see Sessions): derived
	// from the secret, so that every replica given the token agrees, and
	// a cookie stops working with the token's removal.
	key [sha256.Size]byte
	id  Identity
}

// NewTokens returns Tokens granting each token its Identity. A blank
// secret or one given twice is an error wrapping ErrOption, and so is a
// secret shorter than MinTokenBytes: a guessable token guards nothing.
func NewTokens(tokens ...Token) (*Tokens, error) {
	t := &Tokens{}
	var errs []error
	seen := map[[sha256.Size]byte]bool{}
	for i, tok := range tokens {
		if strings.TrimSpace(tok.Secret) == "" {
			errs = append(errs, fmt.Errorf("%w: token %d is blank", ErrOption, i))
			continue
		}
		if len(tok.Secret) < MinTokenBytes {
			errs = append(errs, fmt.Errorf("%w: token %d has %d bytes: give at least %d (e.g. openssl rand -hex 32)", ErrOption, i, len(tok.Secret), MinTokenBytes))
			continue
		}
		sum := sha256.Sum256([]byte(tok.Secret))
		if seen[sum] {
			errs = append(errs, fmt.Errorf("%w: token %d is given twice", ErrOption, i))
			continue
		}
		seen[sum] = true
		id := tok.Identity
		if id.User == "" {
			id.User = TokenUser(tok.Secret)
		}
		id.Roles = slices.Clone(id.Roles)
		mac := hmac.New(sha256.New, []byte(tok.Secret))
		mac.Write([]byte("lode session key v1"))
		e := tokenEntry{sum: sum, id: id}
		copy(e.key[:], mac.Sum(nil))
		t.entries = append(t.entries, e)
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return t, nil
}

// MinTokenBytes is the shortest secret NewTokens takes.
const MinTokenBytes = 8

// TokenUser is the user name a token grants when its Identity names none:
// "token:" and a prefix of the token's SHA-256, stable across restarts and
// replicas, and of no use to guess the token by.
func TokenUser(secret string) string {
	sum := sha256.Sum256([]byte(secret))
	return "token:" + hex.EncodeToString(sum[:6])
}

// Authenticate returns the Identity of the request's bearer token. Every
// known token is compared, in constant time, so timing tells nothing of
// which one came close. A request with no token, or one not known, gets
// ErrUnauthenticated.
func (t *Tokens) Authenticate(r *http.Request) (Identity, error) {
	tok, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if !ok || tok == "" {
		return Identity{}, ErrUnauthenticated
	}
	id, ok := t.Check(tok)
	if !ok {
		return Identity{}, ErrUnauthenticated
	}
	return id, nil
}

// Check returns the Identity secret grants, comparing it with every known
// token in constant time.
func (t *Tokens) Check(secret string) (Identity, bool) {
	e := t.find(sha256.Sum256([]byte(secret)))
	if e == nil {
		return Identity{}, false
	}
	return e.id.clone(), true
}

// find returns the entry whose token hashes to sum, after comparing with
// every entry.
func (t *Tokens) find(sum [sha256.Size]byte) *tokenEntry {
	if t == nil {
		return nil
	}
	var found *tokenEntry
	for i := range t.entries {
		if subtle.ConstantTimeCompare(sum[:], t.entries[i].sum[:]) == 1 {
			found = &t.entries[i]
		}
	}
	return found
}

// Len is how many tokens t knows.
func (t *Tokens) Len() int {
	if t == nil {
		return 0
	}
	return len(t.entries)
}

func (id Identity) clone() Identity {
	id.Roles = slices.Clone(id.Roles)
	return id
}
