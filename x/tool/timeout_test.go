package tool_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/lodeworks/lode/artifact"
	"github.com/lodeworks/lode/ledger"
	"github.com/lodeworks/lode/loop"
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
	pause := func(context.Context, tool.Tool, artifact.ToolCall) error { return xtool.ErrAwaitingApproval }
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
		{"a destructive child tool waits", xtool.NewHandler(reg, xtool.WithApprover(pause)), wipe, "the tool is marked destructive", xtool.ErrAwaitingApproval},
		{"the caller's own tool of that name decides", xtool.NewHandler(reg, xtool.WithApprover(pause)), tool.Tool{Name: "rm"}, "the tool is marked destructive", xtool.ErrAwaitingApproval},
		{"the caller's approval list", xtool.NewHandler(reg, xtool.WithApprover(pause), xtool.WithApprovalFor("wipe")), plain, "the configuration requires approval for wipe", xtool.ErrAwaitingApproval},
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

// A Gate asked through LimitBelow reads how many calls were made below
// its handler's call (CallsBelow) and the caller's thread from ctx's turn,
// and its refusal is what LimitBelow returns.
func TestLimitBelow(t *testing.T) {
	reg := fixture(t, nil)
	caller := ledger.NewThread()
	var gotN int
	var gotBelow bool
	var gotSt ledger.State
	gate := func(ctx context.Context, st ledger.State, tl tool.Tool, _ string, call artifact.ToolCall) xtool.Verdict {
		gotN, gotBelow = xtool.CallsBelow(ctx)
		gotSt = st
		if gotN > 2 {
			return xtool.Verdict{Refuse: "too many below " + tl.Name}
		}
		return xtool.Verdict{}
	}
	ctx := loop.WithTurn(context.Background(), loop.TurnInfo{State: caller, Answer: []artifact.Artifact{artifact.ToolCall{ID: "c1", Name: "helper"}}}, 0)
	call := artifact.ToolCall{ID: "k1", Name: "read"}
	if got := xtool.NewHandler(reg).LimitBelow(ctx, tool.Tool{Name: "read"}, tool.LocalOwner, call, 9); got != "" {
		t.Fatalf("a handler without a Gate refused: %q", got)
	}
	h := xtool.NewHandler(reg, xtool.WithGate(gate))
	if got := h.LimitBelow(ctx, tool.Tool{Name: "read"}, tool.LocalOwner, call, 2); got != "" || gotN != 2 || !gotBelow || gotSt != caller {
		t.Fatalf("refusal %q; the Gate read n %d (below %v) on %v", got, gotN, gotBelow, gotSt)
	}
	if got := h.LimitBelow(ctx, tool.Tool{Name: "read"}, tool.LocalOwner, call, 3); got != "too many below read" {
		t.Fatalf("refusal %q", got)
	}
}

// Admit words a refusal as Handle does: a tool the turn did not offer, or
// one the Gate hides, as an unknown tool; a limit in the Gate's words.
func TestAdmit(t *testing.T) {
	reg := fixture(t, nil)
	gate := func(_ context.Context, _ ledger.State, tl tool.Tool, _ string, _ artifact.ToolCall) xtool.Verdict {
		switch tl.Name {
		case "greet":
			return xtool.Verdict{Hide: true}
		case "fails":
			return xtool.Verdict{Refuse: "no more calls"}
		}
		return xtool.Verdict{}
	}
	h := xtool.NewHandler(reg, xtool.WithGate(gate))
	offered := xtool.WithOffered(context.Background(), []tool.Tool{{Name: "sum"}, {Name: "fails"}})
	cases := []struct {
		name string
		ctx  context.Context
		tool string
		want string
	}{
		{"allowed", offered, "sum", ""},
		{"limited", offered, "fails", "no more calls"},
		{"not offered", offered, "greet", `unknown tool "greet". Tools available in this turn: sum, fails.`},
		// Unrestricted, the list is the registry's, without what the Gate
		// hides.
		{"hidden", context.Background(), "greet", `unknown tool "greet". Tools available in this turn: `},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := h.Admit(c.ctx, artifact.ToolCall{ID: "c1", Name: c.tool, Arguments: "{}"})
			if c.name == "hidden" && strings.HasPrefix(got, c.want) && !strings.Contains(got, "greet,") && strings.Contains(got, "sum") {
				return
			}
			if got != c.want {
				t.Fatalf("got %q, want %q", got, c.want)
			}
		})
	}
}

func TestRecordBelow(t *testing.T) {
	st := ledger.NewThread()
	if n := xtool.RecordedBelow(st, "c1"); n != 0 {
		t.Fatalf("nothing kept reads %d", n)
	}
	if err := xtool.RecordBelow(st, "c1", 4); err != nil {
		t.Fatal(err)
	}
	if n := xtool.RecordedBelow(st, "c1"); n != 4 {
		t.Fatalf("kept 4, read %d", n)
	}
	if n := xtool.RecordedBelow(st, "c2"); n != 0 {
		t.Fatalf("another call reads %d", n)
	}
}
