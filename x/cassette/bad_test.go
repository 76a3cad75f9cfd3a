package cassette_test

import (
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lodeworks/lode/x/cassette"
)

func TestNewBadOptions(t *testing.T) {
	tests := []struct {
		name string
		path string
		opts []cassette.Option
		want string
	}{
		{"no path", "", nil, "cassette: invalid option: no cassette path"},
		{"mode", "x.yaml", []cassette.Option{cassette.WithMode(7)}, "cassette: invalid option: WithMode(7): use Replay or Record"},
		{"blank header", "x.yaml", []cassette.Option{cassette.WithScrubHeaders(" ")}, "cassette: invalid option: WithScrubHeaders: a blank header name"},
		{"empty field segment", "x.yaml", []cassette.Option{cassette.WithScrubFields("a..b")}, `cassette: invalid option: WithScrubFields("a..b"): a path is object keys joined by dots`},
		{"empty field", "x.yaml", []cassette.Option{cassette.WithScrubFields("")}, `cassette: invalid option: WithScrubFields(""): a path is object keys joined by dots`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := cassette.New(tt.path, tt.opts...)
			if !errors.Is(err, cassette.ErrOption) || err.Error() != tt.want {
				t.Errorf("err = %v, want %s", err, tt.want)
			}
		})
	}
}

const goodInteraction = `
  - id: 0
    request:
      method: POST
      url: http://model.test/v1/chat/completions
      body: '{"a":1}'
    response:
      code: 200
      body: ok
`

func TestReplayCorrupted(t *testing.T) {
	tests := []struct {
		name    string
		content string
		want    string // after "cassette: corrupted cassette: PATH: "
	}{
		{"not yaml", "version: 2\ninteractions: [\n", "yaml: "},
		{"a scalar", "just words\n", "yaml: "},
		{"empty file", "", `not a go-vcr cassette of format version 2 (is "version: 2" missing?)`},
		{"old version", "version: 1\ninteractions: []\n", `not a go-vcr cassette of format version 2 (is "version: 2" missing?)`},
		{"no method", "version: 2\ninteractions:\n  - id: 0\n    request:\n      url: http://x.test/\n    response:\n      code: 200\n", "interaction 0 has no request method"},
		{"relative URL", "version: 2\ninteractions:\n  - id: 0\n    request:\n      method: GET\n      url: /v1\n    response:\n      code: 200\n", `interaction 0 has no absolute request URL ("/v1")`},
		{"no status", "version: 2\ninteractions:\n  - id: 0\n    request:\n      method: GET\n      url: http://x.test/\n    response:\n      body: hi\n", "interaction 0 has response code 0"},
		{"truncated before the response", "version: 2\ninteractions:" + goodInteraction[:60], "interaction 0 has response code 0"},
		{"no version", "interactions: []\n", `not a go-vcr cassette of format version 2 (is "version: 2" missing?)`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "c.yaml")
			if err := os.WriteFile(path, []byte(tt.content), 0o644); err != nil {
				t.Fatal(err)
			}
			_, err := cassette.New(path)
			prefix := "cassette: corrupted cassette: " + path + ": " + tt.want
			if !errors.Is(err, cassette.ErrCorrupt) || !strings.HasPrefix(err.Error(), prefix) ||
				!strings.HasSuffix(err.Error(), ": record it again with LODE_RECORD=1") {
				t.Errorf("err = %v\nwant it to start with %s", err, prefix)
			}
		})
	}
}

func TestReplayMissingFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "none.yaml")
	_, err := cassette.New(path)
	want := "cassette: no such cassette: " + path + " does not exist: record it with LODE_RECORD=1 (or lode run --record)"
	if !errors.Is(err, cassette.ErrNotFound) || err.Error() != want {
		t.Errorf("err = %v, want %s", err, want)
	}
}

func writeCassette(t *testing.T, interactions string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "c.yaml")
	if err := os.WriteFile(path, []byte("version: 2\ninteractions:"+interactions), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestReplayMatching(t *testing.T) {
	const two = `
  - id: 0
    request:
      method: POST
      url: http://model.test/v1/chat/completions?b=2&a=1
      body: '{"model":"m","messages":[{"role":"user","content":"hi"}],"n":1}'
    response:
      code: 200
      body: first
  - id: 1
    request:
      method: POST
      url: http://model.test/v1/embeddings
      body: 'plain text'
    response:
      code: 200
      body: second
`
	const url = "http://model.test/v1/chat/completions?a=1&b=2"
	tests := []struct {
		name, method, url, body string
		want                    string // the body served, or the error's tail after "holds no interaction for ..."
	}{
		{"key order and whitespace", "POST", url, "{\n \"n\": 1, \"messages\": [{\"content\": \"hi\", \"role\": \"user\"}], \"model\": \"m\"}", "first"},
		{"JSON value differs", "POST", url, `{"model":"m","messages":[{"role":"user","content":"ho"}],"n":1}`,
			`the closest, #0 POST http://model.test/v1/chat/completions?b=2&a=1, differs at $.messages[0].content: recorded "hi", request "ho"`},
		{"JSON field missing", "POST", url, `{"model":"m","messages":[{"role":"user","content":"hi"}]}`,
			`the closest, #0 POST http://model.test/v1/chat/completions?b=2&a=1, differs at $.n: recorded 1, request has no such field`},
		{"JSON field added", "POST", url, `{"model":"m","messages":[{"role":"user","content":"hi"}],"n":1,"seed":7}`,
			`the closest, #0 POST http://model.test/v1/chat/completions?b=2&a=1, differs at $.seed: recorded no such field, request 7`},
		{"array longer", "POST", url, `{"model":"m","messages":[{"role":"user","content":"hi"},{"role":"user","content":"more"}],"n":1}`,
			`the closest, #0 POST http://model.test/v1/chat/completions?b=2&a=1, differs at $.messages: recorded 1 elements, request 2`},
		{"method differs", "PUT", url, `{"model":"m","messages":[{"role":"user","content":"hi"}],"n":1}`,
			`the closest, #0 POST http://model.test/v1/chat/completions?b=2&a=1, differs at the method: recorded POST, request PUT`},
		{"URL differs", "POST", "http://model.test/v2/chat/completions?a=1&b=2", `{"model":"m","messages":[{"role":"user","content":"hi"}],"n":1}`,
			`the closest, #0 POST http://model.test/v1/chat/completions?b=2&a=1, differs at the URL: recorded http://model.test/v1/chat/completions?b=2&a=1, request http://model.test/v2/chat/completions?a=1&b=2`},
		{"bytes match", "POST", "http://model.test/v1/embeddings", "plain text", "second"},
		{"bytes differ", "POST", "http://model.test/v1/embeddings", "plain test",
			`the closest, #1 POST http://model.test/v1/embeddings, differs at body byte 8: recorded "xt", request "st"`},
		{"JSON for bytes", "POST", "http://model.test/v1/embeddings", `{"a":1}`,
			`the closest, #1 POST http://model.test/v1/embeddings, differs at the body: recorded not JSON, request JSON`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec, err := cassette.New(writeCassette(t, two))
			if err != nil {
				t.Fatal(err)
			}
			defer rec.Stop()
			req, _ := http.NewRequest(tt.method, tt.url, strings.NewReader(tt.body))
			resp, err := rec.Client().Do(req)
			if err == nil {
				b := readAll(t, resp)
				if b != tt.want {
					t.Errorf("served %q, want %q", b, tt.want)
				}
				return
			}
			var miss *cassette.MissError
			if !errors.As(err, &miss) {
				t.Fatalf("err = %v, want a *MissError", err)
			}
			want := "holds no interaction for " + tt.method + " " + tt.url + ": " + tt.want + "; if the change is meant, record the cassette again with LODE_RECORD=1"
			if !strings.HasSuffix(miss.Error(), want) {
				t.Errorf("err = %v\nwant it to end with %s", miss, want)
			}
		})
	}
}

func TestReplayEachInteractionOnce(t *testing.T) {
	rec, err := cassette.New(writeCassette(t, goodInteraction))
	if err != nil {
		t.Fatal(err)
	}
	defer rec.Stop()
	do := func() error {
		req, _ := http.NewRequest("POST", "http://model.test/v1/chat/completions", strings.NewReader(`{"a":1}`))
		resp, err := rec.Client().Do(req)
		if err == nil {
			readAll(t, resp)
		}
		return err
	}
	if err := do(); err != nil {
		t.Fatal(err)
	}
	err = do()
	var miss *cassette.MissError
	if !errors.As(err, &miss) || !miss.Replayed || miss.Closest != 0 ||
		!strings.Contains(err.Error(), "interaction #0 matches but has answered already") {
		t.Errorf("second request: err = %v, want interaction #0 reported as used up", err)
	}
}

func TestReplayEmptyCassette(t *testing.T) {
	rec, err := cassette.New(writeCassette(t, " []\n"))
	if err != nil {
		t.Fatal(err)
	}
	defer rec.Stop()
	_, err = rec.Client().Get("http://model.test/v1/models")
	var miss *cassette.MissError
	if !errors.As(err, &miss) || miss.Closest != -1 || !strings.Contains(err.Error(), "GET http://model.test/v1/models: it holds no interactions at all") {
		t.Errorf("err = %v", err)
	}
}

func TestRequestAfterStop(t *testing.T) {
	rec, err := cassette.New(writeCassette(t, goodInteraction))
	if err != nil {
		t.Fatal(err)
	}
	if err := rec.Stop(); err != nil {
		t.Fatal(err)
	}
	if err := rec.Stop(); err != nil {
		t.Errorf("second Stop: %v", err)
	}
	_, err = rec.Client().Get("http://model.test/")
	if !errors.Is(err, cassette.ErrStopped) {
		t.Errorf("err = %v, want ErrStopped", err)
	}
}

func readAll(t *testing.T, resp *http.Response) string {
	t.Helper()
	defer resp.Body.Close()
	var b strings.Builder
	buf := make([]byte, 1<<16)
	for {
		n, err := resp.Body.Read(buf)
		b.Write(buf[:n])
		if err != nil {
			break
		}
	}
	return b.String()
}

func TestMissNamesTheRecordedID(t *testing.T) {
	rec, err := cassette.New(writeCassette(t, strings.Replace(goodInteraction, "id: 0", "id: 5", 1)))
	if err != nil {
		t.Fatal(err)
	}
	defer rec.Stop()
	req, _ := http.NewRequest("POST", "http://model.test/v1/chat/completions", strings.NewReader(`{"a":2}`))
	_, err = rec.Client().Do(req)
	var miss *cassette.MissError
	if !errors.As(err, &miss) || miss.Closest != 5 || !strings.Contains(err.Error(), "the closest, #5 POST") {
		t.Errorf("err = %v, want interaction #5 named", err)
	}
}
