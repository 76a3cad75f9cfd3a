package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestEval(t *testing.T) {
	dir := t.TempDir()
	suite, err := filepath.Abs(filepath.Join("..", "..", "examples", "evals", "suite.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	before, page := filepath.Join(dir, "before.json"), filepath.Join(dir, "report.html")
	r := lode(t, "", nil, "", "eval", "--json", before, "--html", page, suite)
	if r.code != 0 || !strings.Contains(r.stdout, "packs-from-yaml: 3 passed, 0 failed, 0 skipped\n") || r.stderr != "" {
		t.Fatalf("lode eval: %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	html, err := os.ReadFile(page)
	if err != nil || strings.Count(string(html), `<section class="case"`) != 3 {
		t.Errorf("the HTML report: %v, %d sections", err, strings.Count(string(html), `<section class="case"`))
	}

	// The same report with one case failing and one scoring better.
	var rep map[string]any
	b, _ := os.ReadFile(before)
	if err := json.Unmarshal(b, &rep); err != nil {
		t.Fatal(err)
	}
	cases := rep["cases"].([]any)
	cases[1].(map[string]any)["status"] = "fail"
	cases[1].(map[string]any)["score"] = 0
	after := filepath.Join(dir, "after.json")
	b, _ = json.Marshal(rep)
	_ = os.WriteFile(after, b, 0o600)

	r = lode(t, "", nil, "", "eval", "diff", before, after)
	want := `CASE                  BEFORE     AFTER      CHANGE  WHY
calc-multiply         pass 1.00  pass 1.00  same    turns 2 → 2, tokens 419 → 419
read-notes            pass 1.00  fail 0.00  worse   pass → fail
reader-may-not-write  pass 1.00  pass 1.00  same    turns 2 → 2, tokens 0 → 0
0 better, 1 worse, 3 cases
`
	if r.code != 1 || r.stdout != want || r.stderr != "lode: eval: 1 case got worse\n" {
		t.Errorf("lode eval diff: %d\n%s\nwant\n%s\nstderr %q", r.code, r.stdout, want, r.stderr)
	}
	r = lode(t, "", nil, "", "eval", "diff", after, before)
	if r.code != 0 || !strings.HasSuffix(r.stdout, "1 better, 0 worse, 3 cases\n") {
		t.Errorf("lode eval diff, the other way: %d\n%s%s", r.code, r.stdout, r.stderr)
	}
}

func TestEvalBadInputs(t *testing.T) {
	dir := t.TempDir()
	failing := filepath.Join(dir, "failing.yaml")
	_ = os.WriteFile(failing, []byte("name: f\ncases:\n  - name: greets\n    prompt: hi\n    model: {script: [{text: bye}]}\n    expect: {text_contains: [hello]}\n"), 0o600)
	bad := filepath.Join(dir, "bad.yaml")
	_ = os.WriteFile(bad, []byte("cases: []\n"), 0o600)
	notReport := filepath.Join(dir, "x.json")
	_ = os.WriteFile(notReport, []byte("[1]"), 0o600)
	cases := []struct {
		name   string
		args   []string
		code   int
		stderr string
	}{
		{"no suite", []string{"eval"}, 2, "lode: lode eval takes one suite file …\n"},
		{"two suites", []string{"eval", "a.yaml", "b.yaml"}, 2, "lode: lode eval takes one suite file …\n"},
		{"failing case", []string{"eval", failing}, 1, "lode: eval: 1 of 1 cases failed\n"},
		{"bad suite", []string{"eval", bad}, 1, "lode: eval: bad suite file: " + bad + " has no cases\n"},
		{"diff of one", []string{"eval", "diff", "a.json"}, 2, "lode: lode eval diff takes two reports: BEFORE.json AFTER.json\n"},
		{"diff of no report", []string{"eval", "diff", notReport, notReport}, 1,
			"lode: eval: " + notReport + " is not a report: json: cannot unmarshal array into Go value of type eval.Report\n"},
		{"unknown flag", []string{"eval", "--jsn", "x", failing}, 2, "lode: flag provided but not defined: -jsn (did you mean --json?)\n"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := lode(t, "", nil, "", c.args...)
			if r.code != c.code || !strings.HasSuffix(r.stderr, c.stderr) {
				t.Errorf("%v: exit %d, stderr %q; want %d, %q", c.args, r.code, r.stderr, c.code, c.stderr)
			}
		})
	}
	r := lode(t, "", nil, "", "eval", failing)
	if !strings.Contains(r.stdout, `greets: text "bye" does not contain "hello"`) {
		t.Errorf("the table does not say what failed:\n%s", r.stdout)
	}
}
