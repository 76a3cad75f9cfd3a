package cassette_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.yaml.in/yaml/v4"

	"github.com/lodeworks/lode/x/cassette"
)

// roundTripFunc is a server in the process: recording through it needs
// no socket, so the fuzzer runs fast.
type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// The places of a request and its response a secret is put in.
const (
	inQuery = iota
	inHeader
	inBody
	inJSONBody
	inForm
	inReply
	inJSONReply
	inReplyHeader
	places
)

// recordWith records one exchange with secret put at place (and given
// with WithSecrets when given is true), checks that it replays, and
// returns every string of the written file, and the file.
func recordWith(t *testing.T, secret string, place int, filler string, given bool) ([]string, string) {
	t.Helper()
	put := func(at int, plain string) string {
		if at == place {
			return filler + secret + filler
		}
		return plain
	}
	jsonOf := func(s string) string {
		b, _ := json.Marshal(map[string]string{"note": s, "model": "m"})
		return string(b)
	}
	srv := roundTripFunc(func(r *http.Request) (*http.Response, error) {
		_, _ = io.ReadAll(r.Body)
		h := http.Header{"Content-Type": {"application/json"}}
		if place == inReplyHeader {
			h.Set("X-Note", put(inReplyHeader, ""))
		}
		body := `{"ok":true}`
		switch place {
		case inReply:
			body = put(inReply, "")
		case inJSONReply:
			body = jsonOf(put(inJSONReply, ""))
		}
		return &http.Response{StatusCode: 200, Status: "200 OK", Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
			Header: h, Body: io.NopCloser(strings.NewReader(body)), ContentLength: int64(len(body)), Request: r}, nil
	})
	path := filepath.Join(t.TempDir(), "c.yaml")
	opts := []cassette.Option{cassette.WithMode(cassette.Record), cassette.WithTransport(srv)}
	if given {
		opts = append(opts, cassette.WithSecrets(secret))
	}
	rec, err := cassette.New(path, opts...)
	if err != nil {
		t.Fatal(err)
	}
	q := url.Values{"q": {put(inQuery, "x")}}
	var body, ctype string
	switch place {
	case inBody:
		body, ctype = put(inBody, ""), "text/plain"
	case inJSONBody:
		body, ctype = jsonOf(put(inJSONBody, "")), "application/json"
	case inForm:
		body, ctype = url.Values{"note": {put(inForm, "")}}.Encode(), "application/x-www-form-urlencoded"
	}
	do := func(c *http.Client) error {
		req, err := http.NewRequest("POST", "http://fuzz.test/v1?"+q.Encode(), strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", ctype)
		req.Header.Set("X-Note", put(inHeader, "n"))
		resp, err := c.Do(req)
		if err != nil {
			return err
		}
		_, _ = io.ReadAll(resp.Body)
		return resp.Body.Close()
	}
	if err := do(rec.Client()); err != nil {
		t.Fatal(err)
	}
	if err := rec.Stop(); err != nil {
		t.Fatal(err)
	}
	// The same request replays from the scrubbed file.
	rep, err := cassette.New(path, opts[2:]...)
	if err != nil {
		t.Fatal(err)
	}
	if err := do(rep.Client()); err != nil {
		t.Fatalf("replay of the scrubbed cassette: %v", err)
	}
	_ = rep.Stop()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var doc any
	if err := yaml.Unmarshal(data, &doc); err != nil {
		t.Fatalf("the cassette does not read back: %v\n%s", err, data)
	}
	var out []string
	var walk func(any)
	walk = func(v any) {
		switch x := v.(type) {
		case string:
			out = append(out, x)
		case map[string]any:
			for k, e := range x {
				out = append(out, k)
				walk(e)
			}
		case []any:
			for _, e := range x {
				walk(e)
			}
		}
	}
	walk(doc)
	return out, string(data)
}

// overlapsRedacted reports a secret that Redacted itself, or Redacted
// next to the text around it, could spell.
func overlapsRedacted(s string) bool {
	for k := 1; k <= len(s); k++ {
		if strings.HasSuffix(cassette.Redacted, s[:k]) || strings.HasPrefix(cassette.Redacted, s[len(s)-k:]) {
			return true
		}
	}
	return strings.Contains(s, cassette.Redacted)
}

func validHeader(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; (c < 0x20 && c != '\t') || c == 0x7f {
			return false
		}
	}
	return strings.TrimSpace(s) == s
}

// FuzzScrub puts a secret, given with WithSecrets, in one place of a
// request or its response and checks that no string of the file holds
// it. A secret the same cassette holds without it (a word of the format,
// a header name) or that Redacted could spell is no test of scrubbing.
func FuzzScrub(f *testing.F) {
	f.Add("sk-fuzz-0000", uint8(inQuery), "")
	f.Add("a/b\"c<d>e&f", uint8(inJSONBody), "~")
	f.Add("päss wörd+=%", uint8(inForm), "")
	f.Add("tab\tin-it", uint8(inHeader), "")
	f.Add("\x01\x02binary\xff", uint8(inBody), "z")
	f.Add("echo-me-back", uint8(inReply), "")
	f.Add("emoji-😀-key", uint8(inJSONReply), "")
	f.Add("set-in-reply", uint8(inReplyHeader), "")
	f.Add("q", uint8(inQuery), "")
	f.Fuzz(func(t *testing.T, secret string, at uint8, filler string) {
		place := int(at) % places
		if len(secret) == 0 || len(secret) > 64 || len(filler) > 8 || overlapsRedacted(secret) ||
			strings.Contains(filler, secret) || strings.Contains(secret, filler) && filler != "" {
			return
		}
		if (place == inHeader || place == inReplyHeader) && !validHeader(filler+secret+filler) {
			return
		}
		baseline, _ := recordWith(t, "zz", place, "", false)
		for _, s := range baseline {
			if strings.Contains(s, secret) {
				return
			}
		}
		got, file := recordWith(t, secret, place, filler, true)
		for _, s := range got {
			if strings.Contains(s, secret) {
				t.Fatalf("the cassette holds %q in %q:\n%s", secret, s, file)
			}
		}
	})
}
