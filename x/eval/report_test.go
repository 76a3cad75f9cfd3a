package eval_test

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lodeworks/lode/x/eval"
	"github.com/lodeworks/lode/x/provider/script"
)

// xss is a model answer that would run if the page did not escape it.
const xss = `<script>document.title="pwned"</script><img src=x onerror="document.title='pwned'">`

func sampleReport() *eval.Report {
	return &eval.Report{Suite: "sample", Cases: []eval.CaseReport{
		{Name: "adds", Model: "m1", Status: eval.Passed, Score: 1, Turns: 2, InputTokens: 200, OutputTokens: 40, CostUSD: 0.0024, DurationMS: 12.5,
			Calls: []eval.Call{{ID: "c1", Name: "calculator__eval", Arguments: `{"expression":"2+3"}`, Result: "5"}},
			Text:  "5", Transcript: []eval.Message{{Role: "user", Kind: "text", Text: "2+3?"}, {Role: "assistant", Kind: "text", Text: "5"}}},
		{Name: "hostile <b>name</b>", Status: eval.Failed, Turns: 1, Failures: []string{`text "` + xss + `" does not contain "ok"`},
			Calls: []eval.Call{{ID: "c1", Name: "filesystem__write", Arguments: `{"content":"` + strings.ReplaceAll(xss, `"`, `\"`) + `"}`,
				Result: xss, IsError: true, Refused: true, Rule: "reader allow"}},
			Text: xss, Answer: []byte(`{"html":"</pre><script>alert(1)</script>"}`), Error: xss,
			Transcript: []eval.Message{{Role: "user", Kind: "text", Text: xss}, {Role: "assistant", Kind: "text", Text: xss}}},
		{Name: "live", Status: eval.Skipped, Skip: "eval: case skipped: a live model runs only with LODE_EVAL_LIVE=1"},
	}}
}

func TestWriteTable(t *testing.T) {
	var b strings.Builder
	if err := sampleReport().WriteTable(&b); err != nil {
		t.Fatal(err)
	}
	want := `CASE                 MODEL  STATUS  SCORE  TURNS  CALLS  TOKENS  COST     TIME
adds                 m1     pass    1.00   2      1      240     $0.0024  12.5ms
hostile <b>name</b>  -      fail    0.00   1      1      0       $0.0000  0.0ms
live                 -      skip    0.00   0      0      0       $0.0000  0.0ms
sample: 1 passed, 1 failed, 1 skipped
  hostile <b>name</b>: text "` + xss + `" does not contain "ok"
  live: skipped: eval: case skipped: a live model runs only with LODE_EVAL_LIVE=1
`
	if b.String() != want {
		t.Errorf("table:\n%s\nwant:\n%s", b.String(), want)
	}
}

func TestReportFilesRoundTrip(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "out")
	paths, err := sampleReport().WriteFiles(dir)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{filepath.Join(dir, "report.json"), filepath.Join(dir, "report.html"), filepath.Join(dir, "report.txt")}
	if strings.Join(paths, " ") != strings.Join(want, " ") {
		t.Errorf("paths %q, want %q", paths, want)
	}
	back, err := eval.ReadReport(paths[0])
	if err != nil {
		t.Fatal(err)
	}
	var a, b bytes.Buffer
	_ = sampleReport().WriteJSON(&a)
	_ = back.WriteJSON(&b)
	if a.String() != b.String() {
		t.Errorf("read back:\n%s\nwrote:\n%s", b.String(), a.String())
	}
	bad := filepath.Join(t.TempDir(), "bad.json")
	_ = os.WriteFile(bad, []byte("{"), 0o600)
	if _, err := eval.ReadReport(bad); err == nil || err.Error() != "eval: "+bad+" is not a report: unexpected end of JSON input" {
		t.Errorf("bad report: %v", err)
	}
	if _, err := eval.ReadReport(filepath.Join(dir, "none.json")); err == nil ||
		err.Error() != "eval: open "+filepath.Join(dir, "none.json")+": no such file or directory" {
		t.Errorf("missing report: %v", err)
	}
}

// TestHTMLEscapes: no byte a model or tool wrote reaches the page as
// markup; the page allows no script either way.
func TestHTMLEscapes(t *testing.T) {
	var b strings.Builder
	if err := sampleReport().WriteHTML(&b); err != nil {
		t.Fatal(err)
	}
	page := b.String()
	for _, bad := range []string{"<script>", "<img", "<b>name", "</pre><script>"} {
		if strings.Contains(page, bad) {
			t.Errorf("the page holds %q unescaped", bad)
		}
	}
	for _, good := range []string{"&lt;script&gt;", `content="default-src 'none'; style-src 'unsafe-inline'"`,
		`<section class="case" id="case-1" data-status="pass">`, `<section class="case" id="case-2" data-status="fail">`,
		`<section class="case" id="case-3" data-status="skip">`} {
		if !strings.Contains(page, good) {
			t.Errorf("the page lacks %q", good)
		}
	}
	if n := strings.Count(page, `<section class="case"`); n != 3 {
		t.Errorf("%d sections, want 3", n)
	}
}

func TestDiff(t *testing.T) {
	before := &eval.Report{Suite: "s", Cases: []eval.CaseReport{
		{Name: "a", Status: eval.Passed, Score: 1, Turns: 2, InputTokens: 100},
		{Name: "b", Status: eval.Failed, Score: 0},
		{Name: "c", Status: eval.Passed, Score: 0.9},
		{Name: "d", Status: eval.Passed, Score: 0.5},
		{Name: "gone", Status: eval.Passed, Score: 1},
		{Name: "e", Status: eval.Passed, Score: 1},
		{Name: "f", Status: eval.Skipped},
	}}
	after := &eval.Report{Suite: "s", Cases: []eval.CaseReport{
		{Name: "a", Status: eval.Passed, Score: 1, Turns: 3, InputTokens: 150},
		{Name: "b", Status: eval.Passed, Score: 1},
		{Name: "c", Status: eval.Passed, Score: 0.6},
		{Name: "d", Status: eval.Passed, Score: 0.75},
		{Name: "e", Status: eval.Failed, Score: 0},
		{Name: "f", Status: eval.Passed, Score: 1},
		{Name: "new", Status: eval.Failed},
	}}
	var b strings.Builder
	if err := eval.WriteDiff(&b, eval.Diff(before, after)); err != nil {
		t.Fatal(err)
	}
	want := `CASE  BEFORE     AFTER      CHANGE  WHY
a     pass 1.00  pass 1.00  same    turns 2 → 3, tokens 100 → 150
b     fail 0.00  pass 1.00  better  fail → pass
c     pass 0.90  pass 0.60  worse   score 0.90 → 0.60
d     pass 0.50  pass 0.75  better  score 0.50 → 0.75
e     pass 1.00  fail 0.00  worse   pass → fail
f     skip 0.00  pass 1.00  same    skip → pass
new   -          fail 0.00  new     fail
gone  pass 1.00  -          gone    pass
2 better, 2 worse, 8 cases
`
	if b.String() != want {
		t.Errorf("diff:\n%s\nwant:\n%s", b.String(), want)
	}
}

func TestCompare(t *testing.T) {
	a := &eval.Report{Cases: []eval.CaseReport{
		{Name: "x", Status: eval.Passed, Score: 1, Turns: 2, InputTokens: 100, OutputTokens: 20},
		{Name: "y", Status: eval.Failed, Turns: 1, InputTokens: 50},
	}}
	b := &eval.Report{Cases: []eval.CaseReport{
		{Name: "y", Status: eval.Passed, Score: 1, Turns: 2, InputTokens: 300},
		{Name: "z", Status: eval.Skipped},
	}}
	var out strings.Builder
	if err := eval.Compare(&out, eval.Labelled{Label: "gpt-4o", Report: a}, eval.Labelled{Label: "gpt-5", Report: b}); err != nil {
		t.Fatal(err)
	}
	want := `CASE    gpt-4o               gpt-5
x       pass 1.00 2t 120tok  -
y       fail 0.00 1t 50tok   pass 1.00 2t 300tok
z       -                    skip 0.00 0t 0tok
passed  1/2                  1/2
`
	if out.String() != want {
		t.Errorf("compare:\n%s\nwant:\n%s", out.String(), want)
	}
}

// TestRunFailsOnRegression runs a suite inside a test of its own (this
// binary, again) whose baseline the case passed; now it fails, and the
// subtest says it regressed.
func TestRunFailsOnRegression(t *testing.T) {
	if os.Getenv("LODE_EVAL_HELPER") == "1" {
		eval.Run(t, eval.Suite{Name: "helper", ReportDir: os.Getenv("LODE_EVAL_HELPER_DIR"), Cases: []eval.Case{
			{Name: "greets", Prompt: "hi", Model: eval.Scripted("", script.Text("bye")), Expect: []eval.Expectation{eval.TextContains("hello")}},
			{Name: "steady", Prompt: "hi", Model: eval.Scripted("", script.Text("hello"))},
		}})
		return
	}
	dir := t.TempDir()
	base := filepath.Join(dir, "base.json")
	baseline := &eval.Report{Suite: "helper", Cases: []eval.CaseReport{
		{Name: "greets", Status: eval.Passed, Score: 1}, {Name: "steady", Status: eval.Passed, Score: 1}}}
	f, _ := os.Create(base)
	_ = baseline.WriteJSON(f)
	_ = f.Close()
	cmd := exec.Command(os.Args[0], "-test.run=^TestRunFailsOnRegression$", "-test.v")
	cmd.Env = append(os.Environ(), "LODE_EVAL_HELPER=1", "LODE_EVAL_BASELINE="+base, "LODE_EVAL_HELPER_DIR="+dir)
	out, err := cmd.CombinedOutput()
	if err == nil {
		t.Fatalf("the suite passed:\n%s", out)
	}
	for _, want := range []string{
		`text "bye" does not contain "hello"`,
		"regression against the baseline: pass → fail",
		"--- FAIL: TestRunFailsOnRegression/greets",
		"--- PASS: TestRunFailsOnRegression/steady",
	} {
		if !strings.Contains(string(out), want) {
			t.Errorf("the output lacks %q:\n%s", want, out)
		}
	}
	r, err := eval.ReadReport(filepath.Join(dir, "report.json"))
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Cases) != 2 || r.Cases[0].Status != eval.Failed || r.Cases[1].Status != eval.Passed {
		t.Errorf("report: %+v", r.Cases)
	}
}
