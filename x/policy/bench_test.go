package policy_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/lodeworks/lode/tool"
	"github.com/lodeworks/lode/x/policy"
)

// BenchmarkFilter is the policy's cost per turn: deciding 100 tools for a
// caller with two roles.
func BenchmarkFilter(b *testing.B) {
	reg := tool.NewRegistry()
	for i := range 100 {
		if err := reg.Register(tool.Tool{Name: fmt.Sprintf("fs_tool_%03d", i)}, func(context.Context, tool.Sandbox, map[string]any) (any, error) { return nil, nil }); err != nil {
			b.Fatal(err)
		}
	}
	filter := policy.NewEnforcer(reg, mustParse(b, testPolicy)).Filter()
	st := thread([]string{"viewer", "editor"})
	tools := reg.Tools()
	b.ReportAllocs()
	for b.Loop() {
		if len(filter(context.Background(), st, tools)) != 100 {
			b.Fatal("not all allowed")
		}
	}
}

func BenchmarkDecide(b *testing.B) {
	p := mustParse(b, testPolicy)
	roles := []string{"viewer", "editor"}
	t := policy.Tool{Name: "fs_write_file", Source: "local"}
	b.ReportAllocs()
	for b.Loop() {
		p.Decide(roles, t)
	}
}
