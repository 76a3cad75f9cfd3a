package responses

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/lodeworks/lode/artifact"
	"github.com/lodeworks/lode/ledger"
	"github.com/lodeworks/lode/loop"
	"github.com/lodeworks/lode/provider"
	"github.com/lodeworks/lode/tool"
	"github.com/lodeworks/lode/x/provider/internal/recordings"
)

// The public recordings replayed here: real Responses API sessions (OpenAI
// and Azure OpenAI; gpt-4o, gpt-4o-mini, gpt-5, gpt-5-mini, o4-mini) that
// the charm.land/fantasy module publishes as go-vcr cassettes in its
// providertests/testdata. The module is fetched at test time through the Go
// module proxy into the module cache, at this pinned version; nothing of it
// is committed.
const (
	recordingsModule  = "charm.land/fantasy"
	recordingsVersion = "v0.41.2"
)

// recordingsDir returns the pinned module's cassette folder, or skips or
// fails t as package recordings says.
func recordingsDir(t *testing.T) string {
	t.Helper()
	return filepath.Join(recordings.Dir(t, recordingsModule, recordingsVersion, "recorded Responses API sessions"),
		"providertests", "testdata")
}

// replayServer answers request n with interaction n's response, its body
// byte for byte, and keeps the bodies it was sent.
func replayServer(t *testing.T, c *recordings.Cassette) (*httptest.Server, func() [][]byte) {
	var mu sync.Mutex
	var got [][]byte
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body := new(bytes.Buffer)
		_, _ = body.ReadFrom(r.Body)
		mu.Lock()
		n := len(got)
		got = append(got, body.Bytes())
		mu.Unlock()
		if n >= len(c.Interactions) || !strings.HasSuffix(r.URL.Path, "/responses") {
			t.Errorf("unexpected request %d to %s", n+1, r.URL.Path)
			http.Error(w, "no such interaction", http.StatusTeapot)
			return
		}
		resp := c.Interactions[n].Response
		for k, vs := range resp.Headers {
			w.Header()[k] = vs
		}
		w.WriteHeader(resp.Code)
		_, _ = w.Write([]byte(resp.Body))
	}))
	t.Cleanup(srv.Close)
	return srv, func() [][]byte { mu.Lock(); defer mu.Unlock(); return append([][]byte(nil), got...) }
}

// recorded is what one recorded answer says, read from it here without the
// adapter: the final response object (the terminal event's, when streamed)
// and the streamed deltas.
type recorded struct {
	response map[string]any
	// items are the output items: from output_item.done when streamed
	// (the server encrypts reasoning anew each time it writes an item, so
	// the terminal event's copy differs), else from the response.
	items      []any
	textDeltas string
}

func readRecorded(t *testing.T, body string) recorded {
	t.Helper()
	var r recorded
	if !strings.HasPrefix(strings.TrimSpace(body), "event:") && !strings.HasPrefix(strings.TrimSpace(body), "data:") {
		if err := json.Unmarshal([]byte(body), &r.response); err != nil {
			t.Fatalf("recorded body: %v", err)
		}
		r.items = r.response["output"].([]any)
		return r
	}
	for _, block := range strings.Split(body, "\n\n") {
		for _, line := range strings.Split(block, "\n") {
			data, ok := strings.CutPrefix(line, "data: ")
			if !ok {
				continue
			}
			var ev map[string]any
			if err := json.Unmarshal([]byte(data), &ev); err != nil {
				t.Fatalf("recorded event: %v", err)
			}
			switch ev["type"] {
			case "response.output_item.done":
				r.items = append(r.items, ev["item"])
			case "response.output_text.delta":
				r.textDeltas += ev["delta"].(string)
			case "response.completed", "response.incomplete":
				r.response = ev["response"].(map[string]any)
			}
		}
	}
	if r.response == nil {
		t.Fatal("the recording has no terminal event")
	}
	return r
}

func str(v any) string { s, _ := v.(string); return s }

// expect is the artifacts the recorded response should become, built from
// its output items; a reasoning item's Data is compared as JSON.
func (r recorded) expect() []artifact.Artifact {
	var out []artifact.Artifact
	calls := false
	for _, raw := range r.items {
		it := raw.(map[string]any)
		switch it["type"] {
		case "message":
			var b strings.Builder
			for _, c := range it["content"].([]any) {
				b.WriteString(str(c.(map[string]any)["text"]))
			}
			out = append(out, artifact.Text{Content: b.String()})
		case "reasoning":
			var texts []string
			for _, s := range it["summary"].([]any) {
				texts = append(texts, str(s.(map[string]any)["text"]))
			}
			out = append(out, artifact.Reasoning{Content: strings.Join(texts, "\n\n"), Signature: str(it["encrypted_content"]), Field: FieldItem})
		case "function_call":
			calls = true
			out = append(out, artifact.ToolCall{ID: str(it["call_id"]), Name: str(it["name"]), Arguments: str(it["arguments"])})
		}
	}
	u := r.response["usage"].(map[string]any)
	num := func(m any, k string) int64 { f, _ := m.(map[string]any)[k].(float64); return int64(f) }
	out = append(out, artifact.Usage{
		InputTokens: num(u, "input_tokens"), OutputTokens: num(u, "output_tokens"),
		CachedInputTokens: num(u["input_tokens_details"], "cached_tokens"), ReasoningTokens: num(u["output_tokens_details"], "reasoning_tokens"),
	})
	finish := "stop"
	if calls {
		finish = "tool_calls"
	}
	return append(out, artifact.Finish{Reason: finish})
}

// sameArtifacts compares got with want, a reasoning item's Data as the
// recorded item's JSON value.
func sameArtifacts(t *testing.T, got, want []artifact.Artifact, items []any) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("artifacts =\n%#v\nwant\n%#v", got, want)
	}
	for i := range got {
		g, w := got[i], want[i]
		if gr, ok := g.(artifact.Reasoning); ok {
			var data any
			if err := json.Unmarshal([]byte(gr.Data), &data); err != nil || !reflect.DeepEqual(data, items[i]) {
				t.Errorf("reasoning %d keeps %.300s; the recording has %.300s", i, gr.Data, mustJSON(items[i]))
			}
			gr.Data = ""
			g = gr
		}
		if !reflect.DeepEqual(g, w) {
			t.Errorf("artifact %d = %#v\nwant %#v", i, g, w)
		}
	}
}

func TestReplayRecordedSessions(t *testing.T) {
	dir := recordingsDir(t)
	paths, err := filepath.Glob(filepath.Join(dir, "Test*Responses*", "*", "*.yaml"))
	if err != nil || len(paths) < 40 {
		t.Fatalf("%d recordings found in %s (%v)", len(paths), dir, err)
	}
	for _, path := range paths {
		rel, _ := filepath.Rel(dir, path)
		t.Run(strings.TrimSuffix(rel, ".yaml"), func(t *testing.T) {
			replay(t, recordings.Load(t, path), strings.Contains(path, "stream"))
		})
	}
}

// replay runs a recorded session through the adapter and package loop: a
// user asks, each recorded call is answered with the output the recording
// sent back for it, and the ledger must hold what the recording says.
func replay(t *testing.T, c *recordings.Cassette, stream bool) {
	srv, sent := replayServer(t, c)
	p, err := New(WithModel("gpt-5"), WithAPIKey("sk-replay"), WithBaseURL(srv.URL+"/v1"), WithStreaming(stream),
		WithHTTPClient(srv.Client()), withSleep(noSleep), WithEnv(func(string) string { return "" }))
	if err != nil {
		t.Fatal(err)
	}
	// What the recording's client sent back for each call.
	outputs := map[string]string{}
	var tools []tool.Tool
	for _, in := range c.Interactions {
		var body struct {
			Input []map[string]any `json:"input"`
			Tools []struct {
				Name       string          `json:"name"`
				Parameters json.RawMessage `json:"parameters"`
			} `json:"tools"`
		}
		if err := json.Unmarshal([]byte(in.Request.Body), &body); err != nil {
			t.Fatalf("recorded request: %v", err)
		}
		for _, it := range body.Input {
			if it["type"] == "function_call_output" {
				outputs[str(it["call_id"])] = str(it["output"])
			}
		}
		if tools == nil {
			for _, tl := range body.Tools {
				tools = append(tools, tool.Tool{Name: tl.Name, Schema: tl.Parameters})
			}
		}
	}
	h := loop.HandlerFunc(func(ctx context.Context, a artifact.Artifact, e loop.Emitter) error {
		if call, ok := a.(artifact.ToolCall); ok {
			out, found := outputs[call.ID]
			if !found {
				t.Errorf("the recording answers no call %q", call.ID)
			}
			e.Emit(ctx, loop.TurnCompleteEvent{Role: ledger.RoleTool, Artifacts: []artifact.Artifact{
				artifact.ToolResult{ToolCallID: call.ID, Name: call.Name, Content: out},
			}})
		}
		return nil
	})
	var deltas strings.Builder
	obs := loop.EmitterFunc(func(_ context.Context, ev loop.Event) {
		if d, ok := ev.(loop.DeltaEvent); ok {
			if td, ok := d.Delta.(artifact.TextDelta); ok {
				deltas.WriteString(td.Content)
			}
		}
	})
	step := loop.New(loop.WithHandlers(h), loop.WithObserver(obs), loop.WithInvokeOptions(provider.WithTools(tools)))
	th := ledger.NewThread(ledger.WithClock(nil))
	_ = th.Append(ledger.RoleUser, artifact.Text{Content: "the recorded question"})
	if _, err := step.Run(t.Context(), th, p); err != nil {
		t.Fatal(err)
	}
	if err := step.Flush(t.Context()); err != nil {
		t.Fatal(err)
	}

	var answers []ledger.Turn
	for _, turn := range th.Turns() {
		if turn.Role == ledger.RoleAssistant {
			answers = append(answers, turn)
		}
	}
	if len(answers) != len(c.Interactions) {
		t.Fatalf("%d answers for %d recorded responses", len(answers), len(c.Interactions))
	}
	var allDeltas string
	for i, in := range c.Interactions {
		rec := readRecorded(t, in.Response.Body)
		allDeltas += rec.textDeltas
		sameArtifacts(t, answers[i].Artifacts, rec.expect(), rec.items)
	}
	if stream && deltas.String() != allDeltas {
		t.Errorf("text deltas =\n%q\nrecorded\n%q", deltas.String(), allDeltas)
	}

	// Every reasoning item that came with encrypted_content went back in the
	// next request, unchanged and right before the call it led to.
	bodies := sent()
	for i := 0; i+1 < len(bodies); i++ {
		var next struct {
			Store *bool `json:"store"`
			Input []any `json:"input"`
		}
		if err := json.Unmarshal(bodies[i+1], &next); err != nil {
			t.Fatal(err)
		}
		if next.Store == nil || *next.Store {
			t.Errorf("request %d does not say store: false", i+2)
		}
		items := readRecorded(t, c.Interactions[i].Response.Body).items
		for j, it := range items {
			m := it.(map[string]any)
			if m["type"] != "reasoning" || str(m["encrypted_content"]) == "" {
				continue
			}
			k := indexOf(next.Input, it)
			if k < 0 {
				t.Errorf("reasoning item %s did not go back", str(m["id"]))
				continue
			}
			if j+1 < len(items) && items[j+1].(map[string]any)["type"] == "function_call" {
				call := next.Input[k+1].(map[string]any)
				if call["type"] != "function_call" || call["call_id"] != items[j+1].(map[string]any)["call_id"] {
					t.Errorf("reasoning item %s is not followed by its call: %s", str(m["id"]), mustJSON(call))
				}
			}
		}
		for id, out := range outputs {
			if indexOf(next.Input, map[string]any{"type": "function_call_output", "call_id": id, "output": out}) < 0 {
				t.Errorf("request %d lacks the output of %s", i+2, id)
			}
		}
	}
}

func indexOf(list []any, v any) int {
	for i, x := range list {
		if reflect.DeepEqual(x, v) {
			return i
		}
	}
	return -1
}
