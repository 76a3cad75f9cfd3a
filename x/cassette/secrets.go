package cassette

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"mime"
	"net/http"
	"net/url"
	"sort"
	"strings"
	"sync"

	vcr "gopkg.in/dnaeon/go-vcr.v4/pkg/cassette"

	"github.com/lodeworks/lode/internal/secrets"
)

// MinLearnedSecret is the shortest value a Recorder learns as a secret
// from the traffic itself (an auth header, a key-like query parameter or
// form field, a URL's password). A shorter one is still redacted where it
// stood, but not looked for elsewhere: replacing every "1234" of a file
// would wreck it. Secrets given with WithSecrets or AddSecrets are looked
// for whatever their length.
const MinLearnedSecret = 8

// WithSecrets adds values that never reach the file, wherever they
// appear: URLs, forms, headers, request and response bodies (also as JSON
// or URL escaping writes them). An empty value is an ErrOption.
func WithSecrets(values ...string) Option {
	return func(c *config) {
		for _, v := range values {
			if v == "" {
				c.problems = append(c.problems, fmt.Errorf("%w: WithSecrets: an empty secret", ErrOption))
				continue
			}
			c.secrets = append(c.secrets, v)
		}
	}
}

// AddSecrets adds values that never reach the file, as WithSecrets does,
// for secrets known only after the Recorder was made; it may be called
// at any time before Stop. Empty values are skipped.
func (r *Recorder) AddSecrets(values ...string) {
	for _, v := range values {
		if v != "" {
			r.secrets.add(v, true)
		}
	}
}

// secretSet is every secret a Recorder knows, with the forms each takes
// in a cassette, longest first so that a secret inside another is not
// replaced before the longer one.
type secretSet struct {
	mu   sync.Mutex
	vals map[string]bool
	rep  *strings.Replacer
}

// add keeps v; a learned value shorter than MinLearnedSecret is dropped.
func (s *secretSet) add(v string, explicit bool) {
	if v == "" || v == Redacted || (!explicit && len(v) < MinLearnedSecret) {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.vals == nil {
		s.vals = map[string]bool{}
	}
	if !s.vals[v] {
		s.vals[v] = true
		s.rep = nil
	}
}

// replace redacts every known secret in text.
func (s *secretSet) replace(text string) string {
	if text == "" {
		return text
	}
	s.mu.Lock()
	rep := s.rep
	if rep == nil && len(s.vals) > 0 {
		rep = s.build()
		s.rep = rep
	}
	s.mu.Unlock()
	if rep == nil {
		return text
	}
	return replaceInStrings(rep, rep.Replace(text))
}

// replaceInStrings redacts secrets inside the JSON string literals of
// text, however each is escaped (a mix of "\/", "\u003c" and raw
// runes that no list of forms foresees), re-encoding only a literal that
// held one. Text that is not JSON is scanned too: a quoted piece that
// does not decode is left alone.
func replaceInStrings(rep *strings.Replacer, text string) string {
	if !strings.Contains(text, `\`) {
		// Without escapes every literal is its own raw form, which the
		// replacer has already seen.
		return text
	}
	var out strings.Builder
	last := 0
	for i := 0; i < len(text); i++ {
		if text[i] != '"' {
			continue
		}
		end := i + 1
		for end < len(text) && text[end] != '"' {
			if text[end] == '\\' {
				end++
			}
			end++
		}
		if end >= len(text) {
			break
		}
		lit := text[i : end+1]
		var dec string
		if strings.Contains(lit, `\`) && json.Unmarshal([]byte(lit), &dec) == nil {
			if red := rep.Replace(dec); red != dec {
				out.WriteString(text[last:i])
				var b strings.Builder
				e := json.NewEncoder(&b)
				e.SetEscapeHTML(false)
				_ = e.Encode(red)
				out.WriteString(strings.TrimSuffix(b.String(), "\n"))
				last = end + 1
			}
		}
		i = end
	}
	if last == 0 {
		return text
	}
	out.WriteString(text[last:])
	return out.String()
}

// build makes the replacer of every form of every secret; s.mu is held.
func (s *secretSet) build() *strings.Replacer {
	forms := map[string]bool{}
	for v := range s.vals {
		for _, f := range secrets.Forms(v) {
			if f != "" && f != Redacted {
				forms[f] = true
			}
		}
	}
	list := make([]string, 0, len(forms))
	for f := range forms {
		list = append(list, f)
	}
	sort.Slice(list, func(a, b int) bool {
		if len(list[a]) != len(list[b]) {
			return len(list[a]) > len(list[b])
		}
		return list[a] < list[b]
	})
	pairs := make([]string, 0, 2*len(list))
	for _, f := range list {
		pairs = append(pairs, f, Redacted)
	}
	return strings.NewReplacer(pairs...)
}

// CredentialName reports a query parameter, form field, header or JSON
// field name that carries a credential: key, api_key, apikey,
// access_token, token, auth, secret, password, sig, signature, or any
// name ending in _key, _token, _secret ... (any case, "-" as "_").
func CredentialName(name string) bool { return secrets.CredentialName(name) }

// secretHeader reports a header whose value is a secret.
func (r *Recorder) secretHeader(name string) bool {
	for _, n := range DefaultScrubHeaders {
		if strings.EqualFold(n, name) {
			return true
		}
	}
	for _, n := range r.cfg.scrubHeaders {
		if strings.EqualFold(n, name) {
			return true
		}
	}
	return secrets.CredentialName(name)
}

// learnHeader learns the secrets of one header value: an auth scheme's
// credentials, and a Basic one's password.
func (r *Recorder) learnHeader(name, value string) {
	if strings.EqualFold(name, "Cookie") || strings.EqualFold(name, "Set-Cookie") {
		// Cookies are redacted where they stand; their values are
		// often short and common.
		return
	}
	r.secrets.add(value, false)
	scheme, cred, ok := strings.Cut(strings.TrimSpace(value), " ")
	if !ok {
		return
	}
	cred = strings.TrimSpace(cred)
	r.secrets.add(cred, false)
	if strings.EqualFold(scheme, "Basic") {
		if dec, err := base64.StdEncoding.DecodeString(cred); err == nil {
			r.secrets.add(string(dec), false)
			if _, pass, ok := strings.Cut(string(dec), ":"); ok {
				r.secrets.add(pass, false)
			}
		}
	}
}

// learn takes the secrets a request carries: its auth headers, its
// URL's password, its key-like query parameters and form fields.
func (r *Recorder) learn(u string, h http.Header, form url.Values) {
	for k, vs := range h {
		if r.secretHeader(k) {
			for _, v := range vs {
				r.learnHeader(k, v)
			}
		}
	}
	if pu, err := url.Parse(u); err == nil {
		if pass, ok := pu.User.Password(); ok {
			r.secrets.add(pass, false)
		}
		for k, vs := range pu.Query() {
			if secrets.CredentialName(k) {
				for _, v := range vs {
					r.secrets.add(v, false)
				}
			}
		}
	}
	for k, vs := range form {
		if secrets.CredentialName(k) {
			for _, v := range vs {
				r.secrets.add(v, false)
			}
		}
	}
}

// learnJSON takes the values of key-like fields of a JSON body (an OAuth
// token response's access_token, a request's client_secret).
func (r *Recorder) learnJSON(body string) {
	trimmed := strings.TrimSpace(body)
	if trimmed == "" || (trimmed[0] != '{' && trimmed[0] != '[') {
		return
	}
	v, err := decodeJSON([]byte(trimmed))
	if err != nil {
		return
	}
	var walk func(any)
	walk = func(v any) {
		switch x := v.(type) {
		case map[string]any:
			for k, e := range x {
				if s, ok := e.(string); ok && secrets.CredentialName(k) {
					r.secrets.add(s, false)
				}
				walk(e)
			}
		case []any:
			for _, e := range x {
				walk(e)
			}
		}
	}
	walk(v)
}

// scrubURL redacts a URL's password and its key-like query parameters
// where they stand, whatever their length, keeping the parameters'
// order, then every known secret in what is left.
func (r *Recorder) scrubURL(raw string) string {
	if pu, err := url.Parse(raw); err == nil {
		changed := false
		if _, ok := pu.User.Password(); ok {
			pu.User = url.UserPassword(pu.User.Username(), Redacted)
			changed = true
		}
		if pu.RawQuery != "" {
			if q, ok := redactQuery(pu.RawQuery); ok {
				pu.RawQuery = q
				changed = true
			}
		}
		if changed {
			raw = pu.String()
		}
	}
	return r.secrets.replace(raw)
}

// redactQuery redacts the key-like parameters of a raw query.
func redactQuery(raw string) (string, bool) {
	parts := strings.Split(raw, "&")
	changed := false
	for i, p := range parts {
		name, val, hasVal := strings.Cut(p, "=")
		n, err := url.QueryUnescape(name)
		if err != nil {
			n = name
		}
		if hasVal && val != Redacted && secrets.CredentialName(n) {
			parts[i] = name + "=" + Redacted
			changed = true
		}
	}
	return strings.Join(parts, "&"), changed
}

// scrubForm redacts key-like fields where they stand and known secrets
// everywhere, names included.
func (r *Recorder) scrubForm(form url.Values) url.Values {
	if len(form) == 0 {
		return form
	}
	out := make(url.Values, len(form))
	for k, vs := range form {
		nv := make([]string, len(vs))
		for j, v := range vs {
			if secrets.CredentialName(k) {
				nv[j] = Redacted
			} else {
				nv[j] = r.secrets.replace(v)
			}
		}
		out[r.secrets.replace(k)] = nv
	}
	return out
}

// scrubHeaderValues redacts secret headers where they stand and known
// secrets in every other value.
func (r *Recorder) scrubHeaderValues(h http.Header) http.Header {
	if len(h) == 0 {
		return h
	}
	out := make(http.Header, len(h))
	for k, vs := range h {
		nv := make([]string, len(vs))
		for j, v := range vs {
			if r.secretHeader(k) {
				nv[j] = Redacted
			} else {
				nv[j] = r.secrets.replace(v)
			}
		}
		out[k] = nv
	}
	return out
}

// scrubValues redacts every known secret everywhere in an interaction.
// It runs as the cassette is written, so a secret first seen in a later
// interaction leaves no earlier one either.
func (r *Recorder) scrubValues(i *vcr.Interaction) {
	q, p := &i.Request, &i.Response
	q.URL = r.scrubURL(q.URL)
	q.RequestURI = r.scrubURL(q.RequestURI)
	q.Host = r.secrets.replace(q.Host)
	q.Form = r.scrubForm(q.Form)
	q.Headers = r.scrubHeaderValues(q.Headers)
	q.Trailer = r.scrubHeaderValues(q.Trailer)
	if b := r.scrubRequestBody(q.Headers.Get("Content-Type"), q.Body); b != q.Body {
		q.Body = b
		if q.ContentLength > 0 {
			q.ContentLength = int64(len(b))
		}
	}
	p.Headers = r.scrubHeaderValues(p.Headers)
	p.Trailer = r.scrubHeaderValues(p.Trailer)
	p.Status = r.secrets.replace(p.Status)
	if b := r.secrets.replaceSplit(r.secrets.replace(p.Body)); b != p.Body {
		p.Body = b
		if p.ContentLength >= 0 {
			p.ContentLength = int64(len(b))
		}
	}
}

// scrubRequestBody redacts the key-like fields of a form body where they
// stand and every known secret.
func (r *Recorder) scrubRequestBody(contentType, body string) string {
	if isForm(contentType) {
		if b, ok := redactQuery(body); ok {
			body = b
		}
	}
	return r.secrets.replace(body)
}

func isForm(contentType string) bool {
	mt, _, _ := mime.ParseMediaType(contentType)
	return mt == "application/x-www-form-urlencoded"
}

// formOf is the form go-vcr records for a request: its query, and its
// body when it is a form.
func formOf(u, contentType, body string) url.Values {
	form := url.Values{}
	if pu, err := url.Parse(u); err == nil {
		for k, vs := range pu.Query() {
			form[k] = append(form[k], vs...)
		}
	}
	if isForm(contentType) {
		if q, err := url.ParseQuery(body); err == nil {
			for k, vs := range q {
				form[k] = append(form[k], vs...)
			}
		}
	}
	return form
}
