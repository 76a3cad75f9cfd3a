package tool_test

import (
	"context"
	"testing"
	"time"

	"github.com/lodeworks/lode/tool"
	xtool "github.com/lodeworks/lode/x/tool"
)

func TestCallTimeout(t *testing.T) {
	reg := fixture(t, nil)
	if err := reg.Register(tool.Tool{Name: "slow", Timeout: time.Hour}, func(context.Context, tool.Sandbox, map[string]any) (any, error) { return nil, nil }); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		h    *xtool.Handler
		tool string
		want time.Duration
	}{
		{"the tool's own timeout", xtool.NewHandler(reg, xtool.WithTimeout(time.Minute)), "slow", time.Hour},
		{"the handler's for a tool without one", xtool.NewHandler(reg, xtool.WithTimeout(time.Minute)), "sum", time.Minute},
		{"the default", xtool.NewHandler(reg), "sum", xtool.DefaultTimeout},
		{"an unknown tool gets the handler's", xtool.NewHandler(reg, xtool.WithTimeout(time.Minute)), "nope", time.Minute},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := c.h.CallTimeout(call(c.tool, "{}")); got != c.want {
				t.Fatalf("got %s, want %s", got, c.want)
			}
		})
	}
}
