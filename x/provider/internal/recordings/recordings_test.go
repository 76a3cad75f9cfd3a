package recordings

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

func TestParseDownload(t *testing.T) {
	exit := errors.New("exit status 1")
	cases := []struct {
		name            string
		out, stderr     string
		runErr          error
		wantDir, wantEr string
	}{
		{"found", `{"Path":"m","Version":"v1.0.0","Dir":"/cache/m@v1.0.0"}`, "", nil, "/cache/m@v1.0.0", ""},
		{"reason in JSON", `{"Path":"m","Error":"m@v1.0.0: module lookup disabled by GOPROXY=off"}`, "", exit, "",
			"m@v1.0.0: module lookup disabled by GOPROXY=off"},
		{"no JSON", "", "go: not found\n", exit, "", "go: not found: exit status 1"},
		{"no JSON, no words", "", "", exit, "", "exit status 1"},
		{"broken JSON", `{"Dir":`, "", nil, "", `{"Dir":: unexpected end of JSON input`},
		{"no folder", `{"Path":"m"}`, "", nil, "", `no folder in {"Path":"m"}`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir, err := parseDownload([]byte(c.out), c.stderr, c.runErr)
			got := ""
			if err != nil {
				got = err.Error()
			}
			if dir != c.wantDir || got != c.wantEr {
				t.Errorf("parseDownload = %q, %q; want %q, %q", dir, got, c.wantDir, c.wantEr)
			}
		})
	}
}

func TestDirSkipsWhenOff(t *testing.T) {
	t.Setenv("LODE_TEST_REPLAY", "off")
	var reached bool
	ok := t.Run("replay", func(t *testing.T) {
		Dir(t, "example.com/never", "v0.0.0", "nothing")
		reached = true
	})
	if !ok || reached {
		t.Errorf("Dir did not skip: passed %v, went on %v", ok, reached)
	}
}

func TestLoad(t *testing.T) {
	path := filepath.Join(t.TempDir(), "c.yaml")
	const text = `---
version: 2
interactions:
- id: 0
  request:
    body: '{"model":"gpt-5"}'
    url: https://api.example/v1/chat/completions
    method: POST
  response:
    body: |
      {"ok": true}
    headers:
      Content-Type:
      - application/json
    code: 200
`
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	c := Load(t, path)
	if len(c.Interactions) != 1 {
		t.Fatalf("%d interactions", len(c.Interactions))
	}
	in := c.Interactions[0]
	if in.Request.Body != `{"model":"gpt-5"}` || in.Request.URL != "https://api.example/v1/chat/completions" || in.Request.Method != "POST" ||
		in.Response.Body != "{\"ok\": true}\n" || in.Response.Code != 200 || in.Response.Headers["Content-Type"][0] != "application/json" {
		t.Errorf("loaded %+v", in)
	}
}
