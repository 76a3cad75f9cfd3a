package memory

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/lodeworks/lode/ledger"
	"github.com/lodeworks/lode/x/auth"
)

// Limits on what a Store takes and gives.
const (
	// MaxFactBytes bounds one fact's text, in bytes.
	MaxFactBytes = 2000
	// MaxQueryTerms bounds how many distinct terms of a query are searched
	// for; the rest are ignored.
	MaxQueryTerms = 32
	// DefaultLimit is how many facts Search returns when asked for 0.
	DefaultLimit = 5
	// MaxLimit bounds how many facts Search returns.
	MaxLimit = 50
)

var (
	// ErrNoScope is what a Store and the tools answer for a caller with no
	// user: memory fails closed for an anonymous caller.
	ErrNoScope = errors.New("memory: no identity: the caller has no user")
	// ErrNotFound is what Forget answers for an ID the scope does not hold.
	ErrNotFound = errors.New("memory: no such fact in this scope")
	// ErrFact is what Save answers for a fact CheckFact refuses.
	ErrFact = errors.New("memory: invalid fact")
)

// Scope is whose facts a Store call reads or writes: the tenant and user of
// an auth.Identity. It is made from an Identity (ScopeOf) or from the
// metadata a door wrote on a thread (ThreadScope), never from what a model
// or a request body says. Facts of one Scope are never seen from another.
type Scope struct {
	Tenant string
	User   string
}

// ScopeOf returns the Scope of id. An Identity without a user (the
// anonymous caller) has none: ErrNoScope.
func ScopeOf(id auth.Identity) (Scope, error) {
	s := Scope{Tenant: id.Tenant, User: id.User}
	return s, s.Check()
}

// ThreadScope returns the Scope of the caller whose identity a door wrote
// on st (auth.Of). A thread without a user has none: ErrNoScope.
func ThreadScope(st ledger.State) (Scope, error) { return ScopeOf(auth.Of(st)) }

// Check reports ErrNoScope for a Scope without a user, and for one whose
// tenant or user holds a NUL byte or is not UTF-8 (no authenticator makes
// such a name, and SQL text cannot hold it).
func (s Scope) Check() error {
	switch {
	case strings.TrimSpace(s.User) == "":
		return ErrNoScope
	case strings.ContainsRune(s.User+s.Tenant, 0) || !utf8.ValidString(s.User+s.Tenant):
		return fmt.Errorf("%w: its tenant or user holds a NUL byte or is not UTF-8", ErrNoScope)
	}
	return nil
}

// Fact is one saved fact.
type Fact struct {
	// ID names the fact within its Store, for Forget.
	ID string `json:"id"`
	// Text is the fact as saved.
	Text string `json:"text"`
	// Saved is when it was saved.
	Saved time.Time `json:"saved"`
	// Score is how well the fact matched a Search, higher is better; its
	// scale differs between stores. Zero outside Search.
	Score float64 `json:"score,omitempty"`
}

// Store keeps facts by Scope. Every method fails with ErrNoScope for a
// Scope without a user, and never reads or changes facts of another Scope.
type Store interface {
	// Save saves texts as facts of s, all or none, and returns them with
	// their IDs. A text that CheckFact refuses fails the whole call.
	Save(ctx context.Context, s Scope, texts ...string) ([]Fact, error)
	// Search returns at most limit facts of s that share terms with query
	// (Terms), best first. limit 0 means DefaultLimit, and it is capped at
	// MaxLimit. A query with no terms finds nothing. The query is text,
	// never syntax: quotes, operators and wildcards are not interpreted.
	Search(ctx context.Context, s Scope, query string, limit int) ([]Fact, error)
	// Forget deletes the fact id of s: ErrNotFound when s has none.
	Forget(ctx context.Context, s Scope, id string) error
	// List returns every fact of s, oldest first.
	List(ctx context.Context, s Scope) ([]Fact, error)
	// Close releases the store.
	Close() error
}

// CheckFact reports, wrapping ErrFact, why text cannot be saved: it is
// blank, not UTF-8, holds a NUL byte or is longer than MaxFactBytes.
func CheckFact(text string) error {
	switch {
	case strings.TrimSpace(text) == "":
		return fmt.Errorf("%w: it is empty", ErrFact)
	case !utf8.ValidString(text):
		return fmt.Errorf("%w: it is not UTF-8", ErrFact)
	case strings.ContainsRune(text, 0):
		return fmt.Errorf("%w: it holds a NUL byte", ErrFact)
	case len(text) > MaxFactBytes:
		return fmt.Errorf("%w: %d bytes is over the %d-byte limit", ErrFact, len(text), MaxFactBytes)
	}
	return nil
}

// Limit returns the number of facts a Search for limit returns at most:
// DefaultLimit for 0 or less, MaxLimit at most.
func Limit(limit int) int {
	switch {
	case limit <= 0:
		return DefaultLimit
	case limit > MaxLimit:
		return MaxLimit
	}
	return limit
}

// stopwords are left out of the terms: they would match nearly every fact.
var stopwords = map[string]bool{}

func init() {
	for w := range strings.FieldsSeq(`a an and are as at be by did do does for from had has have he her his how i
		in is it its me my of on or our she so that the their them they this to was we were what when where which
		who whom whose why will with you your`) {
		stopwords[w] = true
	}
}

// Terms splits text into the lower-case terms every Store matches on: runs
// of letters and digits, with common English stopwords and a trailing "'s"
// left out, and the plural "s" of a longer word dropped ("lives" is
// "live", "class" stays). A term is made of letters and digits only, so it
// can carry no query syntax into any store.
func Terms(text string) []string {
	var out []string
	for f := range strings.FieldsFuncSeq(strings.ToLower(text), func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsDigit(r) && r != '\''
	}) {
		f = strings.TrimSuffix(f, "'s")
		for w := range strings.FieldsFuncSeq(f, func(r rune) bool { return r == '\'' }) {
			if !stopwords[w] {
				if len(w) > 3 && w[len(w)-1] == 's' && w[len(w)-2] != 's' {
					w = w[:len(w)-1]
				}
				out = append(out, w)
			}
		}
	}
	return out
}

// QueryTerms returns the distinct Terms of query, at most MaxQueryTerms, in
// the order they first appear.
func QueryTerms(query string) []string {
	seen := map[string]bool{}
	var out []string
	for _, t := range Terms(query) {
		if !seen[t] && len(out) < MaxQueryTerms {
			seen[t] = true
			out = append(out, t)
		}
	}
	return out
}
