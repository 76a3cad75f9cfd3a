package cli

import (
	"strings"
	"testing"

	"github.com/lodeworks/lode/x/provider/script"
)

func TestHistorySection(t *testing.T) {
	cases := []struct {
		name   string
		yaml   string
		budget int    // 0: no policy
		err    string // exact error, or a prefix for parse errors
	}{
		{"absent", "model:\n  name: gpt-4o\n", 0, ""},
		{"budget", "model:\n  name: m\nhistory:\n  budget: 3000\n  keep: 2\n  summarise: true\n", 3000, ""},
		{"blocks", "model:\n  name: m\nhistory:\n  budget: 3000\n  blocks: 16\n", 3000, ""},
		{"negative blocks", "model:\n  name: m\nhistory:\n  budget: 3000\n  blocks: -2\n", 0,
			"lode.yaml: history: invalid option: blocks -2 is negative: give a number of turns, or 0 to slide the window turn by turn"},
		{"window of a known model", "model:\n  name: gpt-4\nhistory:\n  reserve: 1192\n", 7000, ""},
		{"unknown model and no budget", "model:\n  name: mine\nhistory:\n  keep: 3\n", 0,
			`lode.yaml: history: invalid option: no budget: the context window of model "mine" is not known; set WithBudget`},
		{"negative budget", "model:\n  name: m\nhistory:\n  budget: -5\n", 0,
			"lode.yaml: history: invalid option: budget -5 is negative: give a number of tokens, or 0 for the model's window"},
		{"unknown key", "model:\n  name: m\nhistory:\n  budjet: 5\n", 0, "lode.yaml:4: unknown key \"budjet\""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cfg, err := parseConfig("lode.yaml", []byte(c.yaml))
			if err != nil {
				if c.err == "" || !strings.HasPrefix(err.Error(), c.err) {
					t.Fatalf("parse: %v, want %q", err, c.err)
				}
				return
			}
			prov := script.Play()
			pol, sendTo, err := historyPolicy(cfg, prov, nil)
			if c.err != "" {
				if err == nil || err.Error() != c.err {
					t.Fatalf("err = %v, want %q", err, c.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if c.budget == 0 {
				if pol != nil || sendTo != prov {
					t.Fatal("a policy without a history: section")
				}
				return
			}
			if pol.Budget() != c.budget || sendTo == nil {
				t.Fatalf("budget = %d, want %d", pol.Budget(), c.budget)
			}
			if pol.Blocks() != cfg.History.Blocks {
				t.Fatalf("blocks = %d, want %d", pol.Blocks(), cfg.History.Blocks)
			}
		})
	}
}
