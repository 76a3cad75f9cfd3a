package openai

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/lodeworks/lode/artifact"
	"github.com/lodeworks/lode/ledger"
	"github.com/lodeworks/lode/provider"
	"github.com/lodeworks/lode/tool"
	"github.com/lodeworks/lode/x/provider/internal/recordings"
)

// The public recordings replayed here: real chat-completions exchanges
// with OpenAI's reasoning models (gpt-5, gpt-5-mini, gpt-5.4-nano, o4-mini),
// sent to OpenAI, Azure OpenAI, OpenRouter and Vercel's gateway, which the
// charm.land/fantasy module publishes as go-vcr cassettes in its
// providertests/testdata. The module is fetched at test time through the Go
// module proxy into the module cache, at this pinned version; nothing of it
// is committed. The Responses adapter's replay test reads the same module.
const (
	chatRecordingsModule  = "charm.land/fantasy"
	chatRecordingsVersion = "v0.41.2"
)

// reasoningModelName is the model names replayed: the gpt-5 family and the
// o-series, as OpenAI names them or as a gateway does ("openai/gpt-5").
var reasoningModelName = regexp.MustCompile(`^([a-z-]+/)?(gpt-5|o[1-9])`)

// chatBody is the part of a recorded chat-completions request the replay
// rebuilds the invocation from.
type chatBody struct {
	Model               string            `json:"model"`
	Messages            []json.RawMessage `json:"messages"`
	MaxTokens           *int              `json:"max_tokens"`
	MaxCompletionTokens *int              `json:"max_completion_tokens"`
	Stream              bool              `json:"stream"`
	ToolChoice          any               `json:"tool_choice"`
	Tools               []struct {
		Function struct {
			Name        string          `json:"name"`
			Description string          `json:"description"`
			Parameters  json.RawMessage `json:"parameters"`
		} `json:"function"`
	} `json:"tools"`
	ResponseFormat *struct {
		Type       string `json:"type"`
		JSONSchema *struct {
			Name        string          `json:"name"`
			Description string          `json:"description"`
			Schema      json.RawMessage `json:"schema"`
		} `json:"json_schema"`
	} `json:"response_format"`
	ReasoningEffort string          `json:"reasoning_effort"`
	Reasoning       json.RawMessage `json:"reasoning"`
	Usage           json.RawMessage `json:"usage"`
}

type chatMessage struct {
	Role       string          `json:"role"`
	Content    json.RawMessage `json:"content"`
	ToolCallID string          `json:"tool_call_id"`
	ToolCalls  []struct {
		ID       string `json:"id"`
		Function struct {
			Name      string `json:"name"`
			Arguments string `json:"arguments"`
		} `json:"function"`
	} `json:"tool_calls"`
	ReasoningDetails json.RawMessage `json:"reasoning_details"`
}

// TestReplayRecordedReasoningModels replays every recorded chat-completions
// exchange with a gpt-5 or o-series model against a server at a loopback
// address, as a gateway would be: each request must go out, with the token
// cap as max_completion_tokens, and the adapter's answer must be what the
// recorded response says.
func TestReplayRecordedReasoningModels(t *testing.T) {
	dir := filepath.Join(recordings.Dir(t, chatRecordingsModule, chatRecordingsVersion, "recorded chat-completions sessions"),
		"providertests", "testdata")
	paths, err := filepath.Glob(filepath.Join(dir, "*", "*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	more, _ := filepath.Glob(filepath.Join(dir, "*", "*", "*.yaml"))
	paths = append(paths, more...)
	var n, gpt5 int
	for _, path := range paths {
		c := recordings.Load(t, path)
		rel, _ := filepath.Rel(dir, path)
		for i, in := range c.Interactions {
			if !strings.HasSuffix(in.Request.URL, "/chat/completions") {
				continue
			}
			var body chatBody
			if err := json.Unmarshal([]byte(in.Request.Body), &body); err != nil {
				t.Fatalf("%s: request %d: %v", rel, i, err)
			}
			if !reasoningModelName.MatchString(body.Model) {
				continue
			}
			n++
			if strings.Contains(body.Model, "gpt-5") {
				gpt5++
			}
			t.Run(fmt.Sprintf("%s/%d", strings.TrimSuffix(rel, ".yaml"), i), func(t *testing.T) {
				replayExchange(t, in, body)
			})
		}
	}
	// The pinned module holds 66 such exchanges, 50 of them with gpt-5
	// models; fewer means the recordings were not all found.
	if n != 66 || gpt5 != 50 {
		t.Errorf("replayed %d exchanges, %d with gpt-5 models; the recordings hold 66 and 50", n, gpt5)
	}
	t.Logf("replayed %d recorded exchanges, %d with gpt-5 models", n, gpt5)
}

// replayExchange sends one recorded request through the adapter to a
// loopback server that answers with the recorded response, byte for byte.
func replayExchange(t *testing.T, in recordings.Interaction, body chatBody) {
	var mu sync.Mutex
	var sent [][]byte
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var b bytes.Buffer
		_, _ = b.ReadFrom(r.Body)
		mu.Lock()
		sent = append(sent, b.Bytes())
		n := len(sent)
		mu.Unlock()
		if n > 1 || r.URL.Path != "/v1/chat/completions" {
			t.Errorf("unexpected request %d to %s", n, r.URL.Path)
			http.Error(w, "no such interaction", http.StatusTeapot)
			return
		}
		for k, vs := range in.Response.Headers {
			w.Header()[k] = vs
		}
		w.WriteHeader(in.Response.Code)
		_, _ = w.Write([]byte(in.Response.Body))
	}))
	defer srv.Close()

	p, err := New(WithModel(body.Model), WithAPIKey("sk-replay"), WithBaseURL(srv.URL+"/v1"),
		WithHTTPClient(srv.Client()), WithStreaming(body.Stream), WithJSONSchemaFormat(true),
		withSleep(noSleep), WithEnv(func(string) string { return "" }))
	if err != nil {
		t.Fatal(err)
	}
	req, opts := rebuildRequest(t, body)
	if err := provider.Resolve(t.Context(), nil, req, opts...); err != nil {
		t.Fatal(err)
	}
	var got []artifact.Artifact
	var textDeltas, reasoningDeltas strings.Builder
	for a, err := range p.Invoke(t.Context(), req) {
		if err != nil {
			t.Fatalf("invoke: %v", err)
		}
		switch a := a.(type) {
		case artifact.TextDelta:
			textDeltas.WriteString(a.Content)
		case artifact.ReasoningDelta:
			reasoningDeltas.WriteString(a.Content)
		case artifact.ToolCallDelta:
		default:
			got = append(got, a)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if len(sent) != 1 {
		t.Fatalf("%d requests reached the server, want 1", len(sent))
	}
	checkSentBody(t, sent[0], in.Request.Body, body)

	want := recordedAnswer(t, in.Response.Body, body.Stream)
	if body.Stream {
		if textDeltas.String() != want.text {
			t.Errorf("text deltas = %q, recorded %q", textDeltas.String(), want.text)
		}
		if reasoningDeltas.String() != want.reasoning {
			t.Errorf("reasoning deltas = %q, recorded %q", reasoningDeltas.String(), want.reasoning)
		}
	}
	sameAnswer(t, got, want)
}

// rebuildRequest turns a recorded request into the ledger turns and
// invocation options that should send it again.
func rebuildRequest(t *testing.T, body chatBody) (*provider.Request, []provider.InvokeOption) {
	t.Helper()
	req := &provider.Request{}
	names := map[string]string{} // tool names by call ID
	for i, raw := range body.Messages {
		var m chatMessage
		if err := json.Unmarshal(raw, &m); err != nil {
			t.Fatalf("recorded message %d: %v", i, err)
		}
		var turn ledger.Turn
		switch m.Role {
		case "system", "user":
			turn.Role = ledger.RoleSystem
			if m.Role == "user" {
				turn.Role = ledger.RoleUser
			}
			turn.Artifacts = contentArtifacts(t, m.Content)
		case "assistant":
			turn.Role = ledger.RoleAssistant
			if len(m.ReasoningDetails) > 0 {
				turn.Artifacts = append(turn.Artifacts, artifact.Reasoning{Field: fieldReasoningDetails, Data: string(m.ReasoningDetails)})
			}
			turn.Artifacts = append(turn.Artifacts, contentArtifacts(t, m.Content)...)
			for _, c := range m.ToolCalls {
				names[c.ID] = c.Function.Name
				turn.Artifacts = append(turn.Artifacts, artifact.ToolCall{ID: c.ID, Name: c.Function.Name, Arguments: c.Function.Arguments})
			}
		case "tool":
			var s string
			if err := json.Unmarshal(m.Content, &s); err != nil {
				t.Fatalf("recorded tool message %d: %v", i, err)
			}
			turn.Role = ledger.RoleTool
			turn.Artifacts = []artifact.Artifact{artifact.ToolResult{ToolCallID: m.ToolCallID, Name: names[m.ToolCallID], Content: s}}
		default:
			t.Fatalf("recorded message %d has role %q", i, m.Role)
		}
		req.Turns = append(req.Turns, turn)
	}
	var opts []provider.InvokeOption
	if body.MaxCompletionTokens != nil {
		opts = append(opts, provider.WithMaxTokens(*body.MaxCompletionTokens))
	}
	if body.MaxTokens != nil {
		opts = append(opts, provider.WithMaxTokens(*body.MaxTokens))
	}
	var tools []tool.Tool
	for _, tl := range body.Tools {
		tools = append(tools, tool.Tool{Name: tl.Function.Name, Description: tl.Function.Description, Schema: tl.Function.Parameters})
	}
	if tools != nil {
		opts = append(opts, provider.WithTools(tools))
	}
	switch body.ToolChoice {
	case nil:
	case "auto":
		opts = append(opts, provider.WithToolChoice(provider.ToolChoice{Mode: provider.ToolChoiceAuto}))
	default:
		t.Fatalf("recorded tool_choice %v is not replayed", body.ToolChoice)
	}
	if f := body.ResponseFormat; f != nil {
		rf := provider.ResponseFormat{Type: f.Type}
		if s := f.JSONSchema; s != nil {
			rf.Name, rf.Description, rf.Schema = s.Name, s.Description, s.Schema
		}
		opts = append(opts, provider.WithResponseFormat(rf))
	}
	if body.ReasoningEffort != "" {
		opts = append(opts, WithReasoningEffort(body.ReasoningEffort))
	}
	if body.Reasoning != nil {
		opts = append(opts, WithBodyField("reasoning", body.Reasoning))
	}
	if body.Usage != nil {
		opts = append(opts, WithBodyField("usage", body.Usage))
	}
	return req, opts
}

// contentArtifacts reads a message's content: a string, null, or a list
// of text and image_url parts.
func contentArtifacts(t *testing.T, raw json.RawMessage) []artifact.Artifact {
	t.Helper()
	if len(raw) == 0 || string(raw) == "null" {
		return nil
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return []artifact.Artifact{artifact.Text{Content: s}}
	}
	var parts []struct {
		Type     string `json:"type"`
		Text     string `json:"text"`
		ImageURL struct {
			URL    string `json:"url"`
			Detail string `json:"detail"`
		} `json:"image_url"`
	}
	if err := json.Unmarshal(raw, &parts); err != nil {
		t.Fatalf("recorded content: %v", err)
	}
	var out []artifact.Artifact
	for _, p := range parts {
		switch p.Type {
		case "text":
			out = append(out, artifact.Text{Content: p.Text})
		case "image_url":
			out = append(out, artifact.Image{URL: p.ImageURL.URL, Detail: p.ImageURL.Detail})
		default:
			t.Fatalf("recorded content part %q is not replayed", p.Type)
		}
	}
	return out
}

// checkSentBody compares what the adapter sent with what was recorded: the
// same model, messages and tool names, and the token cap under
// max_completion_tokens, or no cap when the recording set none.
func checkSentBody(t *testing.T, sent []byte, recordedBody string, body chatBody) {
	t.Helper()
	var got, want map[string]any
	if err := json.Unmarshal(sent, &got); err != nil {
		t.Fatalf("sent body: %v\n%s", err, sent)
	}
	if err := json.Unmarshal([]byte(recordedBody), &want); err != nil {
		t.Fatal(err)
	}
	if got["model"] != body.Model {
		t.Errorf("sent model %v, recorded %q", got["model"], body.Model)
	}
	if _, ok := got["max_tokens"]; ok {
		t.Errorf("sent max_tokens %v to a reasoning model", got["max_tokens"])
	}
	if !reflect.DeepEqual(got["max_completion_tokens"], want["max_completion_tokens"]) {
		t.Errorf("sent max_completion_tokens %v, recorded %v", got["max_completion_tokens"], want["max_completion_tokens"])
	}
	if gs, ws := got["stream"] == true, body.Stream; gs != ws {
		t.Errorf("sent stream %v, recorded %v", gs, ws)
	}
	for _, k := range []string{"reasoning_effort", "reasoning", "usage", "tool_choice"} {
		if !reflect.DeepEqual(got[k], want[k]) {
			t.Errorf("sent %s %v, recorded %v", k, got[k], want[k])
		}
	}
	if !reflect.DeepEqual(toolNames(got["tools"]), toolNames(want["tools"])) {
		t.Errorf("sent tools %v, recorded %v", toolNames(got["tools"]), toolNames(want["tools"]))
	}
	gm, _ := got["messages"].([]any)
	wm, _ := want["messages"].([]any)
	if len(gm) != len(wm) {
		t.Fatalf("sent %d messages, recorded %d", len(gm), len(wm))
	}
	for i := range wm {
		if !reflect.DeepEqual(gm[i], wm[i]) {
			t.Errorf("message %d sent as\n%s\nrecorded as\n%s", i, mustMarshal(gm[i]), mustMarshal(wm[i]))
		}
	}
}

func toolNames(v any) []string {
	var out []string
	list, _ := v.([]any)
	for _, tl := range list {
		fn, _ := tl.(map[string]any)["function"].(map[string]any)
		name, _ := fn["name"].(string)
		out = append(out, name)
	}
	return out
}

func mustMarshal(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// chatAnswer is what a recorded response says, read from it here
// without the adapter.
type chatAnswer struct {
	text, reasoning string
	// details is the reasoning_details list of a whole response; for a
	// stream, detailCount is how many items its fragments make, by index.
	details     any
	detailCount int
	calls       []artifact.ToolCall
	usage       *artifact.Usage
	finish      string
}

type wireAnswerUsage struct {
	PromptTokens        int64 `json:"prompt_tokens"`
	CompletionTokens    int64 `json:"completion_tokens"`
	TotalTokens         int64 `json:"total_tokens"`
	PromptTokensDetails struct {
		CachedTokens int64 `json:"cached_tokens"`
	} `json:"prompt_tokens_details"`
	CompletionTokensDetails struct {
		ReasoningTokens int64 `json:"reasoning_tokens"`
	} `json:"completion_tokens_details"`
}

type wireAnswerMessage struct {
	Content          *string         `json:"content"`
	Reasoning        string          `json:"reasoning"`
	ReasoningContent string          `json:"reasoning_content"`
	ReasoningDetails json.RawMessage `json:"reasoning_details"`
	ToolCalls        []struct {
		Index    *int   `json:"index"`
		ID       string `json:"id"`
		Function struct {
			Name      string `json:"name"`
			Arguments string `json:"arguments"`
		} `json:"function"`
	} `json:"tool_calls"`
}

type wireAnswer struct {
	Choices []struct {
		Message      wireAnswerMessage `json:"message"`
		Delta        wireAnswerMessage `json:"delta"`
		FinishReason string            `json:"finish_reason"`
	} `json:"choices"`
	Usage *wireAnswerUsage `json:"usage"`
}

func recordedAnswer(t *testing.T, body string, stream bool) chatAnswer {
	t.Helper()
	var a chatAnswer
	var u *wireAnswerUsage
	if !stream {
		var w wireAnswer
		if err := json.Unmarshal([]byte(body), &w); err != nil || len(w.Choices) != 1 {
			t.Fatalf("recorded response (%v): %.300s", err, body)
		}
		m := w.Choices[0].Message
		if m.Content != nil {
			a.text = *m.Content
		}
		a.reasoning = cmp.Or(m.ReasoningContent, m.Reasoning)
		if len(m.ReasoningDetails) > 0 && string(m.ReasoningDetails) != "null" {
			if err := json.Unmarshal(m.ReasoningDetails, &a.details); err != nil {
				t.Fatal(err)
			}
		}
		for _, c := range m.ToolCalls {
			a.calls = append(a.calls, artifact.ToolCall{ID: c.ID, Name: c.Function.Name, Arguments: c.Function.Arguments})
		}
		a.finish, u = w.Choices[0].FinishReason, w.Usage
	} else {
		detailIndexes := map[float64]bool{}
		callAt := map[int]int{}
		for _, line := range strings.Split(body, "\n") {
			data, ok := strings.CutPrefix(strings.TrimSpace(line), "data:")
			data = strings.TrimSpace(data)
			if !ok || data == "[DONE]" {
				continue
			}
			var w wireAnswer
			if err := json.Unmarshal([]byte(data), &w); err != nil {
				t.Fatalf("recorded chunk: %v: %s", err, data)
			}
			if w.Usage != nil {
				u = w.Usage
			}
			for _, ch := range w.Choices {
				d := ch.Delta
				if d.Content != nil {
					a.text += *d.Content
				}
				a.reasoning += cmp.Or(d.ReasoningContent, d.Reasoning)
				var items []map[string]any
				_ = json.Unmarshal(d.ReasoningDetails, &items)
				for _, it := range items {
					idx, _ := it["index"].(float64)
					detailIndexes[idx] = true
				}
				for _, c := range d.ToolCalls {
					k, found := callAt[*c.Index]
					if !found {
						k = len(a.calls)
						callAt[*c.Index] = k
						a.calls = append(a.calls, artifact.ToolCall{})
					}
					tc := &a.calls[k]
					tc.ID += c.ID
					tc.Name += c.Function.Name
					tc.Arguments += c.Function.Arguments
				}
				if ch.FinishReason != "" {
					a.finish = ch.FinishReason
				}
			}
		}
		a.detailCount = len(detailIndexes)
	}
	if u != nil {
		a.usage = &artifact.Usage{
			InputTokens: u.PromptTokens, OutputTokens: u.CompletionTokens,
			CachedInputTokens: u.PromptTokensDetails.CachedTokens, ReasoningTokens: u.CompletionTokensDetails.ReasoningTokens,
		}
	}
	return a
}

// sameAnswer checks the adapter's artifacts, in its order (Reasoning, Text,
// ToolCalls, Usage, Finish), against the recorded answer.
func sameAnswer(t *testing.T, got []artifact.Artifact, want chatAnswer) {
	t.Helper()
	var wantArts []artifact.Artifact
	if want.reasoning != "" || want.details != nil || want.detailCount > 0 {
		wantArts = append(wantArts, artifact.Reasoning{})
	}
	if want.text != "" {
		wantArts = append(wantArts, artifact.Text{Content: want.text})
	}
	for _, c := range want.calls {
		wantArts = append(wantArts, c)
	}
	if want.usage != nil {
		wantArts = append(wantArts, *want.usage)
	}
	wantArts = append(wantArts, artifact.Finish{Reason: want.finish})
	if len(got) != len(wantArts) {
		t.Fatalf("artifacts =\n%#v\nwant\n%#v", got, wantArts)
	}
	for i := range got {
		r, ok := got[i].(artifact.Reasoning)
		if !ok {
			if !reflect.DeepEqual(got[i], wantArts[i]) {
				t.Errorf("artifact %d = %#v\nwant %#v", i, got[i], wantArts[i])
			}
			continue
		}
		if _, ok := wantArts[i].(artifact.Reasoning); !ok {
			t.Errorf("artifact %d = %#v\nwant %#v", i, got[i], wantArts[i])
			continue
		}
		if r.Content != want.reasoning {
			t.Errorf("reasoning = %q, recorded %q", r.Content, want.reasoning)
		}
		if want.details == nil && want.detailCount == 0 {
			if r.Data != "" {
				t.Errorf("reasoning data %.200s, none recorded", r.Data)
			}
			continue
		}
		var data []any
		if err := json.Unmarshal([]byte(r.Data), &data); err != nil {
			t.Errorf("reasoning data is not a JSON list: %v: %.200s", err, r.Data)
			continue
		}
		if want.details != nil && !reflect.DeepEqual(any(data), want.details) {
			t.Errorf("reasoning data %.300s, recorded %.300s", r.Data, mustMarshal(want.details))
		}
		if want.detailCount > 0 && len(data) != want.detailCount {
			t.Errorf("reasoning data has %d items, the stream's fragments make %d", len(data), want.detailCount)
		}
	}
}
