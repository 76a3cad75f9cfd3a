package cli

import (
	"strings"
	"testing"
)

func TestServeA2AWithoutTheA2ABuildSaysWhichHasIt(t *testing.T) {
	r := lode(t, t.TempDir(), nil, "", "serve", "--a2a", "127.0.0.1:0")
	if r.code != exitUsage || !strings.Contains(r.stderr, "x/a2a/cmd/lode") {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
}

func TestServeA2AFlags(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"serve", "--a2a", "127.0.0.1:0", "--http", "127.0.0.1:0"}, "two doors"},
		{[]string{"serve", "--store", "x"}, "--store needs --a2a"},
	} {
		r := lode(t, t.TempDir(), nil, "", tc.args...)
		if r.code != exitUsage || !strings.Contains(r.stderr, tc.want) {
			t.Errorf("%v: exit %d: %s", tc.args, r.code, r.stderr)
		}
	}
}
