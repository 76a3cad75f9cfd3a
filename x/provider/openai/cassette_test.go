package openai

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/lodeworks/lode/artifact"
	"github.com/lodeworks/lode/ledger"
	"github.com/lodeworks/lode/loop"
	"github.com/lodeworks/lode/tool"
	"github.com/lodeworks/lode/x/cassette"
	xtool "github.com/lodeworks/lode/x/tool"
)

// cassetteBaseURL is where cassette tests send their requests: a name,
// so that a cassette recorded from one fake server's port replays on
// any machine.
const cassetteBaseURL = "http://openai.test/v1"

// lazyFake is the transport a cassette records from: the fake server,
// started on the first request, so that replay starts none.
type lazyFake struct {
	t       *testing.T
	replies []http.HandlerFunc
	once    sync.Once
	rt      http.RoundTripper
}

func (l *lazyFake) RoundTrip(req *http.Request) (*http.Response, error) {
	l.once.Do(func() {
		f := newFake(l.t, l.replies...)
		addr := f.srv.Listener.Addr().String()
		var d net.Dialer
		l.rt = &http.Transport{DialContext: func(ctx context.Context, network, _ string) (net.Conn, error) {
			return d.DialContext(ctx, network, addr)
		}}
	})
	return l.rt.RoundTrip(req)
}

// cassetteProvider is a provider that replays testdata/cassettes/name.yaml,
// or, with LODE_RECORD=1, records it from the fake server answering with
// replies.
func cassetteProvider(t *testing.T, name string, replies ...http.HandlerFunc) *Provider {
	t.Helper()
	client := cassette.ForTest(t, filepath.Join("testdata", "cassettes", name+".yaml"),
		cassette.WithTransport(&lazyFake{t: t, replies: replies}))
	p, err := New(WithAPIKey("sk-test"), WithModel("gpt-test"), WithBaseURL(cassetteBaseURL),
		WithHTTPClient(client), withSleep(noSleep))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// deltaLog keeps the deltas a run's observers see.
type deltaLog struct {
	mu     sync.Mutex
	deltas []string
}

func (d *deltaLog) Emit(_ context.Context, ev loop.Event) {
	if de, ok := ev.(loop.DeltaEvent); ok {
		d.mu.Lock()
		d.deltas = append(d.deltas, fmt.Sprintf("%#v", de.Delta))
		d.mu.Unlock()
	}
}

// TestCassetteLoopParallelToolCalls is TestLoopParallelToolCalls from a
// cassette: the same ledger, and the same deltas, one by one, as the run
// against the live fake server.
func TestCassetteLoopParallelToolCalls(t *testing.T) {
	tools := []tool.Tool{
		{Name: "get_weather", Description: "Weather in a city.", Schema: weatherSchema},
		{Name: "get_time", Description: "Time in a zone.", Schema: timeSchema},
	}
	h := loop.HandlerFunc(func(ctx context.Context, a artifact.Artifact, e loop.Emitter) error {
		if c, ok := a.(artifact.ToolCall); ok {
			e.Emit(ctx, loop.TurnCompleteEvent{Role: ledger.RoleTool, Artifacts: []artifact.Artifact{
				artifact.ToolResult{ToolCallID: c.ID, Name: c.Name, Content: c.Name + " says " + c.Arguments},
			}})
		}
		return nil
	})
	replies := []http.HandlerFunc{sse(parallelCalls(`{"city":"Paris"}`)...), sse(finalAnswer()...)}
	run := func(p *Provider) ([]ledger.Turn, []string) {
		t.Helper()
		log := &deltaLog{}
		step := loop.New(loop.WithHandlers(h), loop.WithObserver(log))
		th := ledger.NewThread(ledger.WithClock(nil))
		_ = th.Append(ledger.RoleUser, artifact.Text{Content: "Weather and time in Paris?"})
		if _, err := step.Run(t.Context(), th, p, WithTools(tools)); err != nil {
			t.Fatal(err)
		}
		if err := step.Flush(t.Context()); err != nil {
			t.Fatal(err)
		}
		return th.Turns(), log.deltas
	}

	_, liveDeltas := run(newFake(t, replies...).provider(t))
	turns, deltas := run(cassetteProvider(t, "loop_parallel", replies...))
	if !reflect.DeepEqual(turns, parallelLedger()) {
		t.Errorf("ledger =\n%#v\nwant\n%#v", turns, parallelLedger())
	}
	if len(deltas) == 0 || !reflect.DeepEqual(deltas, liveDeltas) {
		t.Errorf("replayed deltas =\n%q\nlive\n%q", deltas, liveDeltas)
	}
}

// TestCassetteLoopWithToolHandler is TestLoopWithToolHandler from a
// cassette: the registry, the x/tool Handler and a model whose call has
// broken JSON.
func TestCassetteLoopWithToolHandler(t *testing.T) {
	registry := tool.NewRegistry()
	if err := registry.Register(tool.Tool{Name: "get_weather", Description: "Weather in a city.", Schema: weatherSchema},
		func(_ context.Context, _ tool.Sandbox, args map[string]any) (any, error) {
			return fmt.Sprintf("sunny in %v", args["city"]), nil
		}); err != nil {
		t.Fatal(err)
	}
	if err := registry.Register(tool.Tool{Name: "get_time", Description: "Time in a zone.", Schema: timeSchema},
		func(_ context.Context, _ tool.Sandbox, args map[string]any) (any, error) {
			return map[string]any{"tz": args["tz"], "time": "12:00"}, nil
		}); err != nil {
		t.Fatal(err)
	}
	step := loop.New(
		loop.WithHandlers(xtool.NewHandler(registry)),
		loop.WithInvokeOptions(WithTools(registry.Tools())),
	)
	th := ledger.NewThread(ledger.WithClock(nil))
	_ = th.Append(ledger.RoleUser, artifact.Text{Content: "Weather and time in Paris?"})
	p := cassetteProvider(t, "loop_tool_handler", sse(parallelCalls(`{"city":"Paris"`)...), sse(finalAnswer()...))
	if _, err := step.Run(t.Context(), th, p); err != nil {
		t.Fatal(err)
	}
	turns := th.Turns()
	if len(turns) != 4 {
		t.Fatalf("%d turns: %#v", len(turns), turns)
	}
	if c := turns[1].Artifacts[0].(artifact.ToolCall); c.Arguments != `{"city":"Paris"` || c.Name != "get_weather" {
		t.Errorf("weather call = %#v", c)
	}
	weather, clock := turns[2].Artifacts[0].(artifact.ToolResult), turns[2].Artifacts[1].(artifact.ToolResult)
	if weather.ToolCallID != "call_w" || !weather.IsError || !strings.Contains(weather.Content, "JSON") {
		t.Errorf("weather result = %#v", weather)
	}
	if clock.ToolCallID != "call_t" || clock.IsError || clock.Content != `{"time":"12:00","tz":"Europe/Paris"}` {
		t.Errorf("time result = %#v", clock)
	}
	if got := turns[3].Artifacts[0]; got != (artifact.Text{Content: "Sunny, and it is noon."}) {
		t.Errorf("answer = %#v", got)
	}
}
