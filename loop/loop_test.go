package loop_test

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lodeworks/lode/artifact"
	"github.com/lodeworks/lode/ledger"
	"github.com/lodeworks/lode/loop"
	"github.com/lodeworks/lode/provider"
	"github.com/lodeworks/lode/x/provider/script"
)

// echoTools answers every tool call with "<name>(<args>)".
var echoTools = loop.HandlerFunc(func(ctx context.Context, a artifact.Artifact, e loop.Emitter) error {
	c, ok := a.(artifact.ToolCall)
	if !ok {
		return nil
	}
	e.Emit(ctx, loop.TurnCompleteEvent{Role: ledger.RoleTool, Artifacts: []artifact.Artifact{
		artifact.ToolResult{ToolCallID: c.ID, Name: c.Name, Content: c.Name + "(" + c.Arguments + ")"},
	}})
	return nil
})

func userThread(text string) *ledger.Thread {
	th := ledger.NewThread(ledger.WithClock(nil))
	_ = th.Append(ledger.RoleUser, artifact.Text{Content: text})
	return th
}

func roles(st ledger.State) string {
	var parts []string
	for _, t := range st.Turns() {
		parts = append(parts, string(t.Role))
	}
	return strings.Join(parts, ",")
}

func TestRunMultiTurnWithTools(t *testing.T) {
	prov := script.Play(
		script.Reply(
			artifact.Text{Content: "Let me check both."},
			artifact.ToolCall{ID: "a", Name: "weather", Arguments: `{"city":"Oslo"}`},
			artifact.ToolCall{ID: "b", Name: "time", Arguments: `{}`},
			artifact.Usage{InputTokens: 10, OutputTokens: 4},
		),
		script.Text("Oslo is cold at noon."),
	)
	th := userThread("weather and time in Oslo?")
	st, err := loop.New(loop.WithHandlers(echoTools)).Run(context.Background(), th, prov)
	if err != nil {
		t.Fatal(err)
	}
	if got := roles(st); got != "user,assistant,tool,assistant" {
		t.Fatalf("roles = %s", got)
	}
	tool := st.Turns()[2].Artifacts
	want := []artifact.Artifact{
		artifact.ToolResult{ToolCallID: "a", Name: "weather", Content: `weather({"city":"Oslo"})`},
		artifact.ToolResult{ToolCallID: "b", Name: "time", Content: `time({})`},
	}
	if !reflect.DeepEqual(tool, want) {
		t.Fatalf("tool turn = %#v", tool)
	}
	reqs := prov.Requests()
	if len(reqs) != 2 || len(reqs[0].Turns) != 1 || len(reqs[1].Turns) != 3 {
		t.Fatalf("provider saw %d requests: %+v", len(reqs), reqs)
	}
	if prov.Remaining() != 0 {
		t.Fatalf("%v left unplayed", prov)
	}
}

// gatedHandler answers calls in the reverse of their order, and only once
// every call of the turn is in flight: it proves the calls run at once and
// that results still land in call order.
func TestResultsInCallOrderWhenFinishedOutOfOrder(t *testing.T) {
	const n = 5
	var started sync.WaitGroup
	started.Add(n)
	release := make([]chan struct{}, n)
	for i := range release {
		release[i] = make(chan struct{})
	}
	h := loop.HandlerFunc(func(ctx context.Context, a artifact.Artifact, e loop.Emitter) error {
		c, ok := a.(artifact.ToolCall)
		if !ok {
			return nil
		}
		var i int
		fmt.Sscanf(c.ID, "c%d", &i)
		started.Done()
		started.Wait()
		if i < n-1 {
			<-release[i+1]
		}
		e.Emit(ctx, loop.TurnCompleteEvent{Role: ledger.RoleTool, Artifacts: []artifact.Artifact{
			artifact.ToolResult{ToolCallID: c.ID, Content: c.ID},
		}})
		close(release[i])
		return nil
	})
	var calls []artifact.Artifact
	for i := range n {
		calls = append(calls, artifact.ToolCall{ID: fmt.Sprintf("c%d", i), Name: "t", Arguments: "{}"})
	}
	prov := script.Play(script.Reply(calls...))
	st, err := loop.New(loop.WithHandlers(h)).Turn(context.Background(), userThread("go"), prov)
	if err != nil {
		t.Fatal(err)
	}
	res := st.Turns()[2].Artifacts
	if len(res) != n {
		t.Fatalf("%d results in one tool turn, want %d", len(res), n)
	}
	for i, a := range res {
		if id := a.(artifact.ToolResult).ToolCallID; id != fmt.Sprintf("c%d", i) {
			t.Fatalf("result %d is for %s", i, id)
		}
	}
}

func TestConcurrencyBound(t *testing.T) {
	var inFlight, peak atomic.Int32
	h := loop.HandlerFunc(func(ctx context.Context, a artifact.Artifact, e loop.Emitter) error {
		if _, ok := a.(artifact.ToolCall); !ok {
			return nil
		}
		n := inFlight.Add(1)
		for {
			p := peak.Load()
			if n <= p || peak.CompareAndSwap(p, n) {
				break
			}
		}
		inFlight.Add(-1)
		return nil
	})
	var calls []artifact.Artifact
	for i := range 20 {
		calls = append(calls, artifact.ToolCall{ID: fmt.Sprint(i), Name: "t"})
	}
	_, err := loop.New(loop.WithHandlers(h), loop.WithConcurrency(2)).Turn(context.Background(), userThread("go"), script.Play(script.Reply(calls...)))
	if err != nil {
		t.Fatal(err)
	}
	if p := peak.Load(); p > 2 || p < 1 {
		t.Fatalf("peak concurrency %d with a bound of 2", p)
	}
}

func TestLimits(t *testing.T) {
	callAgain := func(n int) []script.Step {
		var steps []script.Step
		for i := range n {
			steps = append(steps, script.Reply(
				artifact.ToolCall{ID: fmt.Sprint(i), Name: "t", Arguments: "{}"},
				artifact.Usage{InputTokens: 60, OutputTokens: 40},
			))
		}
		return steps
	}
	cases := []struct {
		name      string
		opt       loop.Option
		steps     []script.Step
		limit     loop.Limit
		turns     int // ledger turns kept
		wantCause error
	}{
		{"turns", loop.WithMaxTurns(3), callAgain(10), loop.LimitTurns, 1 + 3*2, nil},
		{"tokens", loop.WithMaxTokens(250), callAgain(10), loop.LimitTokens, 1 + 3*2, nil},
		// How many of the first turns finish inside 30ms depends on the
		// machine's load; the model then hangs until the limit ends it.
		// turns < 0 means: the user's turn and at most -turns in all.
		{"time", loop.WithTimeLimit(30 * time.Millisecond), append(callAgain(2), script.Hang(artifact.Text{Content: "thinking..."})), loop.LimitTime, -(1 + 2*2), context.DeadlineExceeded},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			st, err := loop.New(loop.WithHandlers(echoTools), c.opt).Run(context.Background(), userThread("loop"), script.New(c.steps))
			var le *loop.LimitError
			if !errors.As(err, &le) || le.Limit != c.limit {
				t.Fatalf("err = %v, want a %s limit", err, c.limit)
			}
			if !errors.Is(err, loop.ErrLimit) {
				t.Errorf("errors.Is(%v, ErrLimit) is false", err)
			}
			if c.wantCause != nil && !errors.Is(err, c.wantCause) {
				t.Errorf("err = %v, want it to wrap %v", err, c.wantCause)
			}
			n := len(st.Turns())
			switch {
			case c.turns < 0 && (n < 1 || n > -c.turns || !strings.HasPrefix(roles(st), "user")):
				t.Errorf("ledger kept %d turns (%s), want the user's and at most %d in all", n, roles(st), -c.turns)
			case c.turns >= 0 && n != c.turns:
				t.Errorf("ledger kept %d turns (%s), want %d", n, roles(st), c.turns)
			}
		})
	}
}

func TestLimitNotHitWhenModelFinishes(t *testing.T) {
	prov := script.Play(script.Call("1", "t", "{}"), script.Text("done"))
	_, err := loop.New(loop.WithHandlers(echoTools), loop.WithMaxTurns(2)).Run(context.Background(), userThread("x"), prov)
	if err != nil {
		t.Fatalf("a run that finishes on its last allowed turn failed: %v", err)
	}
}

func TestCancelMidStream(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var once sync.Once
	obs := loop.EmitterFunc(func(_ context.Context, ev loop.Event) {
		if _, ok := ev.(loop.DeltaEvent); ok {
			once.Do(cancel)
		}
	})
	th := userThread("hi")
	step := loop.New(loop.WithObserver(obs))
	_, err := step.Turn(ctx, th, script.Play(script.Hang(artifact.Text{Content: "a long answer that never ends"})))
	var pe *loop.ProviderError
	if !errors.As(err, &pe) || !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want a ProviderError wrapping context.Canceled", err)
	}
	if roles(th) != "user" {
		t.Fatalf("ledger after cancel: %s", roles(th))
	}
}

func TestProviderFailsMidStream(t *testing.T) {
	boom := errors.New("connection reset")
	th := userThread("hi")
	prov := script.Play(script.Call("1", "t", "{}"), script.FailAfter(2, boom, artifact.Text{Content: "a partial answer that breaks"}))
	_, err := loop.New(loop.WithHandlers(echoTools), loop.WithObserver(loop.EmitterFunc(func(context.Context, loop.Event) {}))).Run(context.Background(), th, prov)
	var pe *loop.ProviderError
	if !errors.As(err, &pe) || !errors.Is(err, boom) {
		t.Fatalf("err = %v, want ProviderError wrapping %v", err, boom)
	}
	if got := roles(th); got != "user,assistant,tool" {
		t.Fatalf("completed turns lost or partial turn kept: %s", got)
	}
}

func TestProviderFailsAtOnceAndExhausted(t *testing.T) {
	th := userThread("hi")
	_, err := loop.New().Turn(context.Background(), th, script.Play())
	if !errors.Is(err, script.ErrExhausted) {
		t.Fatalf("err = %v", err)
	}
	optErr := errors.New("no tools for you")
	bad := provider.OptionFunc(func(context.Context, ledger.State, *provider.Request) error { return optErr })
	_, err = loop.New().Turn(context.Background(), th, script.Play(script.Text("x")), bad)
	if !errors.Is(err, optErr) {
		t.Fatalf("option error = %v", err)
	}
}

func TestHandlerErrorAndPanic(t *testing.T) {
	bad := errors.New("disk on fire")
	h := loop.HandlerFunc(func(ctx context.Context, a artifact.Artifact, e loop.Emitter) error {
		c, ok := a.(artifact.ToolCall)
		if !ok {
			return nil
		}
		switch c.Name {
		case "fails":
			return bad
		case "panics":
			panic("nil map")
		}
		return echoTools(ctx, a, e)
	})
	for _, name := range []string{"fails", "panics"} {
		t.Run(name, func(t *testing.T) {
			th := userThread("go")
			prov := script.Play(script.Reply(
				artifact.ToolCall{ID: "1", Name: "ok", Arguments: "{}"},
				artifact.ToolCall{ID: "2", Name: name, Arguments: "{}"},
			), script.Text("after"))
			step := loop.New(loop.WithHandlers(h))
			_, err := step.Turn(context.Background(), th, prov)
			var he *loop.HandlerError
			if !errors.As(err, &he) {
				t.Fatalf("err = %v, want HandlerError", err)
			}
			if name == "fails" && !errors.Is(err, bad) {
				t.Errorf("err %v does not wrap the handler's error", err)
			}
			if name == "panics" && (he.Panic != "nil map" || len(he.Stack) == 0) {
				t.Errorf("panic = %v, stack %d bytes", he.Panic, len(he.Stack))
			}
			if he.Artifact.(artifact.ToolCall).ID != "2" {
				t.Errorf("error names artifact %#v", he.Artifact)
			}
			// The good call's result is kept; the failed one is repaired before
			// the next inference.
			if got := roles(th); got != "user,assistant,tool" {
				t.Fatalf("roles after failure = %s", got)
			}
			if _, err := step.Turn(context.Background(), th, prov); err != nil {
				t.Fatal(err)
			}
			seen := prov.Requests()[1].Turns
			last := seen[len(seen)-1].Artifacts
			if r, ok := last[0].(artifact.ToolResult); !ok || r.ToolCallID != "2" || !r.IsError || r.Content != loop.InterruptedMessage {
				t.Fatalf("model saw %#v, want the repaired result for call 2", last)
			}
		})
	}
}

func TestDanglingCallRepair(t *testing.T) {
	call := artifact.ToolCall{ID: "x1", Name: "deploy", Arguments: "{}"}
	t.Run("tail", func(t *testing.T) {
		th := userThread("deploy")
		_ = th.Append(ledger.RoleAssistant, call)
		prov := script.Play(script.Text("It was interrupted."))
		if _, err := loop.New().Turn(context.Background(), th, prov); err != nil {
			t.Fatal(err)
		}
		if got := roles(th); got != "user,assistant,tool,assistant" {
			t.Fatalf("roles = %s", got)
		}
		seen := prov.Requests()[0].Turns
		if len(seen) != 3 || seen[2].Role != ledger.RoleTool {
			t.Fatalf("model saw %d turns, last %v", len(seen), seen[len(seen)-1])
		}
		r := seen[2].Artifacts[0].(artifact.ToolResult)
		if r.ToolCallID != "x1" || r.Name != "deploy" || !r.IsError {
			t.Fatalf("repair result = %#v", r)
		}
	})
	t.Run("user spoke after the call", func(t *testing.T) {
		th := userThread("deploy")
		_ = th.Append(ledger.RoleAssistant, call, artifact.ToolCall{ID: "x2", Name: "notify"})
		_ = th.Append(ledger.RoleTool, artifact.ToolResult{ToolCallID: "x2", Name: "notify", Content: "sent"})
		_ = th.Append(ledger.RoleUser, artifact.Text{Content: "still there?"})
		prov := script.Play(script.Text("yes"))
		if _, err := loop.New().Turn(context.Background(), th, prov); err != nil {
			t.Fatal(err)
		}
		seen := prov.Requests()[0].Turns
		var got []string
		for _, tu := range seen {
			got = append(got, string(tu.Role))
		}
		if strings.Join(got, ",") != "user,assistant,tool,tool,user" {
			t.Fatalf("model saw %v; the repaired result must follow its call", got)
		}
		if r := seen[2].Artifacts[0].(artifact.ToolResult); r.ToolCallID != "x1" {
			t.Fatalf("turn after the call holds %#v", r)
		}
		if got := roles(th); got != "user,assistant,tool,user,tool,assistant" {
			t.Fatalf("ledger = %s", got)
		}
	})
	t.Run("nothing to repair", func(t *testing.T) {
		th := userThread("x")
		_ = th.Append(ledger.RoleAssistant, call)
		_ = th.Append(ledger.RoleTool, artifact.ToolResult{ToolCallID: "x1"})
		if _, err := loop.New().Turn(context.Background(), th, script.Play(script.Text("ok"))); err != nil {
			t.Fatal(err)
		}
		if got := roles(th); got != "user,assistant,tool,assistant" {
			t.Fatalf("ledger = %s", got)
		}
	})
}

func TestTransformsDoNotPileUp(t *testing.T) {
	prov := script.Play(script.Call("1", "t", "{}"), script.Call("2", "t", "{}"), script.Text("done"))
	th := userThread("go")
	_, err := loop.New(
		loop.WithHandlers(echoTools),
		loop.WithInvokeOptions(provider.WithSystemPrompt("You are terse.")),
	).Run(context.Background(), th, prov)
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range prov.Requests() {
		systems := 0
		for _, tu := range r.Turns {
			if tu.Role == ledger.RoleSystem {
				systems++
			}
		}
		if systems != 1 || r.Turns[0].Role != ledger.RoleSystem {
			t.Fatalf("request %d carries %d system turns", i, systems)
		}
	}
	for _, tu := range th.Turns() {
		if tu.Role == ledger.RoleSystem {
			t.Fatal("the system prompt was written to the ledger")
		}
	}
}

func TestSlowObserverDoesNotStall(t *testing.T) {
	gate := make(chan struct{})
	var mu sync.Mutex
	var text strings.Builder
	var names []string
	obs := loop.EmitterFunc(func(_ context.Context, ev loop.Event) {
		<-gate
		mu.Lock()
		defer mu.Unlock()
		names = append(names, ev.EventName())
		if d, ok := ev.(loop.DeltaEvent); ok {
			text.WriteString(d.Delta.(artifact.TextDelta).Content)
		}
	})
	answer := strings.Repeat("streaming words ", 50)
	step := loop.New(loop.WithObserver(obs))
	// The observer blocks until the run is over; the run must finish anyway.
	if _, err := step.Run(context.Background(), userThread("x"), script.New([]script.Step{script.Text(answer)}, script.WithChunkSize(7))); err != nil {
		t.Fatal(err)
	}
	close(gate)
	if err := step.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if text.String() != answer {
		t.Fatalf("observer saw %q", text.String())
	}
	if names[len(names)-1] != "turn_complete" {
		t.Fatalf("last event %s, want turn_complete after every delta", names[len(names)-1])
	}
}

func TestObserverPanicIsContained(t *testing.T) {
	var got atomic.Int32
	log, logs := quietLog()
	step := loop.New(
		loop.WithLogger(log),
		loop.WithObserver(loop.EmitterFunc(func(context.Context, loop.Event) { panic("ui bug") })),
		loop.WithObserver(loop.EmitterFunc(func(context.Context, loop.Event) { got.Add(1) })),
	)
	if _, err := step.Turn(context.Background(), userThread("x"), script.Play(script.Text("hello"))); err != nil {
		t.Fatal(err)
	}
	if err := step.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got.Load() == 0 {
		t.Fatal("a panicking observer starved the others")
	}
	if l := logs.String(); !strings.Contains(l, "observer panicked; event dropped") || !strings.Contains(l, "panic=\"ui bug\"") || !strings.Contains(l, "stack=") {
		t.Fatalf("the observer's panic was not logged with its stack:\n%s", l)
	}
}

func TestErrorEventObserved(t *testing.T) {
	errs := make(chan error, 1)
	step := loop.New(loop.WithObserver(loop.EmitterFunc(func(_ context.Context, ev loop.Event) {
		if e, ok := ev.(loop.ErrorEvent); ok {
			errs <- e.Err
		}
	})))
	_, err := step.Turn(context.Background(), userThread("x"), script.Play())
	if err := step.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := <-errs; got != err {
		t.Fatalf("observed %v, returned %v", got, err)
	}
}

func TestCurrentTurnGivenToHandlers(t *testing.T) {
	var info *loop.TurnInfo
	h := loop.HandlerFunc(func(ctx context.Context, a artifact.Artifact, e loop.Emitter) error {
		if _, ok := a.(artifact.ToolCall); ok {
			info, _ = loop.CurrentTurn(ctx)
		}
		return nil
	})
	th := userThread("x")
	_, _ = loop.New(loop.WithHandlers(h)).Turn(context.Background(), th, script.Play(script.Call("1", "t", "{}")), provider.WithMaxTokens(7))
	if info == nil || info.State != th || info.Request.MaxTokens != 7 || len(info.Answer) != 1 {
		t.Fatalf("turn info = %+v", info)
	}
	if _, ok := loop.CurrentTurn(context.Background()); ok {
		t.Fatal("CurrentTurn outside a turn")
	}
}

func TestFlushHonoursContext(t *testing.T) {
	block := make(chan struct{})
	defer close(block)
	step := loop.New(loop.WithObserver(loop.EmitterFunc(func(context.Context, loop.Event) { <-block })))
	if _, err := step.Turn(context.Background(), userThread("x"), script.Play(script.Text("hi"))); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := step.Flush(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("Flush on a stuck observer = %v", err)
	}
}
