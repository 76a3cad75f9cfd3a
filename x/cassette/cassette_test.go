package cassette_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
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
	"github.com/lodeworks/lode/x/provider/openai"
)

// Secrets the round trip sends; none may reach the cassette file.
const (
	secretKey    = "sk-live-secret-4242"
	secretHeader = "hdr-secret-7373"
	secretField  = "field-secret-9191"
	secretReply  = "reply-secret-5151"
)

func chunk(delta, finish string) string {
	return `{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1718000000,"model":"m",` +
		`"choices":[{"index":0,"delta":` + delta + `,"finish_reason":` + finish + `}]}`
}

func sseBody(events ...string) string {
	var b strings.Builder
	for _, e := range events {
		b.WriteString("data: " + e + "\n\n")
	}
	b.WriteString("data: [DONE]\n\n")
	return b.String()
}

// modelServer answers a chat-completions request with a tool call the
// first time and a streamed answer in three pieces the second time.
func modelServer(t *testing.T) *httptest.Server {
	t.Helper()
	var mu sync.Mutex
	n := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.ReadAll(r.Body)
		mu.Lock()
		n++
		turn := n
		mu.Unlock()
		w.Header().Set("Content-Type", "text/event-stream")
		w.Header().Set("Set-Cookie", "session="+secretHeader)
		var events []string
		if turn == 1 {
			events = []string{
				chunk(`{"role":"assistant","tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"weather","arguments":""}}]}`, "null"),
				chunk(`{"tool_calls":[{"index":0,"function":{"arguments":"{\"city\":"}}]}`, "null"),
				chunk(`{"tool_calls":[{"index":0,"function":{"arguments":"\"Paris\"}"}}]}`, "null"),
				chunk(`{}`, `"tool_calls"`),
			}
		} else {
			events = []string{
				chunk(`{"role":"assistant","content":"Sunny "}`, "null"),
				chunk(`{"content":"in "}`, "null"),
				chunk(`{"content":"Paris."}`, "null"),
				chunk(`{}`, `"stop"`),
			}
		}
		// The echo field holds a secret the server sends back.
		fl := w.(http.Flusher)
		fmt.Fprint(w, "data: "+strings.Replace(events[0], `"model":"m"`, `"model":"m","echo":"`+secretReply+`"`, 1)+"\n\n")
		fl.Flush()
		for _, e := range events[1:] {
			fmt.Fprint(w, "data: "+e+"\n\n")
			fl.Flush()
		}
		fmt.Fprint(w, "data: [DONE]\n\n")
	}))
	t.Cleanup(srv.Close)
	return srv
}

var weatherTool = tool.Tool{Name: "weather", Description: "Weather in a city.",
	Schema: []byte(`{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}`)}

// events collects what a run's observers see.
type events struct {
	mu  sync.Mutex
	all []string
}

func (e *events) Emit(_ context.Context, ev loop.Event) {
	e.mu.Lock()
	defer e.mu.Unlock()
	switch ev := ev.(type) {
	case loop.DeltaEvent:
		e.all = append(e.all, fmt.Sprintf("delta %#v", ev.Delta))
	case loop.TurnCompleteEvent:
		e.all = append(e.all, fmt.Sprintf("turn %s %d", ev.Role, len(ev.Artifacts)))
	}
}

func (e *events) deltas() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	n := 0
	for _, s := range e.all {
		if strings.HasPrefix(s, "delta ") {
			n++
		}
	}
	return n
}

// session runs a two-turn conversation through client.
func session(t *testing.T, baseURL string, client *http.Client, prompt string) ([]ledger.Turn, *events, error) {
	t.Helper()
	prov, err := openai.New(openai.WithModel("m"), openai.WithBaseURL(baseURL), openai.WithAPIKey(secretKey),
		openai.WithHTTPClient(client), openai.WithHeader("X-Team-Token", secretHeader), openai.WithMaxRetries(0))
	if err != nil {
		t.Fatal(err)
	}
	h := loop.HandlerFunc(func(ctx context.Context, a artifact.Artifact, e loop.Emitter) error {
		if c, ok := a.(artifact.ToolCall); ok {
			e.Emit(ctx, loop.TurnCompleteEvent{Role: ledger.RoleTool, Artifacts: []artifact.Artifact{
				artifact.ToolResult{ToolCallID: c.ID, Name: c.Name, Content: "sunny"},
			}})
		}
		return nil
	})
	ev := &events{}
	step := loop.New(loop.WithHandlers(h), loop.WithObserver(ev), loop.WithMaxTurns(4),
		loop.WithInvokeOptions(openai.WithTools([]tool.Tool{weatherTool}), openai.WithBodyField("metadata", map[string]any{"token": secretField})))
	th := ledger.NewThread(ledger.WithClock(nil))
	_ = th.Append(ledger.RoleUser, artifact.Text{Content: prompt})
	_, err = step.Run(t.Context(), th, prov)
	_ = step.Flush(context.Background())
	return th.Turns(), ev, err
}

var scrubOpts = []cassette.Option{
	cassette.WithScrubHeaders("x-team-token"),
	cassette.WithScrubFields("metadata.token", "echo"),
}

func record(t *testing.T, path, baseURL, prompt string, opts ...cassette.Option) ([]ledger.Turn, *events) {
	t.Helper()
	rec, err := cassette.New(path, append([]cassette.Option{cassette.WithMode(cassette.Record)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	turns, ev, err := session(t, baseURL, rec.Client(), prompt)
	if err != nil {
		t.Fatal(err)
	}
	if err := rec.Stop(); err != nil {
		t.Fatal(err)
	}
	return turns, ev
}

func TestRoundTrip(t *testing.T) {
	srv := modelServer(t)
	path := filepath.Join(t.TempDir(), "session.yaml")
	liveTurns, liveEvents := record(t, path, srv.URL+"/v1", "Weather in Paris?", scrubOpts...)
	srv.Close()
	if got := liveEvents.deltas(); got != 6 {
		t.Logf("%q", liveEvents.all)
		t.Fatalf("live run saw %d deltas, want 6", got)
	}

	rep, err := cassette.New(path, scrubOpts...)
	if err != nil {
		t.Fatal(err)
	}
	turns, ev, err := session(t, srv.URL+"/v1", rep.Client(), "Weather in Paris?")
	if err != nil {
		t.Fatal(err)
	}
	if err := rep.Stop(); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(turns, liveTurns) {
		t.Errorf("replayed ledger differs:\n got %#v\nwant %#v", turns, liveTurns)
	}
	if !reflect.DeepEqual(ev.all, liveEvents.all) {
		t.Errorf("replayed events differ:\n got %q\nwant %q", ev.all, liveEvents.all)
	}
	if ev.deltas() != liveEvents.deltas() {
		t.Errorf("replay saw %d deltas, live %d", ev.deltas(), liveEvents.deltas())
	}

	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, secret := range []string{secretKey, secretHeader, secretField, secretReply} {
		if strings.Contains(string(data), secret) {
			t.Errorf("cassette holds the secret %q", secret)
		}
	}
	if !strings.Contains(string(data), cassette.Redacted) {
		t.Errorf("cassette shows no %s marker", cassette.Redacted)
	}
}

func TestReplayChangedRequest(t *testing.T) {
	srv := modelServer(t)
	path := filepath.Join(t.TempDir(), "session.yaml")
	record(t, path, srv.URL+"/v1", "Weather in Paris?", scrubOpts...)
	srv.Close()

	rep, err := cassette.New(path, scrubOpts...)
	if err != nil {
		t.Fatal(err)
	}
	defer rep.Stop()
	_, _, err = session(t, srv.URL+"/v1", rep.Client(), "Weather in Lyon?")
	var miss *cassette.MissError
	if !errors.As(err, &miss) || !errors.Is(err, cassette.ErrNoInteraction) {
		t.Fatalf("err = %v, want a *MissError", err)
	}
	want := `$.messages[0].content: recorded "Weather in Paris?", request "Weather in Lyon?"`
	if miss.Closest != 0 || miss.Difference != want || miss.Path != path {
		t.Errorf("miss = %+v, want closest 0 and difference %s", miss, want)
	}
	if !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "LODE_RECORD=1") {
		t.Errorf("error does not show the difference and the fix: %v", err)
	}
}

func fmtV(v any) string { return fmt.Sprintf("%+v", v) }
