package loop_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"iter"
	"log/slog"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	tracenoop "go.opentelemetry.io/otel/trace/noop"

	"github.com/lodeworks/lode/artifact"
	"github.com/lodeworks/lode/ledger"
	"github.com/lodeworks/lode/loop"
	"github.com/lodeworks/lode/provider"
	"github.com/lodeworks/lode/x/provider/script"
)

// seqProvider is a provider whose stream is any function a test writes.
type seqProvider func(yield func(artifact.Artifact, error) bool)

func (p seqProvider) Invoke(context.Context, *provider.Request) iter.Seq2[artifact.Artifact, error] {
	if p == nil {
		return nil
	}
	return iter.Seq2[artifact.Artifact, error](p)
}

func quietLog() (*slog.Logger, *syncBuffer) {
	var b syncBuffer
	return slog.New(slog.NewTextHandler(&b, nil)), &b
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// A provider that breaks its contract fails the turn with a
// *ProviderError, or has its stray output ignored; it never panics the
// caller, and the ledger keeps only what was whole.
func TestMisbehavingProviders(t *testing.T) {
	boom := errors.New("boom")
	text := artifact.Text{Content: "hi"}
	cases := []struct {
		name    string
		prov    seqProvider
		err     string // exact error text; "" for none
		partial []artifact.Artifact
		roles   string
		last    []artifact.Artifact // the assistant turn, when there is one
	}{
		{
			name: "yields after an error",
			prov: func(yield func(artifact.Artifact, error) bool) {
				yield(nil, boom)
				yield(text, nil)
				yield(nil, errors.New("second error"))
			},
			err: "loop: provider: boom", roles: "user",
		},
		{
			name: "yields after the loop stopped it",
			prov: func(yield func(artifact.Artifact, error) bool) {
				yield(text, nil)
				yield(nil, boom)
				for range 3 {
					yield(text, nil)
				}
			},
			err: "loop: provider: boom", partial: []artifact.Artifact{text}, roles: "user",
		},
		{
			name: "panics",
			prov: func(yield func(artifact.Artifact, error) bool) {
				yield(text, nil)
				panic("nil map")
			},
			err: "loop: provider: panic: nil map", partial: []artifact.Artifact{text}, roles: "user",
		},
		{
			name: "no stream",
			prov: nil,
			err:  "loop: provider: the provider returned no stream", roles: "user",
		},
		{
			name: "nil and typed-nil artifacts",
			prov: func(yield func(artifact.Artifact, error) bool) {
				_ = yield(nil, nil) && yield((*artifact.Text)(nil), nil) && yield(artifact.TextDelta{Content: "hi"}, nil) && yield(text, nil)
			},
			roles: "user,assistant", last: []artifact.Artifact{text},
		},
		{
			name: "pointers to artifacts",
			prov: func(yield func(artifact.Artifact, error) bool) {
				_ = yield(&artifact.Text{Content: "hi"}, nil) && yield(&artifact.Usage{InputTokens: 1}, nil)
			},
			roles: "user,assistant", last: []artifact.Artifact{text, artifact.Usage{InputTokens: 1}},
		},
		{
			name:  "nothing at all",
			prov:  func(func(artifact.Artifact, error) bool) {},
			roles: "user,assistant", last: []artifact.Artifact{},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			log, _ := quietLog()
			th := userThread("x")
			_, err := loop.New(loop.WithLogger(log)).Turn(context.Background(), th, c.prov)
			if c.err == "" {
				if err != nil {
					t.Fatalf("err = %v", err)
				}
			} else {
				var pe *loop.ProviderError
				if !errors.As(err, &pe) || err.Error() != c.err {
					t.Fatalf("err = %v, want *ProviderError %q", err, c.err)
				}
				if !reflect.DeepEqual(pe.Partial, c.partial) {
					t.Errorf("partial = %#v, want %#v", pe.Partial, c.partial)
				}
			}
			if got := roles(th); got != c.roles {
				t.Fatalf("ledger = %s, want %s", got, c.roles)
			}
			if c.last != nil {
				got := th.Turns()[1].Artifacts
				if len(got) != 0 || len(c.last) != 0 {
					if !reflect.DeepEqual(got, c.last) {
						t.Fatalf("assistant turn = %#v, want %#v", got, c.last)
					}
				}
			}
		})
	}
}

// A provider that keeps yielding from a goroutine of its own after its
// stream has returned is told to stop and changes nothing.
func TestProviderYieldingAfterReturn(t *testing.T) {
	release := make(chan struct{})
	late := make(chan bool)
	prov := seqProvider(func(yield func(artifact.Artifact, error) bool) {
		yield(artifact.Text{Content: "hi"}, nil)
		go func() {
			<-release
			late <- yield(artifact.Text{Content: "late"}, nil)
		}()
	})
	th := userThread("x")
	if _, err := loop.New().Turn(context.Background(), th, prov); err != nil {
		t.Fatal(err)
	}
	close(release)
	if <-late {
		t.Fatal("a yield after the stream returned was accepted")
	}
	if got := th.Turns()[1].Artifacts; len(got) != 1 || got[0] != (artifact.Text{Content: "hi"}) {
		t.Fatalf("assistant turn = %#v", got)
	}
}

// What a handler emits is checked: a turn with an invalid role fails the
// turn with a *HandlerError naming the handler and the artifact, nil
// artifacts are dropped, a *TurnCompleteEvent counts like the value, and
// the results of the other calls are appended all the same.
func TestHandlerEmitsBadly(t *testing.T) {
	result := func(id string) artifact.ToolResult { return artifact.ToolResult{ToolCallID: id, Content: "ok " + id} }
	emits := map[string]func(ctx context.Context, e loop.Emitter){
		"good": func(ctx context.Context, e loop.Emitter) {
			e.Emit(ctx, loop.TurnCompleteEvent{Role: ledger.RoleTool, Artifacts: []artifact.Artifact{result("good")}})
		},
		"norole": func(ctx context.Context, e loop.Emitter) {
			e.Emit(ctx, loop.TurnCompleteEvent{Artifacts: []artifact.Artifact{result("norole")}})
		},
		"robot": func(ctx context.Context, e loop.Emitter) {
			e.Emit(ctx, loop.TurnCompleteEvent{Role: "robot", Artifacts: []artifact.Artifact{result("robot")}})
		},
		"nils": func(ctx context.Context, e loop.Emitter) {
			e.Emit(ctx, nil)
			e.Emit(ctx, (*loop.TurnCompleteEvent)(nil))
			e.Emit(ctx, loop.TurnCompleteEvent{Role: ledger.RoleTool, Artifacts: []artifact.Artifact{nil, (*artifact.ToolResult)(nil)}})
			e.Emit(ctx, loop.TurnCompleteEvent{Role: ledger.RoleTool, Artifacts: []artifact.Artifact{nil, result("nils"), nil}})
		},
		"pointer": func(ctx context.Context, e loop.Emitter) {
			r := result("pointer")
			e.Emit(ctx, &loop.TurnCompleteEvent{Role: ledger.RoleTool, Artifacts: []artifact.Artifact{&r}})
		},
	}
	h := loop.HandlerFunc(func(ctx context.Context, a artifact.Artifact, e loop.Emitter) error {
		if c, ok := a.(artifact.ToolCall); ok {
			emits[c.ID](ctx, e)
		}
		return nil
	})
	cases := []struct {
		name  string
		calls []string
		err   string
		index int // of the artifact the error names
		ids   []string
	}{
		{"empty role", []string{"good", "norole", "pointer"}, `loop: handler 1 on tool_call: emitted a turn with invalid role ""`, 1, []string{"good", "pointer"}},
		{"unknown role", []string{"robot", "good"}, `loop: handler 1 on tool_call: emitted a turn with invalid role "robot"`, 0, []string{"good"}},
		{"nils", []string{"nils", "good"}, "", 0, []string{"nils", "good"}},
		{"pointer", []string{"pointer"}, "", 0, []string{"pointer"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var calls []artifact.Artifact
			for _, id := range c.calls {
				calls = append(calls, artifact.ToolCall{ID: id, Name: "t", Arguments: "{}"})
			}
			th := userThread("x")
			noop := loop.HandlerFunc(func(context.Context, artifact.Artifact, loop.Emitter) error { return nil })
			_, err := loop.New(loop.WithHandlers(noop, h)).Turn(context.Background(), th, script.Play(script.Reply(calls...)))
			if c.err == "" {
				if err != nil {
					t.Fatal(err)
				}
			} else {
				var he *loop.HandlerError
				if !errors.As(err, &he) || err.Error() != c.err {
					t.Fatalf("err = %v, want *HandlerError %q", err, c.err)
				}
				if he.Artifact != calls[c.index] {
					t.Errorf("error names %#v, want %#v", he.Artifact, calls[c.index])
				}
			}
			if got := roles(th); got != "user,assistant,tool" {
				t.Fatalf("ledger = %s", got)
			}
			var ids []string
			for _, a := range th.Turns()[2].Artifacts {
				ids = append(ids, a.(artifact.ToolResult).ToolCallID)
			}
			if !reflect.DeepEqual(ids, c.ids) {
				t.Fatalf("results for %v, want %v", ids, c.ids)
			}
		})
	}
}

// An event a handler emits after Handle has returned cannot be put where it
// belongs in the ledger: it is dropped, with a warning, and races nothing.
func TestEmitAfterHandleReturned(t *testing.T) {
	release := make(chan struct{})
	var wg sync.WaitGroup
	h := loop.HandlerFunc(func(ctx context.Context, a artifact.Artifact, e loop.Emitter) error {
		c, ok := a.(artifact.ToolCall)
		if !ok {
			return nil
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-release
			for range 10 {
				e.Emit(ctx, loop.TurnCompleteEvent{Role: ledger.RoleTool, Artifacts: []artifact.Artifact{artifact.ToolResult{ToolCallID: c.ID}}})
			}
		}()
		return nil
	})
	log, logs := quietLog()
	var seen sync.Map
	obs := loop.EmitterFunc(func(_ context.Context, ev loop.Event) { seen.Store(ev.EventName(), true) })
	th := userThread("x")
	step := loop.New(loop.WithHandlers(h), loop.WithLogger(log), loop.WithObserver(obs))
	if _, err := step.Turn(context.Background(), th, script.Play(script.Reply(
		artifact.ToolCall{ID: "1", Name: "t"}, artifact.ToolCall{ID: "2", Name: "t"},
	))); err != nil {
		t.Fatal(err)
	}
	close(release)
	wg.Wait()
	if got := roles(th); got != "user,assistant" {
		t.Fatalf("ledger = %s; late events were appended", got)
	}
	if n := strings.Count(logs.String(), "emitted an event after it returned"); n != 20 {
		t.Fatalf("%d warnings logged, want 20:\n%s", n, logs)
	}
	if err := step.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, ok := seen.Load("turn_complete"); !ok {
		t.Fatal("the assistant turn was not observed")
	}
}

// ArtifactIndex tells each handler call which artifact of the answer it
// has, even when two artifacts are equal.
func TestArtifactIndex(t *testing.T) {
	var mu sync.Mutex
	got := map[int]artifact.Artifact{}
	h := loop.HandlerFunc(func(ctx context.Context, a artifact.Artifact, e loop.Emitter) error {
		i, ok := loop.ArtifactIndex(ctx)
		if !ok {
			return errors.New("no index")
		}
		mu.Lock()
		got[i] = a
		mu.Unlock()
		return nil
	})
	same := artifact.ToolCall{ID: "a", Name: "t", Arguments: "{}"}
	answer := []artifact.Artifact{artifact.Text{Content: "x"}, same, same, artifact.ToolCall{ID: "b", Name: "t"}}
	if _, err := loop.New(loop.WithHandlers(h)).Turn(context.Background(), userThread("x"), script.Play(script.Reply(answer...))); err != nil {
		t.Fatal(err)
	}
	if len(got) != len(answer) {
		t.Fatalf("indexes seen: %v", got)
	}
	for i, a := range answer {
		if got[i] != a {
			t.Errorf("index %d handled %#v, want %#v", i, got[i], a)
		}
	}
	if _, ok := loop.ArtifactIndex(context.Background()); ok {
		t.Fatal("ArtifactIndex outside a handler")
	}
}

// failingState is a ledger whose Append fails for one role.
type failingState struct {
	*ledger.Thread
	role ledger.Role
	err  error
}

func (f failingState) Append(role ledger.Role, arts ...artifact.Artifact) error {
	if role == f.role {
		return f.err
	}
	return f.Thread.Append(role, arts...)
}

// Every way a turn fails has its typed error, reachable with errors.As, with
// its cause reachable with errors.Is, and the ledger keeps every turn
// completed before the failure.
func TestTypedErrors(t *testing.T) {
	diskFull := errors.New("disk full")
	block := func(ctx context.Context, a artifact.Artifact, e loop.Emitter) error {
		if _, ok := a.(artifact.ToolCall); ok {
			<-ctx.Done()
			e.Emit(ctx, loop.TurnCompleteEvent{Role: ledger.RoleTool, Artifacts: []artifact.Artifact{artifact.ToolResult{ToolCallID: "1", Content: "cancelled", IsError: true}}})
		}
		return nil
	}
	cancelled := func() context.Context {
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		return ctx
	}
	cases := []struct {
		name   string
		ctx    func() context.Context
		state  func(*ledger.Thread) ledger.State
		step   func(cancel context.CancelFunc) *loop.Step
		target any
		cause  error
		roles  string
	}{
		{
			name:   "cancelled before the turn",
			ctx:    cancelled,
			step:   func(context.CancelFunc) *loop.Step { return loop.New(loop.WithHandlers(echoTools)) },
			target: new(*loop.ProviderError), cause: context.Canceled, roles: "user",
		},
		{
			name: "cancelled while a handler runs",
			step: func(cancel context.CancelFunc) *loop.Step {
				return loop.New(loop.WithHandlers(loop.HandlerFunc(func(ctx context.Context, a artifact.Artifact, e loop.Emitter) error {
					if _, ok := a.(artifact.ToolCall); ok {
						cancel()
					}
					return block(ctx, a, e)
				})))
			},
			target: new(*loop.ProviderError), cause: context.Canceled, roles: "user,assistant,tool",
		},
		{
			name:   "ledger refuses the assistant turn",
			state:  func(th *ledger.Thread) ledger.State { return failingState{th, ledger.RoleAssistant, diskFull} },
			step:   func(context.CancelFunc) *loop.Step { return loop.New(loop.WithHandlers(echoTools)) },
			target: new(*loop.LedgerError), cause: diskFull, roles: "user",
		},
		{
			name:   "ledger refuses the tool turn",
			state:  func(th *ledger.Thread) ledger.State { return failingState{th, ledger.RoleTool, diskFull} },
			step:   func(context.CancelFunc) *loop.Step { return loop.New(loop.WithHandlers(echoTools)) },
			target: new(*loop.LedgerError), cause: diskFull, roles: "user,assistant",
		},
		{
			name: "time limit while a handler runs",
			step: func(context.CancelFunc) *loop.Step {
				return loop.New(loop.WithHandlers(loop.HandlerFunc(block)), loop.WithTimeLimit(50*time.Millisecond))
			},
			target: new(*loop.LimitError), cause: context.DeadlineExceeded, roles: "user,assistant,tool",
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			if c.ctx != nil {
				ctx = c.ctx()
			}
			th := userThread("x")
			var st ledger.State = th
			if c.state != nil {
				st = c.state(th)
			}
			_, err := c.step(cancel).Run(ctx, st, script.Play(script.Call("1", "t", "{}"), script.Text("done")))
			if !errors.As(err, c.target) || !errors.Is(err, c.cause) {
				t.Fatalf("err = %v (%T), want %T wrapping %v", err, err, c.target, c.cause)
			}
			if got := roles(th); got != c.roles {
				t.Fatalf("ledger = %s, want %s", got, c.roles)
			}
		})
	}
}

// The typed errors describe themselves even when built by hand with
// fields missing.
func TestErrorTextsOfZeroValues(t *testing.T) {
	cases := []struct {
		err  error
		want string
	}{
		{&loop.ProviderError{}, "loop: provider: unknown error"},
		{&loop.OptionError{}, "loop: preparing the turn: unknown error"},
		{&loop.OptionError{Index: 3, Panic: "x"}, "loop: preparing the turn: invoke option 3 panicked: x"},
		{&loop.HandlerError{}, "loop: handler 0 on nil artifact: unknown error"},
		{&loop.HandlerError{Handler: 2, Artifact: &artifact.Text{}, Panic: "x"}, "loop: handler 2 panicked on text: x"},
		{&loop.LedgerError{}, "loop: ledger: unknown error"},
		{&loop.LedgerError{Panic: "x"}, "loop: ledger panicked: x"},
		{&loop.LimitError{Limit: loop.LimitTurns, Used: 3, Max: 3}, "loop: turns limit reached (3 of 3)"},
	}
	for _, c := range cases {
		if got := c.err.Error(); got != c.want {
			t.Errorf("%#v.Error() = %q, want %q", c.err, got, c.want)
		}
	}
}

// A missing ledger or provider is an error, not a panic; a zero Step is a
// Step with no handlers.
func TestMissingArguments(t *testing.T) {
	prov := script.Play(script.Text("hi"))
	for _, step := range []*loop.Step{loop.New(loop.WithHandlers(echoTools)), new(loop.Step)} {
		if _, err := step.Turn(context.Background(), nil, prov); err == nil || err.Error() != "loop: ledger: no ledger.State given" {
			t.Errorf("Turn without a ledger: %v", err)
		}
		if _, err := step.Run(context.Background(), userThread("x"), nil); !errors.As(err, new(*loop.ProviderError)) || err.Error() != "loop: provider: no provider given" {
			t.Errorf("Run without a provider: %v", err)
		}
	}
	th := userThread("x")
	if _, err := new(loop.Step).Run(context.Background(), th, prov); err != nil || roles(th) != "user,assistant" {
		t.Fatalf("zero Step: %v, ledger %s", err, roles(th))
	}
}

// A panic with an error keeps that error reachable through the typed error.
func TestPanicWithAnErrorUnwraps(t *testing.T) {
	cause := io.ErrUnexpectedEOF
	log, _ := quietLog()
	prov := seqProvider(func(yield func(artifact.Artifact, error) bool) { panic(cause) })
	_, err := loop.New(loop.WithLogger(log)).Turn(context.Background(), userThread("x"), prov)
	if !errors.As(err, new(*loop.ProviderError)) || !errors.Is(err, cause) || err.Error() != "loop: provider: panic: unexpected EOF" {
		t.Fatalf("provider panic: %v", err)
	}
	h := loop.HandlerFunc(func(context.Context, artifact.Artifact, loop.Emitter) error { panic(cause) })
	_, err = loop.New(loop.WithLogger(log), loop.WithHandlers(h)).Turn(context.Background(), userThread("x"), script.Play(script.Text("hi")))
	var he *loop.HandlerError
	if !errors.As(err, &he) || !errors.Is(err, cause) || he.Panic != cause {
		t.Fatalf("handler panic: %v", err)
	}
}

func TestNilHandlersAndObserversSkipped(t *testing.T) {
	th := userThread("x")
	step := loop.New(loop.WithHandlers(nil, echoTools, nil), loop.WithObserver(nil))
	if _, err := step.Turn(context.Background(), th, script.Play(script.Call("1", "t", "{}"))); err != nil {
		t.Fatal(err)
	}
	if got := roles(th); got != "user,assistant,tool" {
		t.Fatalf("ledger = %s", got)
	}
	if err := step.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// countingProvider counts its invocations.
type countingProvider struct {
	provider.Provider
	n atomic.Int32
}

func (c *countingProvider) Invoke(ctx context.Context, req *provider.Request) iter.Seq2[artifact.Artifact, error] {
	c.n.Add(1)
	return c.Provider.Invoke(ctx, req)
}

// An invoke option that fails or panics (a ToolFilter runs inside one)
// fails its turn with an *OptionError naming it, before the provider is
// called: the stack is logged, observers get the error, and every turn
// completed before stays in the ledger with nothing of the failed one.
func TestFailingInvokeOptions(t *testing.T) {
	optErr := errors.New("no tools for you")
	// onTurn returns an option that calls act on the n-th turn of a run
	// (1-based) and does nothing on the others.
	onTurn := func(n int, act func() error) provider.InvokeOption {
		return provider.OptionFunc(func(_ context.Context, st ledger.State, _ *provider.Request) error {
			if len(st.Turns()) == 1+2*(n-1) {
				return act()
			}
			return nil
		})
	}
	fine := provider.OptionFunc(func(context.Context, ledger.State, *provider.Request) error { return nil })
	cases := []struct {
		name     string
		stepOpts []provider.InvokeOption
		runOpts  []provider.InvokeOption
		err      string
		index    int
		panicked bool
		cause    error
		roles    string
		invoked  int32
	}{
		{
			name:     "step option panics on the first turn",
			stepOpts: []provider.InvokeOption{onTurn(1, func() error { panic("filter bug") })},
			err:      "loop: preparing the turn: invoke option 0 panicked: filter bug", index: 0, panicked: true,
			roles: "user", invoked: 0,
		},
		{
			name:     "run option panics with an error on the second turn",
			stepOpts: []provider.InvokeOption{fine},
			runOpts:  []provider.InvokeOption{nil, onTurn(2, func() error { panic(io.ErrUnexpectedEOF) })},
			err:      "loop: preparing the turn: invoke option 2 panicked: unexpected EOF", index: 2, panicked: true, cause: io.ErrUnexpectedEOF,
			roles: "user,assistant,tool", invoked: 1,
		},
		{
			name:    "nil OptionFunc",
			runOpts: []provider.InvokeOption{fine, provider.OptionFunc(nil)},
			err:     "loop: preparing the turn: invoke option 1 panicked: runtime error: invalid memory address or nil pointer dereference", index: 1, panicked: true,
			roles: "user", invoked: 0,
		},
		{
			name:    "option returns an error on the second turn",
			runOpts: []provider.InvokeOption{onTurn(2, func() error { return optErr })},
			err:     "loop: preparing the turn: no tools for you", index: 0, cause: optErr,
			roles: "user,assistant,tool", invoked: 1,
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			log, logs := quietLog()
			errs := make(chan error, 4)
			obs := loop.EmitterFunc(func(_ context.Context, ev loop.Event) {
				if e, ok := ev.(loop.ErrorEvent); ok {
					errs <- e.Err
				}
			})
			step := loop.New(loop.WithLogger(log), loop.WithHandlers(echoTools), loop.WithObserver(obs), loop.WithInvokeOptions(c.stepOpts...))
			prov := &countingProvider{Provider: script.Play(script.Call("1", "t", "{}"), script.Text("done"))}
			th := userThread("x")
			_, err := step.Run(context.Background(), th, prov, c.runOpts...)
			var oe *loop.OptionError
			if !errors.As(err, &oe) || err.Error() != c.err {
				t.Fatalf("err = %v (%T), want *OptionError %q", err, err, c.err)
			}
			if oe.Index != c.index || (oe.Panic != nil) != c.panicked || (len(oe.Stack) > 0) != c.panicked {
				t.Errorf("OptionError{Index: %d, Panic: %v, Stack: %d bytes}", oe.Index, oe.Panic, len(oe.Stack))
			}
			if c.cause != nil && !errors.Is(err, c.cause) {
				t.Errorf("%v does not wrap %v", err, c.cause)
			}
			if got := roles(th); got != c.roles {
				t.Errorf("ledger = %s, want %s", got, c.roles)
			}
			if got := prov.n.Load(); got != c.invoked {
				t.Errorf("provider invoked %d times, want %d", got, c.invoked)
			}
			if err := step.Flush(context.Background()); err != nil {
				t.Fatal(err)
			}
			select {
			case got := <-errs:
				if got != err {
					t.Errorf("observed %v, want %v", got, err)
				}
			default:
				t.Error("no ErrorEvent observed")
			}
			logged := strings.Contains(logs.String(), "invoke option panicked") && strings.Contains(logs.String(), "stack=")
			if logged != c.panicked {
				t.Errorf("panic logged with its stack: %v, want %v:\n%s", logged, c.panicked, logs)
			}
		})
	}
}

// panickyState is a ledger whose methods panic where a test says: a
// custom store with a bug.
type panickyState struct {
	*ledger.Thread
	turns  bool        // Turns panics
	id     bool        // ID panics
	append ledger.Role // Append of this role panics
}

func (p panickyState) ID() string {
	if p.id {
		panic("id bug")
	}
	return p.Thread.ID()
}

func (p panickyState) Turns() []ledger.Turn {
	if p.turns {
		panic("turns bug")
	}
	return p.Thread.Turns()
}

func (p panickyState) Append(role ledger.Role, arts ...artifact.Artifact) error {
	if role == p.append {
		panic(io.ErrShortWrite)
	}
	return p.Thread.Append(role, arts...)
}

// A ledger.State that panics fails the turn with a *LedgerError carrying
// the panic and its stack, which are logged; it never takes the caller
// down, and what the ledger held before stays.
func TestPanickingLedger(t *testing.T) {
	cases := []struct {
		name   string
		state  func(*ledger.Thread) panickyState
		tracer bool
		err    string
		roles  string
	}{
		{
			name:  "Turns",
			state: func(th *ledger.Thread) panickyState { return panickyState{Thread: th, turns: true} },
			err:   "loop: ledger panicked: turns bug", roles: "user",
		},
		{
			name:  "Append of the assistant turn",
			state: func(th *ledger.Thread) panickyState { return panickyState{Thread: th, append: ledger.RoleAssistant} },
			err:   "loop: ledger panicked: short write", roles: "user",
		},
		{
			name:  "Append of the tool turn",
			state: func(th *ledger.Thread) panickyState { return panickyState{Thread: th, append: ledger.RoleTool} },
			err:   "loop: ledger panicked: short write", roles: "user,assistant",
		},
		{
			name:   "ID, read for the trace",
			state:  func(th *ledger.Thread) panickyState { return panickyState{Thread: th, id: true} },
			tracer: true,
			err:    "loop: ledger panicked: id bug", roles: "user",
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			log, logs := quietLog()
			opts := []loop.Option{loop.WithLogger(log), loop.WithHandlers(echoTools)}
			if c.tracer {
				opts = append(opts, loop.WithTracer(tracenoop.NewTracerProvider().Tracer("test")))
			}
			th := userThread("x")
			_, err := loop.New(opts...).Run(context.Background(), c.state(th), script.Play(script.Call("1", "t", "{}"), script.Text("done")))
			var le *loop.LedgerError
			if !errors.As(err, &le) || err.Error() != c.err {
				t.Fatalf("err = %v (%T), want *LedgerError %q", err, err, c.err)
			}
			if le.Panic == nil || len(le.Stack) == 0 {
				t.Errorf("LedgerError{Panic: %v, Stack: %d bytes}", le.Panic, len(le.Stack))
			}
			if l := logs.String(); !strings.Contains(l, "ledger panicked") || !strings.Contains(l, "stack=") {
				t.Errorf("panic not logged with its stack:\n%s", l)
			}
			if got := roles(th); got != c.roles {
				t.Errorf("ledger = %s, want %s", got, c.roles)
			}
		})
	}
	log, _ := quietLog()
	_, err := loop.New(loop.WithLogger(log)).Turn(context.Background(), panickyState{Thread: userThread("x"), append: ledger.RoleAssistant}, script.Play(script.Text("hi")))
	if !errors.Is(err, io.ErrShortWrite) {
		t.Fatalf("a panic with an error does not unwrap to it: %v", err)
	}
}
