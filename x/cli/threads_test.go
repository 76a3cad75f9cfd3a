package cli

import (
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// threadLine finds the note lode prints about a stored thread, and its ID.
var threadLine = regexp.MustCompile(`(?m)^\(thread (\S+) in (\S+): --thread (\S+) goes on with it\)$`)

// requestTexts is the content of every message of the i-th request.
func requestTexts(t *testing.T, f *fakeOpenAI, i int) []string {
	t.Helper()
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.requests) <= i {
		t.Fatalf("%d requests, want more than %d", len(f.requests), i)
	}
	var out []string
	for _, m := range f.requests[i]["messages"].([]any) {
		if c, ok := m.(map[string]any)["content"].(string); ok {
			out = append(out, c)
		}
	}
	return out
}

func TestRunContinuesAStoredThread(t *testing.T) {
	dir := writeConfig(t, "")
	store := filepath.Join(t.TempDir(), "ledger")
	fake := &fakeOpenAI{replies: []func(http.ResponseWriter, *http.Request){textReply("Hello."), textReply("Still here.")}}
	srv := httptest.NewServer(fake)
	defer srv.Close()
	vars := map[string]string{"OPENAI_BASE_URL": srv.URL + "/v1"}

	r := lode(t, dir, vars, "", "run", "--model", "m", "--store", store, "hi")
	m := threadLine.FindStringSubmatch(r.stderr)
	if r.code != 0 || m == nil || m[1] != m[3] || m[2] != store {
		t.Fatalf("first run: exit %d, stderr:\n%s", r.code, r.stderr)
	}
	r = lode(t, dir, vars, "", "run", "--model", "m", "--store", store, "--thread", m[1], "are you there?")
	if r.code != 0 || r.stdout != "Still here.\n" || !strings.Contains(r.stderr, "(thread "+m[1]+" in ") {
		t.Fatalf("second run: exit %d, stdout %q, stderr:\n%s", r.code, r.stdout, r.stderr)
	}
	got := strings.Join(requestTexts(t, fake, 1), "|")
	if got != "hi|Hello.|are you there?" {
		t.Fatalf("the second request carried %q, want the thread so far and the new prompt", got)
	}
}

func TestChatKeepsItsThreadInTheStore(t *testing.T) {
	dir := writeConfig(t, "store: threads\n")
	fake := &fakeOpenAI{replies: []func(http.ResponseWriter, *http.Request){textReply("One."), textReply("Two.")}}
	srv := httptest.NewServer(fake)
	defer srv.Close()
	vars := map[string]string{"OPENAI_BASE_URL": srv.URL + "/v1"}

	r := lode(t, dir, vars, "first question\n", "chat", "--model", "m")
	m := threadLine.FindStringSubmatch(r.stderr)
	if r.code != 0 || m == nil || m[2] != "threads" {
		t.Fatalf("chat: exit %d, stderr:\n%s", r.code, r.stderr)
	}
	if !strings.HasPrefix(r.stderr, "lode chat with m — Ctrl-C stops a turn, Ctrl-D quits\n"+m[0]+"\nyou> ") {
		t.Fatalf("chat's first lines:\n%s", r.stderr)
	}
	r = lode(t, dir, nil, "", "threads")
	want := regexp.MustCompile(`^ID +TITLE +TURNS +UPDATED +STATE\n` + regexp.QuoteMeta(m[1]) + ` +first question +\d+ +\d{4}-\d\d-\d\d \d\d:\d\d:\d\d *\n$`)
	if r.code != 0 || !want.MatchString(r.stdout) || r.stderr != "" {
		t.Fatalf("lode threads: exit %d, stdout:\n%s\nstderr %q", r.code, r.stdout, r.stderr)
	}
	r = lode(t, dir, vars, "second question\n", "chat", "--model", "m", "--thread", m[1])
	if r.code != 0 || r.stdout != "Two.\n" {
		t.Fatalf("chat --thread: exit %d, stdout %q, stderr:\n%s", r.code, r.stdout, r.stderr)
	}
	if got := strings.Join(requestTexts(t, fake, 1), "|"); got != "first question|One.|second question" {
		t.Fatalf("the continued chat sent %q", got)
	}
}

// lode threads marks a thread whose calls wait for approval, and lode run
// on it says what waits rather than adding a message.
func TestThreadsShowsAPausedThread(t *testing.T) {
	dir := writeConfig(t, "tools:\n  calculator: {}\napprove: [calculator]\nstore: s\n")
	fake := &fakeOpenAI{replies: []func(http.ResponseWriter, *http.Request){
		callReply("call_1", "calculator__eval", `{"expression":"1+1"}`),
	}}
	srv := httptest.NewServer(fake)
	defer srv.Close()
	vars := map[string]string{"OPENAI_BASE_URL": srv.URL + "/v1"}
	r := lode(t, dir, vars, "", "run", "--model", "m", "what is 1+1?")
	m := regexp.MustCompile(`lode resume --store s (\S+) approve:call_1`).FindStringSubmatch(r.stderr)
	if r.code != exitPaused || m == nil {
		t.Fatalf("run: exit %d, stderr:\n%s", r.code, r.stderr)
	}
	r = lode(t, dir, nil, "", "threads")
	if r.code != 0 || !regexp.MustCompile(`(?m)^`+regexp.QuoteMeta(m[1])+` +what is 1\+1\? +\d+ +\S+ \S+ +paused$`).MatchString(r.stdout) {
		t.Fatalf("lode threads: exit %d, stdout:\n%s", r.code, r.stdout)
	}
	r = lode(t, dir, vars, "", "run", "--model", "m", "--thread", m[1], "and 2+2?")
	wantLast := "lode: thread " + m[1] + " waits for the decisions above before it takes another message\n"
	if r.code != exitPaused || !strings.HasPrefix(r.stderr, "1 tool call waits for approval:\n") || !strings.HasSuffix(r.stderr, wantLast) {
		t.Fatalf("run --thread on a paused thread: exit %d, stderr:\n%s", r.code, r.stderr)
	}
	fake.mu.Lock()
	defer fake.mu.Unlock()
	if len(fake.requests) != 1 {
		t.Fatalf("the model was asked again: %d requests", len(fake.requests))
	}
}

func TestThreadErrors(t *testing.T) {
	store := filepath.Join(t.TempDir(), "s")
	if err := os.Mkdir(store, 0o700); err != nil {
		t.Fatal(err)
	}
	missing := filepath.Join(t.TempDir(), "none")
	srv := httptest.NewServer(&fakeOpenAI{})
	defer srv.Close()
	vars := map[string]string{"OPENAI_BASE_URL": srv.URL + "/v1"}
	for _, tc := range []struct {
		name string
		args []string
		code int
		want string
	}{
		{"run without a store", []string{"run", "--model", "m", "--thread", "abc", "hi"}, exitUsage,
			"lode: --thread needs the store that keeps the thread: --store DIR, or store: in lode.yaml\n"},
		{"chat without a store", []string{"chat", "--model", "m", "--thread", "abc"}, exitUsage,
			"lode: --thread needs the store that keeps the thread: --store DIR, or store: in lode.yaml\n"},
		{"unknown ID", []string{"run", "--model", "m", "--store", store, "--thread", "nosuch", "hi"}, exitError,
			"lode: thread nosuch is not in " + store + ": lode threads --store " + store + " lists the stored threads\n"},
		{"chat, unknown ID", []string{"chat", "--model", "m", "--store", store, "--thread", "nosuch"}, exitError,
			"lode: thread nosuch is not in " + store + ": lode threads --store " + store + " lists the stored threads\n"},
		{"not an ID", []string{"run", "--model", "m", "--store", store, "--thread", "../x", "hi"}, exitUsage,
			`lode: --thread "../x" is not a thread ID: ledger: invalid thread id "../x": want 1 to 128 letters, digits, '_', '-' or '.', not starting with '.'` + "\n"},
		{"no such folder", []string{"run", "--model", "m", "--store", missing, "--thread", "abc", "hi"}, exitError,
			"lode: thread abc is not in " + missing + ": the folder does not exist (check --store, or store: in lode.yaml)\n"},
		{"threads without a store", []string{"threads"}, exitUsage, "lode: lode threads needs the store: --store DIR, or store: in lode.yaml\n"},
		{"threads, no folder", []string{"threads", "--store", missing}, 0, "no threads in " + missing + " (the folder does not exist)\n"},
		{"threads, empty", []string{"threads", "--store", store}, 0, "no threads in " + store + "\n"},
		{"threads, unknown thread", []string{"threads", "--store", store, "x"}, exitError,
			"lode: thread x is not in " + store + ": lode threads --store " + store + " lists the stored threads\n"},
		{"threads, thread of no folder", []string{"threads", "--store", missing, "x"}, exitError,
			"lode: thread x is not in " + missing + ": the folder does not exist (check --store, or store: in lode.yaml)\n"},
		{"threads takes one thread", []string{"threads", "--store", store, "x", "y"}, exitUsage, "lode: lode threads takes at most one thread ID; got \"y\" too\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := lode(t, t.TempDir(), vars, "", tc.args...)
			if r.code != tc.code || r.stderr != tc.want || r.stdout != "" {
				t.Fatalf("exit %d, stdout %q, stderr %q; want exit %d, stderr %q", r.code, r.stdout, r.stderr, tc.code, tc.want)
			}
		})
	}
	if _, err := os.Stat(missing); !os.IsNotExist(err) {
		t.Errorf("a folder was created where none was: %v", err)
	}
}
