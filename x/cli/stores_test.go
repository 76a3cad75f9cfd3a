package cli

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lodeworks/lode/internal/pgtest"
	"github.com/lodeworks/lode/ledger"
	xstore "github.com/lodeworks/lode/x/store"
)

// storeSpecs are a SQLite and a PostgreSQL store, new for the test.
func storeSpecs(t *testing.T) map[string]func(t *testing.T) string {
	return map[string]func(t *testing.T) string{
		"sqlite": func(t *testing.T) string {
			return "sqlite:" + filepath.Join(t.TempDir(), "db", "threads.db")
		},
		"postgres": func(t *testing.T) string { return pgtest.Shared(t).NewDatabase(t) },
	}
}

// Every command keeps its threads in a SQLite or PostgreSQL store when
// --store or store: in lode.yaml says sqlite:PATH or postgres://…, and
// prints the spec so that it can be pasted back.
func TestCommandsOnSQLStores(t *testing.T) {
	for kind, newSpec := range storeSpecs(t) {
		t.Run(kind, func(t *testing.T) {
			spec := newSpec(t)
			dir := writeConfig(t, "model:\n  name: m\ntools:\n  calculator: {}\napprove: [calculator]\n")
			fake := &fakeOpenAI{replies: []func(http.ResponseWriter, *http.Request){
				textReply("Hello."),
				textReply("Still here."),
				callReply("call_1", "calculator__eval", `{"expression":"2^10"}`),
				textReply("1024."),
				textReply("From the chat."),
			}}
			srv := httptest.NewServer(fake)
			defer srv.Close()
			vars := map[string]string{"OPENAI_BASE_URL": srv.URL + "/v1"}

			// lode threads on an empty store.
			r := lode(t, dir, vars, "", "threads", "--store", spec)
			if r.code != 0 || r.stderr != "no threads in "+spec+"\n" && r.stderr != "no threads in "+spec+" (the file does not exist)\n" {
				t.Fatalf("threads: exit %d, stderr %q", r.code, r.stderr)
			}
			// lode run, then run --thread.
			r = lode(t, dir, vars, "", "run", "--store", spec, "hi")
			m := threadLine.FindStringSubmatch(r.stderr)
			if r.code != 0 || m == nil || m[2] != spec {
				t.Fatalf("run: exit %d, stderr:\n%s", r.code, r.stderr)
			}
			thread := m[1]
			r = lode(t, dir, vars, "", "run", "--store", spec, "--thread", thread, "are you there?")
			if r.code != 0 || r.stdout != "Still here.\n" {
				t.Fatalf("run --thread: exit %d, stdout %q, stderr:\n%s", r.code, r.stdout, r.stderr)
			}
			if got := strings.Join(requestTexts(t, fake, 1), "|"); got != "hi|Hello.|are you there?" {
				t.Fatalf("the second run asked with %q", got)
			}
			// A pause prints lode resume commands that name the store as
			// given; pasted, one decides the call.
			r = lode(t, dir, vars, "", "run", "--store", spec, "what is 2^10?")
			lines := resumeLines(t, r.stderr)
			if r.code != exitPaused || len(lines) != 3 || !strings.Contains(strings.Join(lines[0], " "), "--store "+spec+" ") {
				t.Fatalf("paused run: exit %d, stderr:\n%s", r.code, r.stderr)
			}
			r = lode(t, dir, vars, "", append(lines[0][1:], "--model", "m")...)
			if r.code != 0 || r.stdout != "1024.\n" {
				t.Fatalf("%q: exit %d, stdout %q, stderr:\n%s", lines[0], r.code, r.stdout, r.stderr)
			}
			// lode recover finds nothing stopped.
			r = lode(t, dir, vars, "", "recover", "--store", spec)
			if r.code != 0 || r.stderr != "no stopped runs to recover\n" {
				t.Fatalf("recover: exit %d, stderr %q", r.code, r.stderr)
			}
			// lode chat with store: in lode.yaml.
			cdir := writeConfig(t, fmt.Sprintf("model:\n  name: m\nstore: %s\n", spec))
			r = lode(t, cdir, vars, "a chat\n", "chat")
			if m := threadLine.FindStringSubmatch(r.stderr); r.code != 0 || m == nil || m[2] != spec || r.stdout != "From the chat.\n" {
				t.Fatalf("chat: exit %d, stdout %q, stderr:\n%s", r.code, r.stdout, r.stderr)
			}
			// lode threads lists the three.
			r = lode(t, cdir, vars, "", "threads")
			if r.code != 0 || strings.Count(r.stdout, "\n") != 4 || !strings.Contains(r.stdout, thread+"  hi ") {
				t.Fatalf("threads: exit %d, stdout:\n%s\nstderr %q", r.code, r.stdout, r.stderr)
			}
		})
	}
}

// lode web keeps its threads in the store spec names.
func TestWebOnSQLite(t *testing.T) {
	spec := "sqlite:" + filepath.Join(t.TempDir(), "web.db")
	dir := writeConfig(t, "")
	fake := &fakeOpenAI{replies: []func(http.ResponseWriter, *http.Request){textReply("Hi from SQLite.")}}
	url, said, stop := startWeb(t, dir, fake, "--store", spec)
	defer stop()
	if !strings.Contains(said, "threads in "+spec+",") {
		t.Fatalf("lode web said %q", said)
	}
	resp, err := http.Post(url+"api/chat", "application/json", strings.NewReader(`{"messages":[{"role":"user","parts":[{"type":"text","text":"hi"}]}]}`))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(body), "Hi from SQLite.") {
		t.Fatalf("the answer: %q", body)
	}
	s, err := xstore.Open(context.Background(), spec)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	st, err := s.Load(context.Background(), resp.Header.Get("X-Lode-Thread"))
	if err != nil || st.Len() != 2 {
		t.Fatalf("the thread in SQLite: %v", err)
	}
	if l, _ := st.Lease(); l.Owner != "" {
		t.Fatalf("the turn left its lease: %+v", l)
	}
	st.Close()
}

// A password in a PostgreSQL URL is refused, from lode.yaml and from
// --store, before anything runs; the password is never printed.
func TestStorePasswordRefused(t *testing.T) {
	const fix = ": lode does not take the password from the store setting, which is printed, kept in lode.yaml and shell history, and visible to other users in the process list; drop it from the URL and set PGPASSWORD, or put it in ~/.pgpass (or the file PGPASSFILE names)\n"
	dir := writeConfig(t, "model:\n  name: m\nstore: postgres://lode:s3cret@db.internal/lode\n")
	for _, c := range []struct {
		name string
		args []string
		code int
		want string
	}{
		{"lode.yaml", []string{"run", "hi"}, 1, `lode: lode.yaml:3: store: a password in the store spec "postgres://lode:xxxxx@db.internal/lode"` + fix},
		{"lode.yaml, threads", []string{"threads"}, 1, `lode: lode.yaml:3: store: a password in the store spec "postgres://lode:xxxxx@db.internal/lode"` + fix},
		{"lode.yaml, web", []string{"web"}, 1, `lode: lode.yaml:3: store: a password in the store spec "postgres://lode:xxxxx@db.internal/lode"` + fix},
		{"--store", []string{"resume", "--store", "postgres://lode@db.internal/lode?password=s3cret", "t1"}, 2, `lode: store: a password in the store spec "postgres://lode@db.internal/lode?password=xxxxx"` + fix},
		{"unknown kind", []string{"threads", "--store", "mysql://lode@db/lode"}, 2, `lode: store: invalid store spec "mysql://lode@db/lode": unknown kind of store "mysql": want a folder, sqlite:PATH or postgres://USER@HOST/DB` + "\n"},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := lode(t, dir, map[string]string{"OPENAI_BASE_URL": "http://127.0.0.1:1/v1"}, "", c.args...)
			if r.code != c.code || r.stderr != c.want {
				t.Fatalf("exit %d, stderr\n%q\nwant %d\n%q", r.code, r.stderr, c.code, c.want)
			}
		})
	}
}

// The policy's usd_per_day spending is counted in the store the threads
// are kept in, SQLite included.
func TestSpendCountedInTheStore(t *testing.T) {
	spec := "sqlite:" + filepath.Join(t.TempDir(), "spend.db")
	c := counterOf(spec)
	ctx := context.Background()
	if total, ok, err := c.AddCounter(ctx, "usd/day", 7, 10); err != nil || !ok || total != 7 {
		t.Fatalf("AddCounter: %d %v %v", total, ok, err)
	}
	c.Close()
	if _, _, err := c.AddCounter(ctx, "usd/day", 1, 10); err == nil {
		t.Fatal("a closed counter counted")
	}
	s, err := xstore.Open(ctx, spec)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if total, _, err := s.AddCounter(ctx, "usd/day", 0, ledger.NoLimit); err != nil || total != 7 {
		t.Fatalf("the store counts %d, %v", total, err)
	}
}
