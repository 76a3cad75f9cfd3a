package cli

import (
	"strings"
	"testing"
)

func TestCounts(t *testing.T) {
	cases := []struct {
		n    int
		want string
	}{
		{0, "0 tool calls wait"},
		{1, "1 tool call waits"},
		{2, "2 tool calls wait"},
		{1000, "1000 tool calls wait"},
	}
	for _, c := range cases {
		if got := plural(c.n, "tool call") + " " + agree(c.n, "waits", "wait"); got != c.want {
			t.Errorf("%d: %q, want %q", c.n, got, c.want)
		}
	}
}

// lode web keeps its threads in .lode/threads without --store: its help
// must not say what run's says, that none keeps them in memory.
func TestWebHelpSaysWhereThreadsGo(t *testing.T) {
	r := lode(t, t.TempDir(), nil, "", "web", "-h")
	help := r.stdout + r.stderr
	if !strings.Contains(help, "(default: store in lode.yaml, else .lode/threads)") || strings.Contains(help, "in memory") {
		t.Fatalf("lode web -h:\n%s", help)
	}
}
