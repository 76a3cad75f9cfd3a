//go:build linux

package bash_test

import (
	"context"
	"testing"

	"github.com/lodeworks/lode/x/tool/bash"
)

// BenchmarkRun measures a trivial command under each containment: what
// the containment costs a call on top of starting a shell.
func BenchmarkRun(b *testing.B) {
	for _, c := range layers {
		b.Run(string(c), func(b *testing.B) {
			if !bash.Available(c) {
				b.Skipf("this host does not allow %s", c)
			}
			sh, err := bash.New(bash.Sandbox{Dir: b.TempDir()}, bash.WithContainment(c))
			if err != nil {
				b.Fatal(err)
			}
			for b.Loop() {
				out, err := sh.Run(context.Background(), "true", 0)
				if err != nil || out.ExitCode != 0 || out.Escaped {
					b.Fatalf("%+v %v", out, err)
				}
			}
		})
	}
}
