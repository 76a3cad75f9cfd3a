// Package secrets finds secrets in text: the forms a known value takes
// once encoded (JSON, URL escaping), and the names of fields that carry
// one. x/cassette scrubs recordings with it and x/guard stops turns that
// would show a secret, so that both see the same secrets.
package secrets

import (
	"encoding/json"
	"fmt"
	"net/url"
	"strings"
	"unicode/utf8"
)

// Forms are the ways v is written in a cassette or a message: as it is, inside a
// JSON string (Go's escaping with and without HTML escapes, "\/" as PHP
// and others write a slash, every non-ASCII rune as \u), and URL-escaped.
func Forms(v string) []string {
	forms := []string{v, url.QueryEscape(v), url.PathEscape(v)}
	for _, html := range []bool{true, false} {
		var b strings.Builder
		e := json.NewEncoder(&b)
		e.SetEscapeHTML(html)
		_ = e.Encode(v)
		q := strings.TrimSuffix(b.String(), "\n")
		inner := q[1 : len(q)-1]
		forms = append(forms, inner, strings.ReplaceAll(inner, "/", `\/`))
	}
	ascii := asciiJSON(v)
	forms = append(forms, ascii, strings.ReplaceAll(ascii, "/", `\/`), strings.ToUpper(ascii))
	return forms
}

// asciiJSON is v inside a JSON string with every rune outside printable
// ASCII written as \u escapes (Python's json.dumps does this).
func asciiJSON(v string) string {
	var b strings.Builder
	for _, r := range v {
		switch {
		case r == '"' || r == '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r >= 0x20 && r < 0x7f:
			b.WriteRune(r)
		case r == utf8.RuneError:
			b.WriteString(`\ufffd`)
		case r > 0xffff:
			r -= 0x10000
			fmt.Fprintf(&b, `\u%04x\u%04x`, 0xd800+(r>>10), 0xdc00+(r&0x3ff))
		default:
			fmt.Fprintf(&b, `\u%04x`, r)
		}
	}
	return b.String()
}

// keyWords are the names, and the last words of names ("x_auth_token",
// "client_secret"), of query parameters, form fields, headers and JSON
// fields whose values are secrets. Names compare case-insensitively with
// "-" taken as "_".
var keyWords = []string{"key", "apikey", "token", "accesstoken", "auth", "secret", "password", "passwd", "pwd", "sig", "signature", "credential", "credentials"}

// CredentialName reports a query parameter, form field, header or JSON
// field name that carries a credential: key, api_key, apikey,
// access_token, token, auth, secret, password, sig, signature, or any
// name ending in _key, _token, _secret ... (any case, "-" as "_").
func CredentialName(name string) bool {
	n := strings.ReplaceAll(strings.ToLower(name), "-", "_")
	for _, w := range keyWords {
		if n == w || strings.HasSuffix(n, "_"+w) {
			return true
		}
	}
	return false
}
