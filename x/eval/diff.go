package eval

import (
	"fmt"
	"io"
	"text/tabwriter"
)

// Verdict words of a Change.
const (
	Better = "better"
	Worse  = "worse"
	Same   = "same"
	Added  = "new"
	Gone   = "gone"
)

// Change is how one case moved between two reports.
type Change struct {
	Case          string
	Before, After *CaseReport
	// Verdict is Better, Worse, Same, Added or Gone.
	Verdict string
	// Why says what moved: the status, the score, or the budgets.
	Why string
}

// Diff compares two runs of a suite case by case (by name): a case is
// worse when it passed and now fails or its score fell, better the other
// way round, and the same otherwise (what it used is in Why). The changes
// come in b's order, then the cases b no longer has.
func Diff(a, b *Report) []Change {
	before := map[string]*CaseReport{}
	for i := range a.Cases {
		before[a.Cases[i].Name] = &a.Cases[i]
	}
	var out []Change
	seen := map[string]bool{}
	for i := range b.Cases {
		after := &b.Cases[i]
		seen[after.Name] = true
		prev, ok := before[after.Name]
		if !ok {
			out = append(out, Change{Case: after.Name, After: after, Verdict: Added, Why: string(after.Status)})
			continue
		}
		out = append(out, compareCase(prev, after))
	}
	for i := range a.Cases {
		if !seen[a.Cases[i].Name] {
			out = append(out, Change{Case: a.Cases[i].Name, Before: &a.Cases[i], Verdict: Gone, Why: string(a.Cases[i].Status)})
		}
	}
	return out
}

func compareCase(a, b *CaseReport) Change {
	c := Change{Case: b.Name, Before: a, After: b, Verdict: Same}
	switch {
	case a.Status == Passed && b.Status == Failed:
		c.Verdict, c.Why = Worse, "pass → fail"
	case a.Status == Failed && b.Status == Passed:
		c.Verdict, c.Why = Better, "fail → pass"
	case a.Status != b.Status:
		c.Why = fmt.Sprintf("%s → %s", a.Status, b.Status)
	case b.Score < a.Score:
		c.Verdict, c.Why = Worse, fmt.Sprintf("score %.2f → %.2f", a.Score, b.Score)
	case b.Score > a.Score:
		c.Verdict, c.Why = Better, fmt.Sprintf("score %.2f → %.2f", a.Score, b.Score)
	default:
		c.Why = fmt.Sprintf("turns %d → %d, tokens %d → %d", a.Turns, b.Turns, a.Tokens(), b.Tokens())
	}
	return c
}

// WriteDiff writes changes as a table, then a line counting them.
func WriteDiff(w io.Writer, changes []Change) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "CASE\tBEFORE\tAFTER\tCHANGE\tWHY\n")
	var better, worse int
	for _, c := range changes {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", oneLine(c.Case), cell(c.Before), cell(c.After), c.Verdict, c.Why)
		switch c.Verdict {
		case Better:
			better++
		case Worse:
			worse++
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	cases := "cases"
	if len(changes) == 1 {
		cases = "case"
	}
	_, err := fmt.Fprintf(w, "%d better, %d worse, %d %s\n", better, worse, len(changes), cases)
	return err
}

func cell(c *CaseReport) string {
	if c == nil {
		return "-"
	}
	return fmt.Sprintf("%s %.2f", c.Status, c.Score)
}

// Labelled is a report with the name of what it ran against, a column
// of Compare.
type Labelled struct {
	Label  string
	Report *Report
}

// Compare writes the same suite's runs side by side, one column per
// report (a model, a prompt version), one row per case: status, score,
// turns and tokens. A case missing from a report shows "-".
func Compare(w io.Writer, runs ...Labelled) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprint(tw, "CASE")
	for _, r := range runs {
		fmt.Fprintf(tw, "\t%s", oneLine(r.Label))
	}
	fmt.Fprintln(tw)
	var names []string
	seen := map[string]bool{}
	index := make([]map[string]*CaseReport, len(runs))
	for i, r := range runs {
		index[i] = map[string]*CaseReport{}
		for j := range r.Report.Cases {
			c := &r.Report.Cases[j]
			index[i][c.Name] = c
			if !seen[c.Name] {
				seen[c.Name] = true
				names = append(names, c.Name)
			}
		}
	}
	for _, n := range names {
		fmt.Fprint(tw, oneLine(n))
		for i := range runs {
			c, ok := index[i][n]
			if !ok {
				fmt.Fprint(tw, "\t-")
				continue
			}
			fmt.Fprintf(tw, "\t%s %.2f %dt %dtok", c.Status, c.Score, c.Turns, c.Tokens())
		}
		fmt.Fprintln(tw)
	}
	fmt.Fprint(tw, "passed")
	for _, r := range runs {
		fmt.Fprintf(tw, "\t%d/%d", len(r.Report.Cases)-r.Report.Failed()-skipped(r.Report), len(r.Report.Cases))
	}
	fmt.Fprintln(tw)
	return tw.Flush()
}

func skipped(r *Report) int {
	n := 0
	for _, c := range r.Cases {
		if c.Status == Skipped {
			n++
		}
	}
	return n
}
