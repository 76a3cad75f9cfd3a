package eval

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"
)

// Status is a case's result.
type Status string

// The statuses of a case.
const (
	Passed  Status = "pass"
	Failed  Status = "fail"
	Skipped Status = "skip"
)

// Report is one run of a suite, as report.json holds it.
type Report struct {
	Suite string       `json:"suite"`
	Cases []CaseReport `json:"cases"`
}

// CaseReport is one case's result.
type CaseReport struct {
	Name   string `json:"name"`
	Model  string `json:"model,omitempty"`
	Status Status `json:"status"`
	// Score is the mean of the scorers' values, or 1 for a pass and 0 for
	// a failure when the case has no scorer.
	Score    float64  `json:"score"`
	Failures []string `json:"failures,omitempty"`
	// Expectations describe what the case checks.
	Expectations []string `json:"expectations,omitempty"`
	// Skip says why a skipped case did not run.
	Skip         string          `json:"skip,omitempty"`
	Scores       []Score         `json:"scores,omitempty"`
	Turns        int             `json:"turns"`
	InputTokens  int64           `json:"input_tokens"`
	OutputTokens int64           `json:"output_tokens"`
	CostUSD      float64         `json:"cost_usd"`
	DurationMS   float64         `json:"duration_ms"`
	Calls        []Call          `json:"calls,omitempty"`
	Text         string          `json:"text,omitempty"`
	Answer       json.RawMessage `json:"answer,omitempty"`
	Error        string          `json:"error,omitempty"`
	Transcript   []Message       `json:"transcript,omitempty"`
}

// Tokens is input and output tokens added up.
func (c CaseReport) Tokens() int64 { return c.InputTokens + c.OutputTokens }

// RunSuite runs every case of s in order, outside a test (lode eval does),
// and reports them.
func RunSuite(ctx context.Context, s *Suite) *Report {
	r := &Report{Suite: s.Name}
	for i := range s.Cases {
		r.Cases = append(r.Cases, evaluate(ctx, s, &s.Cases[i]))
	}
	return r
}

// evaluate runs one case, checks it and grades it.
func evaluate(ctx context.Context, s *Suite, c *Case) CaseReport {
	o, skip := runCase(ctx, s, c)
	cr := CaseReport{Name: c.Name, Model: o.Model, Turns: o.Turns,
		InputTokens: o.Usage.InputTokens, OutputTokens: o.Usage.OutputTokens, CostUSD: o.Usage.CostUSD,
		DurationMS: float64(o.Duration.Microseconds()) / 1000, Calls: o.Calls, Text: o.Text, Answer: o.Answer}
	if o.Err != nil {
		cr.Error = o.Err.Error()
	}
	if o.Thread != nil {
		cr.Transcript = Transcript(o.Thread)
	}
	if skip {
		cr.Status, cr.Skip = Skipped, cr.Error
		return cr
	}
	for _, e := range c.Expect {
		cr.Expectations = append(cr.Expectations, e.String())
	}
	cr.Failures = check(o, c.Expect)
	var scoreFails []string
	if o.Err == nil || len(cr.Failures) == 0 {
		cr.Scores, scoreFails = scoreAll(ctx, o, c.Scorers)
	}
	cr.Failures = append(cr.Failures, scoreFails...)
	cr.Status = Passed
	if len(cr.Failures) > 0 {
		cr.Status = Failed
	}
	switch {
	case len(cr.Scores) > 0:
		var sum float64
		for _, sc := range cr.Scores {
			sum += sc.Value
		}
		cr.Score = sum / float64(len(cr.Scores))
	case cr.Status == Passed:
		cr.Score = 1
	}
	return cr
}

// Failed counts the failed cases.
func (r *Report) Failed() int {
	n := 0
	for _, c := range r.Cases {
		if c.Status == Failed {
			n++
		}
	}
	return n
}

// WriteTable writes the report as a table for a terminal: one row per
// case, then the failures.
func (r *Report) WriteTable(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "CASE\tMODEL\tSTATUS\tSCORE\tTURNS\tCALLS\tTOKENS\tCOST\tTIME\n")
	var pass, fail, skip int
	for _, c := range r.Cases {
		switch c.Status {
		case Passed:
			pass++
		case Failed:
			fail++
		default:
			skip++
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%.2f\t%d\t%d\t%d\t$%.4f\t%.1fms\n", oneLine(c.Name), dash(c.Model), c.Status,
			c.Score, c.Turns, len(c.Calls), c.Tokens(), c.CostUSD, c.DurationMS)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintf(w, "%s: %d passed, %d failed, %d skipped\n", r.Suite, pass, fail, skip)
	for _, c := range r.Cases {
		for _, f := range c.Failures {
			fmt.Fprintf(w, "  %s: %s\n", oneLine(c.Name), oneLine(f))
		}
		if c.Skip != "" {
			fmt.Fprintf(w, "  %s: skipped: %s\n", oneLine(c.Name), oneLine(c.Skip))
		}
	}
	return nil
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return oneLine(s)
}

// oneLine keeps a table cell on one line.
func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}

// WriteJSON writes the report as indented JSON.
func (r *Report) WriteJSON(w io.Writer) error {
	e := json.NewEncoder(w)
	e.SetIndent("", "  ")
	return e.Encode(r)
}

// ReadReport reads a report.json.
func ReadReport(path string) (*Report, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("eval: %w", err)
	}
	var r Report
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, fmt.Errorf("eval: %s is not a report: %w", path, err)
	}
	return &r, nil
}

// WriteFiles writes report.json, report.html and report.txt into dir,
// creating it, and returns their paths.
func (r *Report) WriteFiles(dir string) ([]string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("eval: report: %w", err)
	}
	writers := []struct {
		name  string
		write func(io.Writer) error
	}{{"report.json", r.WriteJSON}, {"report.html", r.WriteHTML}, {"report.txt", r.WriteTable}}
	var paths []string
	for _, wr := range writers {
		p := filepath.Join(dir, wr.name)
		f, err := os.Create(p)
		if err != nil {
			return paths, fmt.Errorf("eval: report: %w", err)
		}
		err = wr.write(f)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return paths, fmt.Errorf("eval: report %s: %w", p, err)
		}
		paths = append(paths, p)
	}
	return paths, nil
}
