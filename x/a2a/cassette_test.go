package a2a_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	lodea2a "github.com/lodeworks/lode/x/a2a"
	"github.com/lodeworks/lode/x/cassette"
)

// An A2A session records and replays like any HTTP session, through the
// HTTP client option: the card, the streamed task, with the token
// scrubbed; the replay needs no server.
func TestCassetteRecordsAndReplays(t *testing.T) {
	for _, streaming := range []bool{true, false} {
		name := map[bool]string{true: "streaming", false: "blocking"}[streaming]
		t.Run(name, func(t *testing.T) {
			const token = "tok-9f8e7d6c5b4a"
			path := filepath.Join(t.TempDir(), "a2a.yaml")
			g := &goAgent{exec: answer("recorded ", "answer", nil)}
			url, _ := goServer(t, g, streaming, nil)

			rec, err := cassette.New(path, cassette.WithMode(cassette.Record))
			if err != nil {
				t.Fatal(err)
			}
			reg, _ := mount(t, url, lodea2a.WithReadOnly(), lodea2a.WithBearerToken(token), lodea2a.WithHTTPClient(rec.Client()))
			st, err := run(t, reg, nil, "echo_agent__summarise", `{"task":"x"}`, nil)
			if err != nil {
				t.Fatal(err)
			}
			if r := resultOf(t, st); r.IsError || r.Content != "recorded answer" {
				t.Fatalf("recorded %+v", r)
			}
			if err := rec.Stop(); err != nil {
				t.Fatal(err)
			}
			data, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if strings.Contains(string(data), token) || !strings.Contains(string(data), cassette.Redacted) {
				t.Fatalf("the token is in the cassette, or nothing was redacted:\n%s", data)
			}

			// Replay, with the agent stopped answering.
			g.exec = nil
			play, err := cassette.New(path)
			if err != nil {
				t.Fatal(err)
			}
			reg, _ = mount(t, url, lodea2a.WithReadOnly(), lodea2a.WithBearerToken(token), lodea2a.WithHTTPClient(play.Client()))
			st, err = run(t, reg, nil, "echo_agent__summarise", `{"task":"x"}`, nil)
			if err != nil {
				t.Fatal(err)
			}
			if r := resultOf(t, st); r.IsError || r.Content != "recorded answer" {
				t.Fatalf("replayed %+v", r)
			}
			if g.runs.Load() != 1 {
				t.Errorf("the agent ran %d tasks; the replay should have run none", g.runs.Load())
			}
		})
	}
}
