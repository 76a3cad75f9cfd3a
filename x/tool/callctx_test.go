package tool_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/lodeworks/lode/artifact"
	"github.com/lodeworks/lode/ledger"
	"github.com/lodeworks/lode/loop"
	"github.com/lodeworks/lode/tool"
	"github.com/lodeworks/lode/x/provider/script"
	xtool "github.com/lodeworks/lode/x/tool"
)

type ctxKey struct{}

// TestToolContext checks what a tool sees of the context it runs under: the
// caller's values, the earlier of the two deadlines, the timeout as
// DeadlineExceeded (through contexts derived from it too), and the end of
// the call as Canceled.
func TestToolContext(t *testing.T) {
	parentDeadline := time.Now().Add(time.Hour)
	cases := []struct {
		name    string
		timeout time.Duration
		parent  func() (context.Context, context.CancelFunc)
		tool    func(ctx context.Context) (any, error)
		content string
		after   func(t *testing.T, kept context.Context) // on the context the tool kept
	}{
		{
			name:    "values and the tool's own deadline",
			timeout: 2 * time.Hour,
			parent: func() (context.Context, context.CancelFunc) {
				return context.WithValue(context.Background(), ctxKey{}, "from the caller"), func() {}
			},
			tool: func(ctx context.Context) (any, error) {
				dl, ok := ctx.Deadline()
				return fmt.Sprintf("%v %v %v", ctx.Value(ctxKey{}), ok, time.Until(dl) > 90*time.Minute), ctx.Err()
			},
			content: "from the caller true true",
		},
		{
			name:    "the caller's earlier deadline",
			timeout: 2 * time.Hour,
			parent: func() (context.Context, context.CancelFunc) {
				return context.WithDeadline(context.Background(), parentDeadline)
			},
			tool: func(ctx context.Context) (any, error) {
				dl, _ := ctx.Deadline()
				return dl.Equal(parentDeadline), nil
			},
			content: "true",
		},
		{
			name:    "timeout seen by a tool that listens",
			timeout: 10 * time.Millisecond,
			tool: func(ctx context.Context) (any, error) {
				<-ctx.Done()
				if !errors.Is(ctx.Err(), context.DeadlineExceeded) || !errors.Is(context.Cause(ctx), context.DeadlineExceeded) {
					return nil, fmt.Errorf("err %v, cause %v", ctx.Err(), context.Cause(ctx))
				}
				return nil, ctx.Err()
			},
			content: "the call to t timed out after 10ms and was abandoned; it may have partly taken effect",
		},
		{
			name:    "timeout reaches a derived context",
			timeout: 10 * time.Millisecond,
			tool: func(ctx context.Context) (any, error) {
				child, cancel := context.WithCancel(ctx)
				defer cancel()
				<-child.Done()
				return nil, child.Err()
			},
			content: "the call to t timed out after 10ms and was abandoned; it may have partly taken effect",
		},
		{
			name:    "the context ends with the call",
			timeout: time.Hour,
			tool:    func(ctx context.Context) (any, error) { return ctx.Err() == nil, nil },
			content: "true",
			after: func(t *testing.T, kept context.Context) {
				select {
				case <-kept.Done():
				default:
					t.Fatal("the context a tool kept is still live after the call")
				}
				if !errors.Is(kept.Err(), context.Canceled) {
					t.Fatalf("kept context's error = %v, want Canceled", kept.Err())
				}
			},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var kept context.Context
			reg := tool.NewRegistry()
			if err := reg.Register(tool.Tool{Name: "t", Timeout: c.timeout}, func(ctx context.Context, _ tool.Sandbox, _ map[string]any) (any, error) {
				kept = ctx
				return c.tool(ctx)
			}); err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.Background(), context.CancelFunc(func() {})
			if c.parent != nil {
				ctx, cancel = c.parent()
			}
			defer cancel()
			r := xtool.NewHandler(reg).Execute(ctx, call("t", "{}"))
			if r.Content != c.content {
				t.Fatalf("result %+v, want content %q", r, c.content)
			}
			if c.after != nil {
				c.after(t, kept)
			}
		})
	}
}

// TestTimeoutsIndependent runs hung calls of different timeouts at once:
// each ends at its own timeout, whatever the others wait for, and a call
// that finishes in time is not touched.
func TestTimeoutsIndependent(t *testing.T) {
	release := make(chan struct{})
	started := make(chan struct{}, 1)
	reg := tool.NewRegistry()
	hang := func(context.Context, tool.Sandbox, map[string]any) (any, error) {
		started <- struct{}{}
		<-release // ignores its context on purpose
		return "released", nil
	}
	for name, d := range map[string]time.Duration{"long": time.Hour, "short": 20 * time.Millisecond, "shorter": 5 * time.Millisecond} {
		if err := reg.Register(tool.Tool{Name: name, Timeout: d}, hang); err != nil {
			t.Fatal(err)
		}
	}
	h := xtool.NewHandler(reg)
	long := make(chan artifact.ToolResult, 1)
	go func() { long <- h.Execute(context.Background(), call("long", "{}")) }()
	<-started

	var wg sync.WaitGroup
	results := make([]artifact.ToolResult, 6)
	for i := range results {
		name := []string{"short", "shorter"}[i%2]
		wg.Go(func() { results[i] = h.Execute(context.Background(), call(name, "{}")) })
	}
	wg.Wait()
	for i, r := range results {
		want := []string{"20ms", "5ms"}[i%2]
		if !r.IsError || r.Content != fmt.Sprintf("the call to %s timed out after %s and was abandoned; it may have partly taken effect", r.Name, want) {
			t.Errorf("call %d: %+v", i, r)
		}
	}
	close(release)
	if r := <-long; r.IsError || r.Content != "released" {
		t.Fatalf("long call: %+v", r)
	}
}

// TestHungToolNeverStallsTheTurn runs a turn whose answer calls tools that
// ignore their context, alone (the loop calls the handler inline) and
// beside another call (each on its own goroutine): the turn ends at the
// timeout with error results in call order.
func TestHungToolNeverStallsTheTurn(t *testing.T) {
	release := make(chan struct{})
	defer close(release)
	reg := tool.NewRegistry()
	_ = reg.Register(tool.Tool{Name: "hangs", Timeout: 20 * time.Millisecond}, func(context.Context, tool.Sandbox, map[string]any) (any, error) {
		<-release
		return "late", nil
	})
	_ = reg.Register(tool.Tool{Name: "greet"}, func(context.Context, tool.Sandbox, map[string]any) (any, error) { return "hello", nil })
	const timedOut = "the call to hangs timed out after 20ms and was abandoned; it may have partly taken effect"
	cases := []struct {
		name  string
		calls []artifact.Artifact
		want  []string
	}{
		{"one call", []artifact.Artifact{call("hangs", "{}")}, []string{timedOut}},
		{"several calls", []artifact.Artifact{
			artifact.ToolCall{ID: "1", Name: "hangs", Arguments: "{}"},
			artifact.ToolCall{ID: "2", Name: "greet", Arguments: "{}"},
			artifact.ToolCall{ID: "3", Name: "hangs", Arguments: "{}"},
		}, []string{timedOut, "hello", timedOut}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			step := loop.New(loop.WithHandlers(xtool.NewHandler(reg)), loop.WithInvokeOptions(xtool.WithFilteredTools(reg, nil)))
			th := ledger.NewThread()
			st, err := step.Turn(context.Background(), th, script.Play(script.Reply(c.calls...)))
			if err != nil {
				t.Fatal(err)
			}
			turns := st.Turns()
			last := turns[len(turns)-1]
			if last.Role != ledger.RoleTool || len(last.Artifacts) != len(c.want) {
				t.Fatalf("last turn %+v", last)
			}
			for i, w := range c.want {
				if r := last.Artifacts[i].(artifact.ToolResult); r.Content != w {
					t.Errorf("result %d = %q, want %q", i, r.Content, w)
				}
			}
		})
	}
}
