package main

import (
	"context"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/lodeworks/lode/x/cassette"
	"github.com/lodeworks/lode/x/eval"
	"github.com/lodeworks/lode/x/provider/openai/openaitest"
)

// workspace copies testdata/workspace to a folder of the test's own, so
// that no case can change the committed files.
func workspace(t *testing.T) string {
	t.Helper()
	root := t.TempDir()
	if err := os.CopyFS(root, os.DirFS(filepath.Join("testdata", "workspace"))); err != nil {
		t.Fatal(err)
	}
	return root
}

// TestSuite runs the suite on the committed cassettes, offline: every
// case must pass.
func TestSuite(t *testing.T) {
	s := Suite(workspace(t), Cassettes{Dir: filepath.Join("testdata", "cassettes")})
	if len(s.Cases) < 10 {
		t.Fatalf("the suite has %d cases; it should have at least 10", len(s.Cases))
	}
	r := eval.Run(t, s)
	for _, c := range r.Cases {
		if c.Status != eval.Passed {
			t.Errorf("%s: %s", c.Name, c.Status)
		}
		if c.Tokens() == 0 || c.CostUSD == 0 {
			t.Errorf("%s: %d tokens, $%f: the recorded usage was not read or not priced", c.Name, c.Tokens(), c.CostUSD)
		}
	}
}

// toFake sends every request to the scripted server, whatever host it
// names, so that the cassette records the fixed BaseURL.
type toFake struct{ srv *openaitest.Server }

func (f toFake) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.URL.Scheme, r.URL.Host, r.Host = "http", strings.TrimPrefix(f.srv.URL, "http://"), ""
	return f.srv.Client().Transport.RoundTrip(r)
}

// record runs each case of the suite against its scripted model,
// recording its cassettes into dir.
func record(t *testing.T, dir string) {
	t.Helper()
	root := workspace(t)
	names := Suite(root, Cassettes{Dir: dir}).Cases
	for _, c := range names {
		replies, ok := fakes[c.Name]
		if !ok {
			t.Fatalf("case %s has no scripted replies", c.Name)
		}
		srv := openaitest.NewServer(t, replies...)
		s := Suite(root, Cassettes{Dir: dir, Opts: []cassette.Option{
			cassette.WithMode(cassette.Record), cassette.WithTransport(toFake{srv})}})
		one := eval.Suite{Name: "record", Pricer: s.Pricer}
		for _, sc := range s.Cases {
			if sc.Name == c.Name {
				one.Cases = append(one.Cases, sc)
			}
		}
		r := eval.RunSuite(context.Background(), &one)
		if r.Cases[0].Status != eval.Passed {
			t.Errorf("recording %s: %s %v %s", c.Name, r.Cases[0].Status, r.Cases[0].Failures, r.Cases[0].Error)
		}
		if n := len(srv.Requests()); n != len(replies) {
			t.Errorf("recording %s: %d requests for %d scripted replies", c.Name, n, len(replies))
		}
	}
}

// TestCassettesAreCurrent records every case again against the scripted
// model and checks that the committed cassettes hold the same requests
// and answers: what the agent sends today is what was recorded. With
// LODE_EVAL_RECORD=1 it writes them into testdata/cassettes instead.
func TestCassettesAreCurrent(t *testing.T) {
	committed := filepath.Join("testdata", "cassettes")
	if os.Getenv("LODE_EVAL_RECORD") == "1" {
		record(t, committed)
		return
	}
	fresh := t.TempDir()
	record(t, fresh)
	files, err := filepath.Glob(filepath.Join(fresh, "*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no cassettes recorded: %v", err)
	}
	for _, f := range files {
		name := filepath.Base(f)
		want, got := exchanges(t, filepath.Join(committed, name)), exchanges(t, f)
		if len(want) != len(got) {
			t.Errorf("%s: %d interactions recorded, %d committed (LODE_EVAL_RECORD=1 records them again)", name, len(got), len(want))
			continue
		}
		for i := range want {
			if want[i] != got[i] {
				t.Errorf("%s: interaction %d differs from the committed one (LODE_EVAL_RECORD=1 records them again):\n got %s\nwant %s", name, i, got[i], want[i])
			}
		}
	}
}

// exchanges reads a cassette's requests and answers, without headers.
func exchanges(t *testing.T, path string) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var c struct {
		Interactions []struct {
			Request struct {
				Method, URL, Body string
			}
			Response struct {
				Body string
				Code int
			}
		}
	}
	if err := yaml.Unmarshal(b, &c); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	var out []string
	for _, in := range c.Interactions {
		out = append(out, in.Request.Method+" "+in.Request.URL+" "+in.Request.Body+" -> "+in.Response.Body)
	}
	return out
}

// TestJudgeReplaysOnlyItsTranscript: the judge's verdict replays for the
// transcript it was recorded on; another answer misses the cassette
// instead of getting a stale verdict.
func TestJudgeReplaysOnlyItsTranscript(t *testing.T) {
	judge := eval.Judge("clarity", ClarityRubric, Cassettes{Dir: filepath.Join("testdata", "cassettes")}.Model("judged-explanation.judge"))
	_, err := judge.Score(t.Context(), &eval.Outcome{Text: "It is 0.30000000000000004."})
	if !errors.Is(err, cassette.ErrNoInteraction) {
		t.Fatalf("a changed answer got %v, want a cassette miss", err)
	}
	if !strings.Contains(err.Error(), "0.30000000000000004") {
		t.Errorf("the miss does not show what differed: %v", err)
	}
}

// The command runs from any folder: its test data is built in.
func TestRunsFromAnotherFolder(t *testing.T) {
	t.Chdir(t.TempDir())
	if code, err := runMain(); code != 0 || err != nil {
		t.Fatalf("runMain = %d, %v", code, err)
	}
}
