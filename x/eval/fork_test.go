package eval_test

import (
	"context"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/lodeworks/lode/artifact"
	"github.com/lodeworks/lode/ledger"
	"github.com/lodeworks/lode/ledger/file"
	"github.com/lodeworks/lode/x/eval"
	"github.com/lodeworks/lode/x/provider/script"
	xstore "github.com/lodeworks/lode/x/store"
)

// recordParent writes, through st, the six turns the fork tests cut:
// a question, a calculator call, its result, the answer, another
// question, its answer.
func recordParent(t *testing.T, st ledger.State) {
	t.Helper()
	for _, a := range []struct {
		role ledger.Role
		art  artifact.Artifact
	}{
		{ledger.RoleUser, artifact.Text{Content: "what is 2+3?"}},
		{ledger.RoleAssistant, artifact.ToolCall{ID: "c1", Name: "calculator__eval", Arguments: `{"expression":"2+3"}`}},
		{ledger.RoleTool, artifact.ToolResult{ToolCallID: "c1", Content: "5"}},
		{ledger.RoleAssistant, artifact.Text{Content: "5."}},
		{ledger.RoleUser, artifact.Text{Content: "and 3+3?"}},
		{ledger.RoleAssistant, artifact.Text{Content: "6."}},
	} {
		if err := st.Append(a.role, a.art); err != nil {
			t.Fatal(err)
		}
	}
	if err := st.SetMetadata("tenant", "acme"); err != nil {
		t.Fatal(err)
	}
}

// storeState is every thread of s as listed, and its turns.
type storeState struct {
	infos []ledger.ThreadInfo
	turns map[string][]ledger.Turn
}

func readStore(t *testing.T, s ledger.Store) storeState {
	t.Helper()
	ss := storeState{turns: map[string][]ledger.Turn{}}
	for info, err := range s.List(t.Context()) {
		if err != nil {
			t.Fatal(err)
		}
		ss.infos = append(ss.infos, info)
		st, err := s.Load(t.Context(), info.ID)
		if err != nil {
			t.Fatal(err)
		}
		ss.turns[info.ID] = st.Turns()
		st.Close()
	}
	return ss
}

// seen is a scorer that keeps the thread each run ended with.
func seen(threads *[]ledger.State) eval.Scorer {
	return eval.ScorerFunc(func(_ context.Context, o *eval.Outcome) (eval.Score, error) {
		*threads = append(*threads, o.Thread)
		return eval.Score{Name: "seen", Value: 1, Pass: true}, nil
	})
}

// A case from a fork point sees exactly the recorded thread's first N
// turns, then its own; the recorded store is never written; on a folder
// and on SQLite.
func TestFromForkSeesTheParentsFirstTurns(t *testing.T) {
	for _, spec := range []string{"threads", "sqlite:threads.db"} {
		t.Run(spec, func(t *testing.T) {
			dir := t.TempDir()
			full := filepath.Join(dir, spec)
			if path, ok := strings.CutPrefix(spec, "sqlite:"); ok {
				full = "sqlite:" + filepath.Join(dir, path)
			}
			s, err := xstore.Open(t.Context(), full)
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			parent, err := s.Create(t.Context(), ledger.WithID("parent"))
			if err != nil {
				t.Fatal(err)
			}
			recordParent(t, parent)
			parent.Close()
			before := readStore(t, s)

			var threads []ledger.State
			cases := []eval.Case{
				{Name: "after 5.", From: eval.FromFork(s, "parent", 4), Prompt: "and 4+4?",
					Model: eval.Scripted("", script.Text("8.")), Expect: []eval.Expectation{eval.TextContains("8.")}, Scorers: []eval.Scorer{seen(&threads)}},
				{Name: "answer otherwise", From: eval.FromFork(s, "parent", 5),
					Model: eval.Scripted("", script.Text("Six, surely.")), Scorers: []eval.Scorer{seen(&threads)}},
			}
			r := eval.RunSuite(t.Context(), &eval.Suite{Name: "fork", Cases: cases})
			r2 := eval.RunSuite(t.Context(), &eval.Suite{Name: "fork", Cases: cases[1:]})
			for _, c := range append(r.Cases, r2.Cases...) {
				if c.Status != eval.Passed {
					t.Fatalf("%s: %s %v %s", c.Name, c.Status, c.Failures, c.Error)
				}
			}
			if len(threads) != 3 {
				t.Fatalf("%d runs seen", len(threads))
			}
			want := before.turns["parent"]
			for i, c := range []struct {
				at   int
				last []string
			}{{4, []string{"and 4+4?", "8."}}, {5, []string{"Six, surely."}}, {5, []string{"Six, surely."}}} {
				got := threads[i].Turns()
				if len(got) != c.at+len(c.last) || !reflect.DeepEqual(got[:c.at], want[:c.at]) {
					t.Fatalf("run %d started from %+v, want the parent's first %d turns %+v", i, got, c.at, want[:c.at])
				}
				for j, text := range c.last {
					if a := got[c.at+j].Artifacts; len(a) == 0 || a[0] != (artifact.Text{Content: text}) {
						t.Fatalf("run %d: turn %d is %+v, want %q", i, c.at+j, got[c.at+j], text)
					}
				}
				m := threads[i].(interface{ AllMetadata() map[string]string }).AllMetadata()
				if m[ledger.ForkedFromKey] != "parent" || m["tenant"] != "acme" {
					t.Fatalf("run %d's metadata: %v", i, m)
				}
			}
			if threads[1] == threads[2] || threads[1].ID() == threads[2].ID() {
				t.Fatal("two runs of a case shared a thread")
			}
			if after := readStore(t, s); !reflect.DeepEqual(after, before) {
				t.Fatalf("the recorded store changed:\n%+v\nwas\n%+v", after, before)
			}
		})
	}
}

// FromState forks a thread in hand, which is not changed.
func TestFromState(t *testing.T) {
	st := ledger.NewThread(ledger.WithID("recorded"))
	recordParent(t, st)
	want := st.Turns()
	var threads []ledger.State
	r := eval.RunSuite(t.Context(), &eval.Suite{Cases: []eval.Case{{
		Name: "otherwise", From: eval.FromState(st, 3), Model: eval.Scripted("", script.Text("Five.")), Scorers: []eval.Scorer{seen(&threads)},
	}}})
	if c := r.Cases[0]; c.Status != eval.Passed || c.Text != "Five." {
		t.Fatalf("%s %v %s", c.Status, c.Failures, c.Error)
	}
	if got := threads[0].Turns(); len(got) != 4 || !reflect.DeepEqual(got[:3], want[:3]) {
		t.Fatalf("the case started from %+v", got)
	}
	if got := st.Turns(); !reflect.DeepEqual(got, want) {
		t.Fatalf("the recorded thread changed: %+v", got)
	}
}

// A fork point ledger.Fork refuses fails the case with its reason; the
// model is never asked.
func TestFromForkRefusals(t *testing.T) {
	s, err := file.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	parent, err := s.Create(t.Context(), ledger.WithID("parent"))
	if err != nil {
		t.Fatal(err)
	}
	recordParent(t, parent)
	inMemory := ledger.NewThread(ledger.WithID("mem"))
	recordParent(t, inMemory)
	before := readStore(t, s)
	for _, c := range []struct {
		name string
		from eval.Start
		want string
	}{
		{"inside a tool turn", eval.FromFork(s, "parent", 2),
			"eval: from: ledger: fork parent at 2: cannot fork there: call c1 (calculator__eval) of turn 1 has no result before turn 2; fork at 1 or after its result"},
		{"past the end", eval.FromFork(s, "parent", 7),
			"eval: from: ledger: fork parent at 7: cannot fork there: the thread has 6 turns; keep 0 to 6"},
		{"negative", eval.FromFork(s, "parent", -1),
			"eval: from: ledger: fork parent at -1: cannot fork there: the thread has 6 turns; keep 0 to 6"},
		{"missing thread", eval.FromFork(s, "nosuch", 0),
			"eval: from: ledger: fork nosuch: file: load nosuch: ledger: thread not found"},
		{"in memory, inside a tool turn", eval.FromState(inMemory, 2),
			"eval: from: ledger: fork mem at 2: cannot fork there: call c1 (calculator__eval) of turn 1 has no result before turn 2; fork at 1 or after its result"},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := eval.RunSuite(t.Context(), &eval.Suite{Cases: []eval.Case{{Name: c.name, From: c.from, Model: eval.Scripted("")}}})
			if got := r.Cases[0]; got.Status != eval.Failed || got.Error != c.want || got.Turns != 0 {
				t.Fatalf("%s, error:\n got %s\nwant %s", got.Status, got.Error, c.want)
			}
		})
	}
	r := eval.RunSuite(t.Context(), &eval.Suite{Cases: []eval.Case{{Name: "both", Thread: func() ledger.State { return ledger.NewThread() },
		From: eval.FromFork(s, "parent", 4), Model: eval.Scripted("")}}})
	if got := r.Cases[0]; got.Status != eval.Failed || got.Error != "eval: the case sets both Thread and From; give one" {
		t.Fatalf("both: %s %s", got.Status, got.Error)
	}
	if after := readStore(t, s); !reflect.DeepEqual(after, before) {
		t.Fatal("a refused fork changed the store")
	}
	if inMemory.Len() != 6 {
		t.Fatal("a refused fork changed the thread in memory")
	}
}

// A suite file's case starts from a fork point with from: {store,
// thread, at}; the store's path is the suite file's folder's.
func TestSuiteFileFrom(t *testing.T) {
	dir := t.TempDir()
	s, err := xstore.Open(t.Context(), "sqlite:"+filepath.Join(dir, "rec", "threads.db"))
	if err != nil {
		t.Fatal(err)
	}
	parent, err := s.Create(t.Context(), ledger.WithID("parent"))
	if err != nil {
		t.Fatal(err)
	}
	recordParent(t, parent)
	before := readStore(t, s)
	s.Close()
	path := filepath.Join(dir, "suite.yaml")
	suite := `name: counterfactual
cases:
  - name: otherwise
    from: {store: "sqlite:rec/threads.db", thread: parent, at: 5}
    model: {script: [{text: "Six, surely."}]}
    expect: {text_contains: [surely], max_turns: 1}
  - name: gone
    from: {store: none, thread: parent, at: 5}
    model: {script: [{text: "x"}]}
`
	if err := os.WriteFile(path, []byte(suite), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err = eval.LoadSuite(path)
	if want := "eval: bad suite file: " + path + ": case 1 (otherwise): from: store sqlite:rec/threads.db: only a folder opens here; LoadSuite(path, WithStores(...)) opens the others (lode eval does)"; err == nil || err.Error() != want {
		t.Fatalf("sqlite: without WithStores:\n got %v\nwant %s", err, want)
	}
	loaded, err := eval.LoadSuite(path, eval.WithStores(func(ctx context.Context, spec string) (ledger.Store, error) {
		return xstore.Open(ctx, spec)
	}))
	if err != nil {
		t.Fatal(err)
	}
	r := eval.RunSuite(t.Context(), loaded)
	if c := r.Cases[0]; c.Status != eval.Passed || len(c.Transcript) != 6 || c.Transcript[4].Text != "and 3+3?" {
		t.Fatalf("otherwise: %s %v %s %+v", c.Status, c.Failures, c.Error, c.Transcript)
	}
	want := "eval: from: store " + filepath.Join(dir, "none") + ": stat " + filepath.Join(dir, "none") + ": no such file or directory"
	if c := r.Cases[1]; c.Status != eval.Failed || c.Error != want {
		t.Fatalf("gone: %s %s, want %s", c.Status, c.Error, want)
	}
	if _, err := os.Stat(filepath.Join(dir, "none")); !os.IsNotExist(err) {
		t.Fatalf("a store was created: %v", err)
	}
	s, err = xstore.Open(t.Context(), "sqlite:"+filepath.Join(dir, "rec", "threads.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if after := readStore(t, s); !reflect.DeepEqual(after, before) {
		t.Fatal("the suite changed the recorded store")
	}

	// A folder opens without WithStores.
	folder, err := file.Open(filepath.Join(dir, "folder"))
	if err != nil {
		t.Fatal(err)
	}
	parent, err = folder.Create(t.Context(), ledger.WithID("parent"))
	if err != nil {
		t.Fatal(err)
	}
	recordParent(t, parent)
	folder.Close()
	if err := os.WriteFile(path, []byte("cases:\n  - name: a\n    from: {store: folder, thread: parent, at: 3}\n    model: {script: [{text: \"Five.\"}]}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if loaded, err = eval.LoadSuite(path); err != nil {
		t.Fatal(err)
	}
	if c := eval.RunSuite(t.Context(), loaded).Cases[0]; c.Status != eval.Passed || len(c.Transcript) != 4 || c.Text != "Five." {
		t.Fatalf("from a folder: %s %v %s %+v", c.Status, c.Failures, c.Error, c.Transcript)
	}

	const model = "    model: {script: [{text: hi}]}\n"
	for _, c := range []struct{ name, from, want string }{
		{"no store", "{thread: p, at: 1}", "from: give the store that keeps the thread (store: a folder, sqlite:PATH or postgres://...)"},
		{"no thread", "{store: s, at: 1}", "from: give the thread's ID (thread:)"},
		{"no at", "{store: s, thread: p}", "from: give how many of the thread's turns the case starts from (at:, from 0)"},
		{"negative at", "{store: s, thread: p, at: -2}", "from: at: -2 is negative; at: 0 starts from none of the thread's turns"},
		{"bad thread", "{store: s, thread: ../p, at: 1}", `from: thread: ledger: invalid thread id "../p": want 1 to 128 letters, digits, '_', '-' or '.', not starting with '.'`},
		{"unknown key", "{store: s, thread: p, at: 1, turn: 2}", "yaml: unmarshal errors:\n  line 3: field turn not found in type eval.fromFile"},
	} {
		t.Run(c.name, func(t *testing.T) {
			if err := os.WriteFile(path, []byte("cases:\n  - name: a\n    from: "+c.from+"\n"+model), 0o600); err != nil {
				t.Fatal(err)
			}
			_, err := eval.LoadSuite(path)
			want := "eval: bad suite file: " + path + ": case 1 (a): " + c.want
			if c.name == "unknown key" {
				want = "eval: bad suite file: " + path + ": " + c.want
			}
			if err == nil || err.Error() != want {
				t.Fatalf("err:\n got %v\nwant %s", err, want)
			}
		})
	}
}
