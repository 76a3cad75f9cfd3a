package tool_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/lodeworks/lode/artifact"
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

func TestGateBelow(t *testing.T) {
	reg := fixture(t, nil)
	if err := reg.Register(tool.Tool{Name: "rm", Hints: tool.Hints{Destructive: true}}, func(context.Context, tool.Sandbox, map[string]any) (any, error) { return nil, nil }); err != nil {
		t.Fatal(err)
	}
	pause := func(context.Context, tool.Tool, artifact.ToolCall) error { return xtool.ErrPending }
	deny := func(context.Context, tool.Tool, artifact.ToolCall) error { return xtool.ErrDenied }
	plain, wipe := tool.Tool{Name: "wipe"}, tool.Tool{Name: "wipe", Hints: tool.Hints{Destructive: true}}
	cases := []struct {
		name   string
		h      *xtool.Handler
		t      tool.Tool
		reason string
		err    error
	}{
		{"no approver: never asks", xtool.NewHandler(reg), wipe, "", nil},
		{"a plain child tool runs", xtool.NewHandler(reg, xtool.WithApprover(pause)), plain, "", nil},
		{"a destructive child tool waits", xtool.NewHandler(reg, xtool.WithApprover(pause)), wipe, "the tool is marked destructive", xtool.ErrPending},
		{"the caller's own tool of that name decides", xtool.NewHandler(reg, xtool.WithApprover(pause)), tool.Tool{Name: "rm"}, "the tool is marked destructive", xtool.ErrPending},
		{"the caller's approval list", xtool.NewHandler(reg, xtool.WithApprover(pause), xtool.WithApprovalFor("wipe")), plain, "the configuration requires approval for wipe", xtool.ErrPending},
		{"an approver that refuses", xtool.NewHandler(reg, xtool.WithApprover(deny)), wipe, "the tool is marked destructive", xtool.ErrDenied},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			reason, err := c.h.GateBelow(context.Background(), c.t, artifact.ToolCall{ID: "c1", Name: c.t.Name, Arguments: "{}"})
			if reason != c.reason || !errors.Is(err, c.err) || (c.err == nil && err != nil) {
				t.Fatalf("reason %q, err %v; want %q, %v", reason, err, c.reason, c.err)
			}
		})
	}
}
