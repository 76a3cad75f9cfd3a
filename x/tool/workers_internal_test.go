package tool

import (
	"context"
	"log/slog"
	"runtime"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/lodeworks/lode/artifact"
	toolpkg "github.com/lodeworks/lode/tool"
)

// idleWorkers returns the workers parked in h's pool, in order.
func idleWorkers(h *Handler) []*worker {
	h.pool.mu.Lock()
	defer h.pool.mu.Unlock()
	return append([]*worker(nil), h.pool.idle...)
}

// TestWorkersReused checks which calls leave their worker parked for the
// next: one that returns or panics does, one whose tool hangs past its
// timeout or ends the goroutine does not, and the call after it gets a
// worker of its own rather than waiting for the stuck one.
func TestWorkersReused(t *testing.T) {
	release := make(chan struct{})
	defer close(release)
	reg := toolpkg.NewRegistry()
	tools := map[string]toolpkg.ToolFunc{
		"ok":     func(context.Context, toolpkg.Sandbox, map[string]any) (any, error) { return "fine", nil },
		"panics": func(context.Context, toolpkg.Sandbox, map[string]any) (any, error) { panic("boom") },
		"exits":  func(context.Context, toolpkg.Sandbox, map[string]any) (any, error) { runtime.Goexit(); return nil, nil },
		"hangs": func(context.Context, toolpkg.Sandbox, map[string]any) (any, error) {
			<-release // ignores its context on purpose
			return "late", nil
		},
	}
	for name, fn := range tools {
		if err := reg.Register(toolpkg.Tool{Name: name, Timeout: 10 * time.Millisecond}, fn); err != nil {
			t.Fatal(err)
		}
	}
	cases := []struct {
		tool  string
		kept  bool // the worker that ran the call is parked afterwards
		isErr bool
	}{
		{"ok", true, false},
		{"panics", true, true},
		{"exits", false, false},
		{"hangs", false, true},
	}
	for _, c := range cases {
		t.Run(c.tool, func(t *testing.T) {
			h := NewHandler(reg, WithLogger(slog.New(slog.DiscardHandler)))
			first := h.Execute(context.Background(), artifact.ToolCall{ID: "1", Name: "ok", Arguments: "{}"})
			if first.IsError {
				t.Fatalf("first call: %+v", first)
			}
			before := idleWorkers(h)
			if len(before) != 1 {
				t.Fatalf("%d workers parked after one call, want 1", len(before))
			}
			if r := h.Execute(context.Background(), artifact.ToolCall{ID: "2", Name: c.tool, Arguments: "{}"}); r.IsError != c.isErr {
				t.Fatalf("call to %s: %+v", c.tool, r)
			}
			after := idleWorkers(h)
			if kept := len(after) == 1 && after[0] == before[0]; kept != c.kept || len(after) > 1 {
				t.Fatalf("after a call to %s: %d parked (the same: %v), want the worker kept: %v", c.tool, len(after), kept, c.kept)
			}
			if r := h.Execute(context.Background(), artifact.ToolCall{ID: "3", Name: "ok", Arguments: "{}"}); r.IsError || r.Content != "fine" {
				t.Fatalf("the call after %s: %+v", c.tool, r)
			}
			if n := len(idleWorkers(h)); n != 1 {
				t.Fatalf("%d workers parked after the next call, want 1", n)
			}
		})
	}
}

// TestWorkersSwept checks that a worker idle for a whole sweep leaves: one
// that ran a call since the last sweep stays for the next, and its
// goroutine ends once dismissed.
func TestWorkersSwept(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	reg := toolpkg.NewRegistry()
	if err := reg.Register(toolpkg.Tool{Name: "ok"}, func(context.Context, toolpkg.Sandbox, map[string]any) (any, error) { return "fine", nil }); err != nil {
		t.Fatal(err)
	}
	h := NewHandler(reg)
	h.Execute(context.Background(), artifact.ToolCall{ID: "1", Name: "ok", Arguments: "{}"})
	// The sweeps below may come on top of the pool's own: each leaves the
	// worker unused since the one before it, so two are enough.
	h.pool.sweep()
	h.pool.sweep()
	if n := len(idleWorkers(h)); n != 0 {
		t.Fatalf("%d workers parked after two sweeps without calls, want 0", n)
	}
	h.pool.mu.Lock()
	armed := h.pool.armed
	h.pool.mu.Unlock()
	if armed {
		t.Fatal("a sweep is still due with no worker parked")
	}
}
