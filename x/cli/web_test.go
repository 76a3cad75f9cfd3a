package cli

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// lineWriter passes each write to lines, for a test waiting for one.
type lineWriter struct{ lines chan string }

func (w lineWriter) Write(p []byte) (int, error) {
	w.lines <- string(p)
	return len(p), nil
}

func TestWebServesThePage(t *testing.T) {
	dir := t.TempDir()
	lines := make(chan string, 10)
	var out strings.Builder
	e := env{stdin: strings.NewReader(""), stdout: &out, stderr: lineWriter{lines}, getenv: func(string) string { return "" }, interrupts: make(chan os.Signal)}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan int, 1)
	threads := filepath.Join(dir, "threads")
	go func() {
		done <- run(ctx, e, []string{"web", "--addr", "127.0.0.1:0", "--store", threads, "--base-url", "http://127.0.0.1:1/v1", "--model", "m"})
	}()
	var url string
	select {
	case l := <-lines:
		m := regexp.MustCompile(`chat at (http://\S+/)`).FindStringSubmatch(l)
		if m == nil {
			cancel()
			t.Fatalf("lode web said %q", l)
		}
		url = m[1]
	case code := <-done:
		cancel()
		t.Fatalf("lode web exited with %d", code)
	}
	resp, err := http.Get(url)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(string(b), "<title>lode chat</title>") {
		t.Errorf("GET %s: %d %.80q", url, resp.StatusCode, b)
	}
	cancel()
	if code := <-done; code != 0 {
		t.Errorf("lode web ended with %d after its context", code)
	}
	if _, err := os.Stat(threads); err != nil {
		t.Errorf("threads folder: %v", err)
	}
}

func TestWebRefusesARemoteAddress(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"web", "--addr", "0.0.0.0:8080"}, "lode: --addr 0.0.0.0:8080 is not a loopback address"},
		{[]string{"web", "--addr", "nope"}, "lode: --addr \"nope\": want HOST:PORT, e.g. 127.0.0.1:8080\n"},
		{[]string{"web", "extra"}, "lode: lode web takes no arguments; got \"extra\"\n"},
	} {
		r := lode(t, t.TempDir(), nil, "", c.args...)
		if r.code != exitUsage || !strings.HasPrefix(r.stderr, c.want) {
			t.Errorf("%v: %d %q, want exit %d and %q", c.args, r.code, r.stderr, exitUsage, c.want)
		}
	}
}

// lode web -h has the help of every command, with one store flag: the old
// --threads works but is not offered.
func TestWebHelp(t *testing.T) {
	const head = "\n\nflags (before or after the other arguments; -- ends them):\n"
	for _, cmd := range []string{"run", "chat", "resume", "tools", "serve", "web", "threads"} {
		r := lode(t, t.TempDir(), nil, "", cmd, "-h")
		if r.code != 0 || !strings.HasPrefix(r.stderr, "usage: lode "+cmd+" ") || !strings.Contains(r.stderr, head) {
			t.Errorf("lode %s -h: exit %d, stderr:\n%.300s", cmd, r.code, r.stderr)
		}
	}
	r := lode(t, t.TempDir(), nil, "", "web", "-h")
	if !strings.Contains(r.stderr, "\n  -store string\n") || strings.Contains(r.stderr, "\n  -threads") {
		t.Errorf("lode web -h should offer --store and not --threads:\n%s", r.stderr)
	}
	r = lode(t, t.TempDir(), nil, "", "web", "--threads", "a", "--store", "b")
	if want := "lode: --threads a and --store b name two stores: give only --store (--threads is its old name)\n"; r.code != exitUsage || r.stderr != want {
		t.Errorf("both flags: exit %d, stderr %q, want %q", r.code, r.stderr, want)
	}
}

// TestWebNamesTheModelWithHistory: a history: policy wraps the model, and
// the page still learns its name from /api/info.
func TestWebNamesTheModelWithHistory(t *testing.T) {
	dir := writeConfig(t, "history:\n  budget: 12000\n  summarise: true\n")
	url, _, stop := startWeb(t, dir, &fakeOpenAI{})
	defer stop()
	resp, err := http.Get(url + "api/info")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var info struct {
		Model string `json:"model"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&info); err != nil || info.Model != "m" {
		t.Fatalf("GET /api/info: model %q (%v), want m", info.Model, err)
	}
}
