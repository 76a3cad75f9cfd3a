package cli

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/lodeworks/lode/ledger"
)

// forkLine is what lode fork says on stderr: the fork, what it keeps and
// the command that goes on with it.
var forkLine = regexp.MustCompile(`^thread (\S+) in (\S+) keeps (.+) thread (\S+)'s (\d+ turns?)(, which end waiting for the model's answer)?; (lode run .*) goes on with it\n$`)

// recordForked records, on the store spec names, a thread of six turns
// run with model m1 for tenant acme: "what is 2+3?", a calculator call,
// its result, "5.", "and 3+3?", "6.". It returns the thread's ID.
func recordForked(t *testing.T, dir, spec string, vars map[string]string) string {
	t.Helper()
	r := lode(t, dir, vars, "", "run", "--model", "m1", "--tenant", "acme", "--store", spec, "what is 2+3?")
	m := threadLine.FindStringSubmatch(r.stderr)
	if r.code != 0 || m == nil || r.stdout != "5.\n" {
		t.Fatalf("first run: exit %d, stdout %q, stderr:\n%s", r.code, r.stdout, r.stderr)
	}
	r = lode(t, dir, vars, "", "run", "--store", spec, "--thread", m[1], "and 3+3?")
	if r.code != 0 || r.stdout != "6.\n" {
		t.Fatalf("second run: exit %d, stdout %q, stderr:\n%s", r.code, r.stdout, r.stderr)
	}
	return m[1]
}

// lode fork keeps the first N turns as lode threads counts them, prints
// the fork's ID and a command that, pasted, goes on with the fork on the
// parent's model; lode threads lists forks after their parent with FROM;
// the parent is not changed. On a folder, SQLite and PostgreSQL.
func TestForkCommand(t *testing.T) {
	specs := storeSpecs(t)
	specs["folder"] = func(t *testing.T) string { return filepath.Join(t.TempDir(), "threads") }
	for kind, newSpec := range specs {
		t.Run(kind, func(t *testing.T) {
			spec := newSpec(t)
			dir := writeConfig(t, "tools:\n  calculator: {}\n")
			fake := &fakeOpenAI{replies: []func(http.ResponseWriter, *http.Request){
				callReply("call_1", "calculator__eval", `{"expression":"2+3"}`),
				textReply("5."),
				textReply("6."),
				textReply("8."),
				textReply("Six, surely."),
			}}
			srv := httptest.NewServer(fake)
			defer srv.Close()
			vars := map[string]string{"OPENAI_BASE_URL": srv.URL + "/v1"}
			parent := recordForked(t, dir, spec, vars)
			r := lode(t, dir, nil, "", "threads", "--store", spec)
			before := r.stdout
			if r.code != 0 || !regexp.MustCompile(`(?m)^`+parent+` +what is 2\+3\? +6 +`).MatchString(before) || strings.Contains(before, "FROM") {
				t.Fatalf("threads before the fork: exit %d, stdout:\n%s", r.code, before)
			}

			// After "5.": the fork goes on with a new prompt.
			r = lode(t, dir, nil, "", "fork", "--store", spec, parent, "--at", "4")
			fork := strings.TrimSuffix(r.stdout, "\n")
			m := forkLine.FindStringSubmatch(r.stderr)
			if r.code != 0 || m == nil || m[1] != fork || m[2] != spec || m[3] != "the first 4 of" || m[4] != parent || m[5] != "6 turns" || m[6] != "" {
				t.Fatalf("fork --at 4: exit %d, stdout %q, stderr:\n%s", r.code, r.stdout, r.stderr)
			}
			words := shellWords(t, m[7])
			if want := []string{"lode", "run", "--store", spec, "--thread", fork, "PROMPT"}; !slices.Equal(words, want) {
				t.Fatalf("the command printed is %q, want %q", words, want)
			}
			words[len(words)-1] = "and 4+4?"
			r = lode(t, dir, vars, "", words[1:]...)
			if r.code != 0 || r.stdout != "8.\n" {
				t.Fatalf("%q: exit %d, stdout %q, stderr:\n%s", words, r.code, r.stdout, r.stderr)
			}
			fake.mu.Lock()
			model := fake.requests[3]["model"]
			fake.mu.Unlock()
			if got := strings.Join(requestTexts(t, fake, 3), "|"); got != "what is 2+3?|5|5.|and 4+4?" || model != "m1" {
				t.Fatalf("the fork asked model %v with %q, want m1 with the parent's first 4 turns and the prompt", model, got)
			}

			// After "and 3+3?": the model owes the answer, and the printed
			// command asks for it; --id names the fork.
			r = lode(t, dir, nil, "", "fork", "--store", spec, "--id", "retry", parent, "--at", "5")
			m = forkLine.FindStringSubmatch(r.stderr)
			if r.code != 0 || r.stdout != "retry\n" || m == nil || m[6] == "" {
				t.Fatalf("fork --at 5: exit %d, stdout %q, stderr:\n%s", r.code, r.stdout, r.stderr)
			}
			words = shellWords(t, m[7])
			if want := []string{"lode", "run", "--store", spec, "--thread", "retry"}; !slices.Equal(words, want) {
				t.Fatalf("the command printed is %q, want %q", words, want)
			}
			r = lode(t, dir, vars, "", words[1:]...)
			if r.code != 0 || r.stdout != "Six, surely.\n" {
				t.Fatalf("%q: exit %d, stdout %q, stderr:\n%s", words, r.code, r.stdout, r.stderr)
			}
			if got := strings.Join(requestTexts(t, fake, 4), "|"); got != "what is 2+3?|5|5.|and 3+3?" {
				t.Fatalf("the retry asked with %q", got)
			}
			// A fork of a fork, keeping none.
			r = lode(t, dir, nil, "", "fork", "--store", spec, "--id", "empty", "--tenant", "acme", "retry", "--at", "0")
			if m = forkLine.FindStringSubmatch(r.stderr); r.code != 0 || m == nil || m[3] != "none of" || m[5] != "6 turns" {
				t.Fatalf("fork --at 0: exit %d, stderr:\n%s", r.code, r.stderr)
			}

			// The parent is as it was; each fork comes after its parent.
			r = lode(t, dir, nil, "", "threads", "--store", spec)
			rows := threadRows(r.stdout)
			if r.code != 0 || len(rows) != 5 || !slices.Equal(rows[0], []string{"ID", "TITLE", "TURNS", "UPDATED", "STATE", "FROM"}) {
				t.Fatalf("threads: exit %d, stdout:\n%s", r.code, r.stdout)
			}
			if !strings.Contains(r.stdout, strings.SplitN(before, "\n", 3)[1][:len(parent)+40]) {
				t.Fatalf("the parent's line changed:\n%s\nwas:\n%s", r.stdout, before)
			}
			wantOrder := [][2]string{{parent, ""}, {fork, parent + "@4"}, {"retry", parent + "@5"}, {"empty", "retry@0"}}
			if fork > "retry" {
				wantOrder[1], wantOrder[2] = wantOrder[2], wantOrder[1]
			}
			for i, w := range wantOrder {
				row := rows[i+1]
				if row[0] != w[0] || w[1] != "" && row[len(row)-1] != w[1] || w[1] == "" && strings.Contains(row[len(row)-1], "@") {
					t.Fatalf("threads line %d is %q, want %s from %q:\n%s", i+1, row, w[0], w[1], r.stdout)
				}
			}
			// lode threads THREAD: that thread and its forks, at any depth.
			r = lode(t, dir, nil, "", "threads", "--store", spec, "retry")
			if rows = threadRows(r.stdout); r.code != 0 || len(rows) != 3 || rows[1][0] != "retry" || rows[2][0] != "empty" {
				t.Fatalf("threads retry: exit %d, stdout:\n%s", r.code, r.stdout)
			}
		})
	}
}

// threadRows splits lode threads' lines into their words.
func threadRows(out string) [][]string {
	var rows [][]string
	for l := range strings.Lines(out) {
		rows = append(rows, strings.Fields(l))
	}
	return rows
}

// Every refusal of lode fork is one line with the exit code of its kind,
// and creates no thread.
func TestForkRefusals(t *testing.T) {
	store := filepath.Join(t.TempDir(), "s")
	dir := writeConfig(t, "tools:\n  calculator: {}\n")
	fake := &fakeOpenAI{replies: []func(http.ResponseWriter, *http.Request){
		callReply("call_1", "calculator__eval", `{"expression":"2+3"}`),
		textReply("5."),
		textReply("6."),
	}}
	srv := httptest.NewServer(fake)
	defer srv.Close()
	parent := recordForked(t, dir, store, map[string]string{"OPENAI_BASE_URL": srv.URL + "/v1"})
	if r := lode(t, dir, nil, "", "fork", "--store", store, "--id", "taken", parent, "--at", "1"); r.code != 0 {
		t.Fatalf("fork: exit %d, stderr:\n%s", r.code, r.stderr)
	}
	missing := filepath.Join(t.TempDir(), "none")
	for _, tc := range []struct {
		name string
		args []string
		code int
		want string
	}{
		{"inside a tool turn", []string{"--store", store, parent, "--at", "2"}, exitError,
			"lode: cannot fork thread " + parent + " at 2: call call_1 (calculator__eval) of turn 1 has no result before turn 2; fork at 1 or after its result\n"},
		{"past the end", []string{"--store", store, parent, "--at", "7"}, exitError,
			"lode: cannot fork thread " + parent + " at 7: it has 6 turns, so --at takes 0 (keep none) to 6 (keep all)\n"},
		{"negative", []string{"--store", store, parent, "--at", "-1"}, exitUsage,
			"lode: --at -1: must not be negative (--at 0 keeps none of the thread's turns)\n"},
		{"no --at", []string{"--store", store, parent}, exitUsage,
			"lode: lode fork needs --at N, the number of turns the fork keeps: lode fork --store DIR " + parent + " --at N\n"},
		{"no thread", []string{"--store", store, "--at", "1"}, exitUsage,
			"lode: lode fork needs a thread ID: lode fork --store DIR THREAD --at N\n"},
		{"two threads", []string{"--store", store, parent, "other", "--at", "1"}, exitUsage,
			"lode: lode fork takes one thread ID; got \"other\" too\n"},
		{"missing thread", []string{"--store", store, "nosuch", "--at", "0"}, exitError,
			"lode: thread nosuch is not in " + store + ": lode threads --store " + store + " lists the stored threads\n"},
		{"not an ID", []string{"--store", store, "../x", "--at", "0"}, exitUsage,
			`lode: "../x" is not a thread ID: ledger: invalid thread id "../x": want 1 to 128 letters, digits, '_', '-' or '.', not starting with '.'` + "\n"},
		{"--id taken", []string{"--store", store, "--id", "taken", parent, "--at", "4"}, exitError,
			"lode: --id taken: a thread taken is already in " + store + ": give another --id, or leave it out for a new ID\n"},
		{"--id taken by the parent", []string{"--store", store, "--id", parent, parent, "--at", "4"}, exitError,
			"lode: --id " + parent + ": a thread " + parent + " is already in " + store + ": give another --id, or leave it out for a new ID\n"},
		{"--id not an ID", []string{"--store", store, "--id", ".x", parent, "--at", "4"}, exitUsage,
			`lode: --id ".x" is not a thread ID: ledger: invalid thread id ".x": want 1 to 128 letters, digits, '_', '-' or '.', not starting with '.'` + "\n"},
		{"another tenant", []string{"--store", store, "--tenant", "globex", parent, "--at", "4"}, exitError,
			"lode: thread " + parent + " belongs to tenant acme, not globex: a thread cannot change tenant (leave --tenant out, or give --tenant acme)\n"},
		{"no store", []string{parent, "--at", "4"}, exitUsage,
			"lode: lode fork needs the store that keeps the thread: --store DIR, or store: in lode.yaml\n"},
		{"no such folder", []string{"--store", missing, parent, "--at", "4"}, exitError,
			"lode: thread " + parent + " is not in " + missing + ": the folder does not exist (check --store, or store: in lode.yaml)\n"},
		{"no such SQLite file", []string{"--store", "sqlite:" + missing, parent, "--at", "4"}, exitError,
			"lode: thread " + parent + " is not in sqlite:" + missing + ": the file does not exist (check --store, or store: in lode.yaml)\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := lode(t, t.TempDir(), nil, "", append([]string{"fork"}, tc.args...)...)
			if r.code != tc.code || r.stderr != tc.want || r.stdout != "" {
				t.Fatalf("exit %d, stdout %q, stderr %q; want exit %d, stderr %q", r.code, r.stdout, r.stderr, tc.code, tc.want)
			}
		})
	}
	// Only the parent and the fork named taken are in the store, and the
	// parent has its six turns.
	s, err := openStore(context.Background(), store)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var ids []string
	for info, err := range s.List(context.Background()) {
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, info.ID)
		if info.ID == parent && info.Turns != 6 {
			t.Errorf("the parent has %d turns after the refusals", info.Turns)
		}
		if info.ID == "taken" && info.Metadata[ledger.ForkedFromKey] != parent {
			t.Errorf("the fork's metadata: %v", info.Metadata)
		}
	}
	if want := []string{parent, "taken"}; !slices.Equal(ids, want) && !slices.Equal(ids, []string{"taken", parent}) {
		t.Fatalf("threads in the store: %q, want %q", ids, want)
	}
	if _, err := os.Stat(missing); !os.IsNotExist(err) {
		t.Errorf("a store was created where none was: %v", err)
	}
}

// A fork of a run that stopped before the model answered is not marked
// for lode recover: the parent's run is the one that stopped, and the
// fork goes on when its printed command is run.
func TestForkOfAStoppedRun(t *testing.T) {
	store := filepath.Join(t.TempDir(), "s")
	dir := writeConfig(t, "")
	srv := httptest.NewServer(&fakeOpenAI{})
	defer srv.Close()
	r := lode(t, dir, map[string]string{"OPENAI_BASE_URL": srv.URL + "/v1"}, "", "run", "--model", "m", "--store", store, "hi")
	m := threadLine.FindStringSubmatch(r.stderr)
	if r.code != exitError || m == nil {
		t.Fatalf("run: exit %d, stderr:\n%s", r.code, r.stderr)
	}
	r = lode(t, dir, nil, "", "fork", "--store", store, m[1], "--at", "1")
	f := forkLine.FindStringSubmatch(r.stderr)
	if r.code != 0 || f == nil || f[6] == "" {
		t.Fatalf("fork: exit %d, stderr:\n%s", r.code, r.stderr)
	}
	s, err := openStore(context.Background(), store)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for info, err := range s.List(context.Background()) {
		if err != nil {
			t.Fatal(err)
		}
		if marked := info.Metadata[stoppedKey] != ""; marked != (info.ID == m[1]) {
			t.Errorf("thread %s (parent %s): stopped mark %q", info.ID, m[1], info.Metadata[stoppedKey])
		}
	}
}

func TestForkHelp(t *testing.T) {
	r := lode(t, t.TempDir(), nil, "", "fork", "-h")
	if r.code != 0 || !strings.HasPrefix(r.stderr, "usage: lode fork [flags] THREAD --at N\n") || !strings.Contains(r.stderr, "--at N keeps turns 0 to N-1") {
		t.Fatalf("fork -h: exit %d, stderr:\n%s", r.code, r.stderr)
	}
	r = lode(t, t.TempDir(), nil, "", "help")
	if !strings.Contains(r.stdout, "\n  lode fork [flags] THREAD --at N\n") {
		t.Fatalf("lode help does not list fork:\n%s", r.stdout)
	}
}

// lode eval runs a case from a fork point of a thread lode run recorded,
// counting turns as lode threads and lode fork --at count them.
func TestEvalFromAForkPoint(t *testing.T) {
	store := filepath.Join(t.TempDir(), "s")
	dir := writeConfig(t, "tools:\n  calculator: {}\n")
	fake := &fakeOpenAI{replies: []func(http.ResponseWriter, *http.Request){
		callReply("call_1", "calculator__eval", `{"expression":"2+3"}`),
		textReply("5."),
		textReply("6."),
	}}
	srv := httptest.NewServer(fake)
	defer srv.Close()
	parent := recordForked(t, dir, store, map[string]string{"OPENAI_BASE_URL": srv.URL + "/v1"})
	suite := filepath.Join(t.TempDir(), "suite.yaml")
	body := "name: counterfactual\ncases:\n" +
		"  - name: eight\n    from: {store: " + store + ", thread: " + parent + ", at: 4}\n    prompt: and 4+4?\n" +
		"    model: {script: [{text: \"8.\"}]}\n    expect: {text_contains: [\"8.\"]}\n" +
		"  - name: mid-call\n    from: {store: " + store + ", thread: " + parent + ", at: 2}\n" +
		"    model: {script: [{text: \"x\"}]}\n"
	if err := os.WriteFile(suite, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	report := filepath.Join(t.TempDir(), "report.json")
	r := lode(t, dir, nil, "", "eval", "--json", report, suite)
	if r.code != exitError || !strings.Contains(r.stdout, "counterfactual: 1 passed, 1 failed, 0 skipped\n") {
		t.Fatalf("lode eval: exit %d, stdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
	var rep struct {
		Cases []struct {
			Status     string
			Error      string
			Transcript []struct{ Text string }
		}
	}
	b, err := os.ReadFile(report)
	if err != nil || json.Unmarshal(b, &rep) != nil || len(rep.Cases) != 2 {
		t.Fatalf("report: %v\n%s", err, b)
	}
	var texts []string
	for _, m := range rep.Cases[0].Transcript {
		texts = append(texts, m.Text)
	}
	if got := strings.Join(texts, "|"); rep.Cases[0].Status != "pass" || !strings.HasPrefix(got, "what is 2+3?|") || !strings.HasSuffix(got, "|5.|and 4+4?|8.") {
		t.Fatalf("eight: %s, transcript %q", rep.Cases[0].Status, got)
	}
	want := "eval: from: ledger: fork " + parent + " at 2: cannot fork there: call call_1 (calculator__eval) of turn 1 has no result before turn 2; fork at 1 or after its result"
	if c := rep.Cases[1]; c.Status != "fail" || c.Error != want {
		t.Fatalf("mid-call: %s %q, want %q", c.Status, c.Error, want)
	}
	// The recorded thread is as it was.
	r = lode(t, dir, nil, "", "threads", "--store", store)
	if rows := threadRows(r.stdout); r.code != 0 || len(rows) != 2 || rows[1][0] != parent || !slices.Contains(rows[1], "6") {
		t.Fatalf("threads: exit %d, stdout:\n%s", r.code, r.stdout)
	}
}
