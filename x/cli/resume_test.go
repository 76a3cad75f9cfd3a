package cli

import (
	"bytes"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// shellWords splits a line as a POSIX shell splits words without
// expansions: blanks separate, single quotes keep everything, a backslash
// outside quotes keeps the next character.
func shellWords(t *testing.T, line string) []string {
	t.Helper()
	var words []string
	var cur strings.Builder
	in, quoted := false, false
	for i := 0; i < len(line); i++ {
		c := line[i]
		switch {
		case quoted && c == '\'':
			quoted = false
		case quoted:
			cur.WriteByte(c)
		case c == '\'':
			quoted, in = true, true
		case c == '\\' && i+1 < len(line):
			i++
			cur.WriteByte(line[i])
			in = true
		case c == ' ' || c == '\t':
			if in {
				words = append(words, cur.String())
				cur.Reset()
				in = false
			}
		case strings.IndexByte("|&;<>()$`\"*?[#~", c) >= 0:
			t.Fatalf("the line %q has %q unquoted: a shell would not pass it as written", line, c)
		default:
			cur.WriteByte(c)
			in = true
		}
	}
	if quoted {
		t.Fatalf("the line %q leaves a quote open", line)
	}
	if in {
		words = append(words, cur.String())
	}
	return words
}

// resumeLines are the lode resume commands a pause printed.
func resumeLines(t *testing.T, stderr string) [][]string {
	t.Helper()
	var out [][]string
	for _, l := range strings.Split(stderr, "\n") {
		if l = strings.TrimSpace(l); strings.HasPrefix(l, "lode resume ") {
			out = append(out, shellWords(t, l))
		}
	}
	return out
}

// storeBytes is every file of a store folder, by path.
func storeBytes(t *testing.T, dir string) map[string][]byte {
	t.Helper()
	files := map[string][]byte{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		files[p] = b
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

func sameFiles(a, b map[string][]byte) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if !bytes.Equal(v, b[k]) {
			return false
		}
	}
	return true
}

// A pause exits 3 and prints, for each call, commands that a shell reads
// as written; pasted, they decide the call. Without decisions resume only
// lists (no model, no write), and on a finished thread it says so.
func TestPausedRunRoundTrip(t *testing.T) {
	dir := writeConfig(t, "model:\n  name: m\ntools:\n  calculator: {}\napprove: [calculator]\n")
	store := filepath.Join(t.TempDir(), "my ledger") // a blank needs quoting
	fake := &fakeOpenAI{replies: []func(http.ResponseWriter, *http.Request){
		callReply("call_1", "calculator__eval", `{"expression":"2^10"}`),
		textReply("1024."),
	}}
	srv := httptest.NewServer(fake)
	defer srv.Close()
	vars := map[string]string{"OPENAI_BASE_URL": srv.URL + "/v1"}
	requests := func() int {
		fake.mu.Lock()
		defer fake.mu.Unlock()
		return len(fake.requests)
	}

	r := lode(t, dir, vars, "", "run", "--store", store, "what is 2^10?")
	if r.code != exitPaused || !strings.HasSuffix(r.stderr, "waits for the decisions above\n") {
		t.Fatalf("run: exit %d, stderr:\n%s", r.code, r.stderr)
	}
	lines := resumeLines(t, r.stderr)
	if len(lines) != 3 {
		t.Fatalf("want approve, deny and edit lines, got %q in:\n%s", lines, r.stderr)
	}
	thread := lines[0][4]
	want := [][]string{
		{"lode", "resume", "--store", store, thread, "approve:call_1"},
		{"lode", "resume", "--store", store, thread, "deny:call_1=REASON"},
		{"lode", "resume", "--store", store, thread, `edit:call_1={"expression":"2^10"}`},
	}
	for i := range want {
		if strings.Join(lines[i], "\x00") != strings.Join(want[i], "\x00") {
			t.Errorf("line %d reads as %q, want %q", i, lines[i], want[i])
		}
	}

	// Listing changes nothing and asks no model.
	before := storeBytes(t, store)
	r = lode(t, dir, vars, "", "resume", "--store", store, thread)
	if r.code != exitPaused || !strings.Contains(r.stderr, `call_1  calculator__eval {"expression":"2^10"}  (approve: in lode.yaml names calculator)`) ||
		len(resumeLines(t, r.stderr)) != 3 {
		t.Fatalf("resume without decisions: exit %d, stderr:\n%s", r.code, r.stderr)
	}
	if !sameFiles(before, storeBytes(t, store)) || requests() != 1 {
		t.Fatalf("resume without decisions wrote to the store or asked the model (%d requests)", requests())
	}

	// The pasted approve line runs the call once and finishes.
	r = lode(t, dir, vars, "", lines[0][1:]...)
	if r.code != 0 || r.stdout != "1024.\n" || strings.Count(r.stderr, "← calculator__eval: 1024") != 1 {
		t.Fatalf("pasted approve: exit %d, stdout %q, stderr:\n%s", r.code, r.stdout, r.stderr)
	}

	// Nothing waits now: resume says so and asks no model.
	before = storeBytes(t, store)
	r = lode(t, dir, vars, "", "resume", "--store", store, thread)
	if r.code != 0 || r.stderr != "thread "+thread+" has no tool calls waiting for approval; nothing to do\n" || requests() != 2 {
		t.Fatalf("resume of a finished thread: exit %d (%d requests), stderr:\n%s", r.code, requests(), r.stderr)
	}
	if !sameFiles(before, storeBytes(t, store)) {
		t.Error("resume of a finished thread wrote to the store")
	}
}

func TestShellQuote(t *testing.T) {
	for in, want := range map[string]string{
		"approve:call_1":         "approve:call_1",
		"/tmp/a b":               "'/tmp/a b'",
		`edit:c={"a":1}`:         `'edit:c={"a":1}'`,
		"it's":                   `'it'\''s'`,
		"":                       "''",
		"deny:call_1=not | this": "'deny:call_1=not | this'",
	} {
		if got := shellQuote(in); got != want {
			t.Errorf("shellQuote(%q) = %s, want %s", in, got, want)
		}
		if in != "" {
			if w := shellWords(t, shellQuote(in)); len(w) != 1 || w[0] != in {
				t.Errorf("%q reads back as %q", in, w)
			}
		}
	}
}
