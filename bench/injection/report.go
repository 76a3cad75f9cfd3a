package injection

import (
	"context"
	"fmt"
	"strings"
)

// Row is one environment's figures.
type Row struct {
	Env string

	// The task model on each user task, no injection.
	Tasks int
	// DoneOff and DoneOn count tasks finished without a person, with the
	// flow rules off and on.
	DoneOff, DoneOn int
	// AskedOff and AskedOn count tasks that asked a person.
	AskedOff, AskedOn int
	// RefusedOn counts tasks with a call a flow rule refused.
	RefusedOn int

	// The obedient model on every user task × injection task.
	Pairs int
	// Read counts pairs whose model read the injection.
	Read int
	// AchievedOff and AchievedOn count the attacker's goals achieved.
	AchievedOff, AchievedOn int
	// AttackAskedOn counts pairs that asked a person, rules on.
	AttackAskedOn int
	// AttackDoneOff and AttackDoneOn count user tasks still finished
	// without a person.
	AttackDoneOff, AttackDoneOn int
}

func (r *Row) add(o Row) {
	r.Tasks += o.Tasks
	r.DoneOff += o.DoneOff
	r.DoneOn += o.DoneOn
	r.AskedOff += o.AskedOff
	r.AskedOn += o.AskedOn
	r.RefusedOn += o.RefusedOn
	r.Pairs += o.Pairs
	r.Read += o.Read
	r.AchievedOff += o.AchievedOff
	r.AchievedOn += o.AchievedOn
	r.AttackAskedOn += o.AttackAskedOn
	r.AttackDoneOff += o.AttackDoneOff
	r.AttackDoneOn += o.AttackDoneOn
}

// Report is the benchmark's figures: a row per environment, their total,
// the environments again with their quarantined reads offered, and the
// total with those rows in place of the plain ones.
type Report struct {
	Rows       []Row
	Total      Row
	Quarantine []Row
	TotalQ     Row
}

// Measure runs every suite: each user task with the task model and no
// injection, and each pair of user task and injection task with the
// obedient model, with the flow rules off and on.
func Measure(ctx context.Context) (*Report, error) {
	rep := &Report{Total: Row{Env: "total"}, TotalQ: Row{Env: "total, quarantined reads where offered"}}
	for _, s := range Suites() {
		r, err := measure(ctx, s, false)
		if err != nil {
			return nil, err
		}
		rep.Rows = append(rep.Rows, r)
		rep.Total.add(r)
		if s.quarantine {
			r, err = measure(ctx, s, true)
			if err != nil {
				return nil, err
			}
			r.Env = s.Name + ", quarantined reads"
			rep.Quarantine = append(rep.Quarantine, r)
		}
		rep.TotalQ.add(r)
	}
	return rep, nil
}

func measure(ctx context.Context, s *Suite, quarantine bool) (Row, error) {
	r := Row{Env: s.Name}
	for _, task := range s.Tasks {
		r.Tasks++
		for _, on := range []bool{false, true} {
			o, err := Run(ctx, s, task, nil, Config{Model: Task, On: on, Quarantine: quarantine})
			if err != nil {
				return r, err
			}
			done, asked := count(o.WithoutPerson()), count(len(o.Approvals) > 0)
			if on {
				r.DoneOn += done
				r.AskedOn += asked
				r.RefusedOn += count(o.Refused > 0)
			} else {
				r.DoneOff += done
				r.AskedOff += asked
			}
		}
		for i := range s.Injections {
			r.Pairs++
			for _, on := range []bool{false, true} {
				o, err := Run(ctx, s, task, &s.Injections[i], Config{Model: Obedient, On: on, Quarantine: quarantine})
				if err != nil {
					return r, err
				}
				if on {
					r.AchievedOn += count(o.Achieved)
					r.AttackAskedOn += count(len(o.Approvals) > 0)
					r.AttackDoneOn += count(o.WithoutPerson())
				} else {
					r.Read += count(o.Read)
					r.AchievedOff += count(o.Achieved)
					r.AttackDoneOff += count(o.WithoutPerson())
				}
			}
		}
	}
	return r, nil
}

func count(b bool) int {
	if b {
		return 1
	}
	return 0
}

// Markdown renders the report as two tables, as BENCHMARKS.md shows them.
func (rep *Report) Markdown() string {
	var b strings.Builder
	b.WriteString("Utility: the task model on each user task, no injection.\n\n")
	b.WriteString("| environment | user tasks | done without a person, rules off | rules on | asked a person, off | on | a send refused, on |\n")
	b.WriteString("|---|---|---|---|---|---|---|\n")
	util := func(r Row, bold bool) {
		f := cell(bold)
		fmt.Fprintf(&b, "| %s | %d | %s | %s | %d | %d | %d |\n", f(r.Env), r.Tasks,
			f(pct(r.DoneOff, r.Tasks)), f(pct(r.DoneOn, r.Tasks)), r.AskedOff, r.AskedOn, r.RefusedOn)
	}
	for _, r := range rep.Rows {
		util(r, false)
	}
	util(rep.Total, true)
	for _, r := range rep.Quarantine {
		util(r, false)
	}
	util(rep.TotalQ, true)
	b.WriteString("\nAttacks: the obedient model on every user task × injection task.\n\n")
	b.WriteString("| environment | pairs | injection read | goals achieved, rules off | rules on | asked a person, on | task done without a person, off | on |\n")
	b.WriteString("|---|---|---|---|---|---|---|---|\n")
	attack := func(r Row, bold bool) {
		f := cell(bold)
		fmt.Fprintf(&b, "| %s | %d | %d | %s | %s | %d | %s | %s |\n", f(r.Env), r.Pairs, r.Read,
			f(pct(r.AchievedOff, r.Pairs)), f(pct(r.AchievedOn, r.Pairs)), r.AttackAskedOn,
			pct(r.AttackDoneOff, r.Pairs), pct(r.AttackDoneOn, r.Pairs))
	}
	for _, r := range rep.Rows {
		attack(r, false)
	}
	attack(rep.Total, true)
	for _, r := range rep.Quarantine {
		attack(r, false)
	}
	attack(rep.TotalQ, true)
	return b.String()
}

func cell(bold bool) func(string) string {
	return func(s string) string {
		if bold {
			return "**" + s + "**"
		}
		return s
	}
}

// pct writes n of all, with its share.
func pct(n, all int) string {
	if all == 0 {
		return "0"
	}
	return fmt.Sprintf("%d (%d%%)", n, (n*100+all/2)/all)
}
