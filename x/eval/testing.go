package eval

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Run runs suite inside a test: one subtest per case, which fails with
// each failure of the case (and a regression against the Baseline) or is
// skipped with its reason. It then logs the table, writes the reports
// (see Suite.ReportDir) and returns the report.
func Run(t *testing.T, suite Suite) *Report {
	t.Helper()
	var base map[string]*CaseReport
	path := suite.Baseline
	if path == "" {
		path = os.Getenv("LODE_EVAL_BASELINE")
	}
	if path != "" {
		b, err := ReadReport(path)
		if err != nil {
			t.Fatalf("%v", err)
		}
		base = map[string]*CaseReport{}
		for i := range b.Cases {
			base[b.Cases[i].Name] = &b.Cases[i]
		}
	}
	r := &Report{Suite: suite.Name}
	for i := range suite.Cases {
		c := &suite.Cases[i]
		t.Run(c.Name, func(t *testing.T) {
			cr := evaluate(t.Context(), &suite, c)
			if prev, ok := base[cr.Name]; ok && cr.Status != Skipped {
				if ch := compareCase(prev, &cr); ch.Verdict == Worse {
					cr.Failures = append(cr.Failures, "regression against the baseline: "+ch.Why)
					cr.Status = Failed
				}
			}
			r.Cases = append(r.Cases, cr)
			switch cr.Status {
			case Skipped:
				t.Skip(cr.Skip)
			case Failed:
				for _, f := range cr.Failures {
					t.Error(f)
				}
			}
		})
	}
	var table strings.Builder
	_ = r.WriteTable(&table)
	t.Log("\n" + table.String())
	dir := suite.ReportDir
	if dir == "" {
		dir = os.Getenv("LODE_EVAL_REPORT")
	}
	if dir == "" {
		dir = filepath.Join(os.TempDir(), "lode-eval", safeName(suite.Name))
	}
	paths, err := r.WriteFiles(dir)
	if err != nil {
		t.Errorf("%v", err)
	}
	t.Logf("reports: %s", strings.Join(paths, ", "))
	return r
}

// safeName keeps a suite's name usable as a folder name.
func safeName(s string) string {
	if s == "" {
		return "suite"
	}
	return strings.Map(func(r rune) rune {
		if r == '-' || r == '_' || r == '.' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' {
			return r
		}
		return '_'
	}, s)
}
