package tool_test

import (
	"bytes"
	"context"
	"log/slog"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lodeworks/lode/artifact"
	"github.com/lodeworks/lode/ledger"
	"github.com/lodeworks/lode/loop"
	"github.com/lodeworks/lode/tool"
	"github.com/lodeworks/lode/x/provider/script"
	xtool "github.com/lodeworks/lode/x/tool"
)

// onCallersGoroutine reports whether the function named caller is on the
// stack of the running goroutine: whether a tool runs inline.
func onCallersGoroutine(caller string) bool {
	buf := make([]byte, 64<<10)
	return strings.Contains(string(buf[:runtime.Stack(buf, false)]), caller)
}

const inlineTimedOut = "the call to t timed out after 20ms and was abandoned; it may have partly taken effect"

// TestIgnoredContextNeverHoldsTheTurn runs, through a loop turn, tools that
// ignore their context on every path a call can take: a tool that makes no
// promise runs on a goroutine of its own and is abandoned at its timeout; a
// tool that promised to run inline (Tool.Inline) and breaks the promise
// holds only the call in which it broke it, which reports the timeout and
// not what it returned late, and every later call of it is handed off and
// abandoned at its timeout, as is every call of it under WithoutInline.
func TestIgnoredContextNeverHoldsTheTurn(t *testing.T) {
	forever := make(chan struct{}) // what the hung calls wait for
	defer close(forever)
	type callOf struct {
		hang      bool // wait for forever; else for the context's end, seen by the test
		wantStack bool // the call runs on the turn's goroutine
	}
	cases := []struct {
		name   string
		inline bool
		opts   []xtool.HandlerOption
		calls  []callOf
	}{
		{"no promise", false, nil, []callOf{{hang: true}, {hang: true}}},
		{"a broken promise", true, nil, []callOf{{wantStack: true}, {hang: true}, {hang: true}}},
		{"a promise not trusted", true, []xtool.HandlerOption{xtool.WithoutInline()}, []callOf{{hang: true}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var (
				i       atomic.Int32
				inlined = make(chan bool, len(c.calls))
				kept    = make(chan context.Context, 1)
				release = make(chan struct{})
			)
			go func() {
				if ctx, ok := <-kept; ok {
					<-ctx.Done()
					close(release)
				}
			}()
			defer close(kept)
			reg := tool.NewRegistry()
			if err := reg.Register(tool.Tool{Name: "t", Timeout: 20 * time.Millisecond, Inline: c.inline}, func(ctx context.Context, _ tool.Sandbox, _ map[string]any) (any, error) {
				this := c.calls[i.Add(1)-1]
				inlined <- onCallersGoroutine("loop.(*Step).Turn")
				if this.hang {
					<-forever
					return "late", nil
				}
				// Ignores its context; the test lets it go once the
				// context has ended.
				kept <- ctx
				<-release
				return "late", nil
			}); err != nil {
				t.Fatal(err)
			}
			opts := append([]xtool.HandlerOption{xtool.WithLogger(slog.New(slog.NewTextHandler(&bytes.Buffer{}, nil)))}, c.opts...)
			step := loop.New(loop.WithHandlers(xtool.NewHandler(reg, opts...)), loop.WithInvokeOptions(xtool.WithFilteredTools(reg, nil)))
			th := ledger.NewThread()
			for n, want := range c.calls {
				st, err := step.Turn(context.Background(), th, script.Play(script.Reply(call("t", "{}"))))
				if err != nil {
					t.Fatal(err)
				}
				turns := st.Turns()
				last := turns[len(turns)-1]
				if last.Role != ledger.RoleTool || len(last.Artifacts) != 1 {
					t.Fatalf("call %d: last turn %+v", n, last)
				}
				if r := last.Artifacts[0].(artifact.ToolResult); !r.IsError || r.Content != inlineTimedOut {
					t.Errorf("call %d: result %+v, want %q", n, r, inlineTimedOut)
				}
				if got := <-inlined; got != want.wantStack {
					t.Errorf("call %d ran on the turn's goroutine: %v, want %v", n, got, want.wantStack)
				}
			}
		})
	}
}

// TestInlineContext checks what a tool that runs inline sees of its
// context and what its call reports: the same as on a goroutine of its
// own.
func TestInlineContext(t *testing.T) {
	parentDeadline := time.Now().Add(time.Hour)
	cases := []struct {
		name    string
		timeout time.Duration
		parent  func(started <-chan struct{}) (context.Context, context.CancelFunc)
		tool    func(ctx context.Context) (any, error)
		content string
		isError bool
	}{
		{
			name:    "values and the tool's own deadline",
			timeout: 2 * time.Hour,
			parent: func(<-chan struct{}) (context.Context, context.CancelFunc) {
				return context.WithValue(context.Background(), ctxKey{}, "v"), func() {}
			},
			tool: func(ctx context.Context) (any, error) {
				dl, ok := ctx.Deadline()
				return []any{ctx.Value(ctxKey{}), ok, time.Until(dl) > 90*time.Minute, ctx.Err()}, nil
			},
			content: `["v",true,true,null]`,
		},
		{
			name:    "the caller's earlier deadline",
			timeout: 2 * time.Hour,
			parent: func(<-chan struct{}) (context.Context, context.CancelFunc) {
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
				return nil, ctx.Err()
			},
			content: "the call to t timed out after 10ms and was abandoned; it may have partly taken effect",
			isError: true,
		},
		{
			name:    "timeout seen by a tool that polls Err",
			timeout: 10 * time.Millisecond,
			tool: func(ctx context.Context) (any, error) {
				for ctx.Err() == nil {
					runtime.Gosched()
				}
				return nil, ctx.Err()
			},
			content: "the call to t timed out after 10ms and was abandoned; it may have partly taken effect",
			isError: true,
		},
		{
			name:    "a value returned after the deadline by a tool that never looks",
			timeout: 10 * time.Millisecond,
			tool: func(ctx context.Context) (any, error) {
				dl, _ := ctx.Deadline()
				for !time.Now().After(dl) {
					runtime.Gosched()
				}
				return "late", nil
			},
			content: "the call to t timed out after 10ms and was abandoned; it may have partly taken effect",
			isError: true,
		},
		{
			name:    "the caller cancels a tool that waits on Done",
			timeout: time.Hour,
			parent:  cancelWhenStarted,
			tool: func(ctx context.Context) (any, error) {
				<-ctx.Done()
				return nil, ctx.Err()
			},
			content: "the call to t was cancelled before it finished",
			isError: true,
		},
		{
			name:    "the caller cancels a tool that polls Err",
			timeout: time.Hour,
			parent:  cancelWhenStarted,
			tool: func(ctx context.Context) (any, error) {
				for ctx.Err() == nil {
					runtime.Gosched()
				}
				return nil, ctx.Err()
			},
			content: "the call to t was cancelled before it finished",
			isError: true,
		},
		{
			name:    "a value returned after the caller cancelled",
			timeout: time.Hour,
			parent:  cancelWhenStarted,
			tool: func(ctx context.Context) (any, error) {
				for ctx.Err() == nil {
					runtime.Gosched()
				}
				return "late", nil
			},
			content: "the call to t was cancelled before it finished",
			isError: true,
		},
		{
			name:    "a panic",
			timeout: time.Hour,
			tool:    func(context.Context) (any, error) { panic("boom") },
			content: "the tool t crashed (panic: boom); this is a fault in the tool, not in your arguments",
			isError: true,
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var (
				kept   context.Context
				inline bool
			)
			started := make(chan struct{})
			reg := tool.NewRegistry()
			if err := reg.Register(tool.Tool{Name: "t", Timeout: c.timeout, Inline: true}, func(ctx context.Context, _ tool.Sandbox, _ map[string]any) (any, error) {
				kept, inline = ctx, onCallersGoroutine("TestInlineContext")
				close(started)
				return c.tool(ctx)
			}); err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.Background(), context.CancelFunc(func() {})
			if c.parent != nil {
				ctx, cancel = c.parent(started)
			}
			defer cancel()
			h := xtool.NewHandler(reg, xtool.WithLogger(slog.New(slog.NewTextHandler(&bytes.Buffer{}, nil))))
			r := h.Execute(ctx, call("t", "{}"))
			if r.IsError != c.isError || r.Content != c.content {
				t.Fatalf("result %+v, want content %q", r, c.content)
			}
			if !inline {
				t.Fatal("the tool did not run on the caller's goroutine")
			}
			select {
			case <-kept.Done():
			default:
				t.Fatal("the context the tool kept is still live after the call")
			}
			if kept.Err() == nil {
				t.Fatal("the context the tool kept has no error after the call")
			}
		})
	}
}

// cancelWhenStarted is a parent context cancelled once the tool has
// started.
func cancelWhenStarted(started <-chan struct{}) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(context.Background())
	go func() { <-started; cancel() }()
	return ctx, cancel
}

// TestInlineDistrustIsPerTool checks that a tool that broke its promise to
// run inline loses it alone: another inline tool of the same Handler still
// runs on the caller's goroutine.
func TestInlineDistrustIsPerTool(t *testing.T) {
	reg := tool.NewRegistry()
	if err := reg.Register(tool.Tool{Name: "t", Timeout: 10 * time.Millisecond, Inline: true}, func(ctx context.Context, _ tool.Sandbox, _ map[string]any) (any, error) {
		<-ctx.Done() // honours its context, but takes its whole timeout
		return nil, ctx.Err()
	}); err != nil {
		t.Fatal(err)
	}
	var inline []bool
	if err := tool.RegisterFunc(reg, "other", "", func(context.Context, sumIn) (int, error) {
		inline = append(inline, onCallersGoroutine("TestInlineDistrustIsPerTool"))
		return 1, nil
	}, tool.WithInline()); err != nil {
		t.Fatal(err)
	}
	h := xtool.NewHandler(reg, xtool.WithLogger(slog.New(slog.NewTextHandler(&bytes.Buffer{}, nil))))
	if r := h.Execute(context.Background(), call("t", "{}")); !r.IsError || !strings.Contains(r.Content, "timed out after 10ms") {
		t.Fatalf("t: %+v", r)
	}
	for range 2 {
		if r := h.Execute(context.Background(), call("other", `{"a":1,"b":2}`)); r.IsError || r.Content != "1" {
			t.Fatalf("other: %+v", r)
		}
	}
	if len(inline) != 2 || !inline[0] || !inline[1] {
		t.Fatalf("other ran inline: %v, want [true true]", inline)
	}
}

// TestGoexitAnswers calls a tool that ends its goroutine with
// runtime.Goexit (as testing's FailNow does) rather than return. On a
// goroutine of its own the call answers at once with an error result, not
// at its timeout. Inline, the goroutine it ends is the caller's, which
// nothing can save: Execute never returns, and the handler warns and runs
// the tool's later calls on a goroutine of their own, where they answer.
func TestGoexitAnswers(t *testing.T) {
	const want = "the tool ended its goroutine (runtime.Goexit) without returning"
	for _, inline := range []bool{false, true} {
		t.Run(map[bool]string{false: "goroutine", true: "inline"}[inline], func(t *testing.T) {
			reg := tool.NewRegistry()
			if err := reg.Register(tool.Tool{Name: "t", Timeout: time.Hour, Inline: inline}, func(context.Context, tool.Sandbox, map[string]any) (any, error) {
				runtime.Goexit()
				return "never", nil
			}); err != nil {
				t.Fatal(err)
			}
			var logs bytes.Buffer
			h := xtool.NewHandler(reg, xtool.WithLogger(slog.New(slog.NewTextHandler(&logs, nil))))
			if inline {
				returned := make(chan bool)
				go func() {
					defer func() { returned <- false }()
					h.Execute(context.Background(), call("t", "{}"))
					returned <- true
				}()
				if <-returned {
					t.Fatal("Execute returned from a tool that called runtime.Goexit on its goroutine")
				}
				if !strings.Contains(logs.String(), "ended its goroutine, the caller's, with runtime.Goexit") {
					t.Errorf("logged %q, want the warning", logs.String())
				}
			}
			if r := h.Execute(context.Background(), call("t", "{}")); !r.IsError || r.Content != want {
				t.Fatalf("result %+v, want the error %q", r, want)
			}
		})
	}
}
