package gemini

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/lodeworks/lode/artifact"
	"github.com/lodeworks/lode/ledger"
	"github.com/lodeworks/lode/provider"
	"github.com/lodeworks/lode/tool"
)

func user(s string) ledger.Turn {
	return ledger.Turn{Role: ledger.RoleUser, Artifacts: []artifact.Artifact{artifact.Text{Content: s}}}
}

func turns(ts ...ledger.Turn) []ledger.Turn { return ts }

func TestStreamText(t *testing.T) {
	f := newFake(t, reply{sse: true, body: sse(
		`{"candidates":[{"content":{"parts":[{"text":"Hel"}],"role":"model"}}],"usageMetadata":{"promptTokenCount":12},"modelVersion":"gemini-2.5-flash","responseId":"r1"}`,
		`{"candidates":[{"content":{"parts":[{"text":"lo"}],"role":"model"},"finishReason":"STOP","index":0}],"usageMetadata":{"promptTokenCount":12,"candidatesTokenCount":2,"thoughtsTokenCount":30,"cachedContentTokenCount":8,"totalTokenCount":44},"modelVersion":"gemini-2.5-flash","responseId":"r1"}`,
	)})
	p := newTestProvider(t, f)
	deltas, whole, err := collect(p, userText("hi"))
	if err != nil {
		t.Fatal(err)
	}
	wantD := []artifact.Artifact{artifact.TextDelta{Content: "Hel"}, artifact.TextDelta{Content: "lo"}}
	wantW := []artifact.Artifact{
		artifact.Text{Content: "Hello"},
		artifact.Usage{InputTokens: 12, OutputTokens: 32, CachedInputTokens: 8, ReasoningTokens: 30},
		artifact.Finish{Reason: "stop"},
	}
	if !reflect.DeepEqual(deltas, wantD) || !reflect.DeepEqual(whole, wantW) {
		t.Fatalf("deltas %v\nwhole %v", deltas, whole)
	}
	r := f.requests()[0]
	if r.method != "POST" || r.path != "/v1beta/models/gemini-2.5-flash:streamGenerateContent" || r.query != "alt=sse" {
		t.Errorf("request %s %s?%s", r.method, r.path, r.query)
	}
	if r.header.Get("X-Goog-Api-Key") != "test-key" {
		t.Errorf("api key header %q", r.header.Get("X-Goog-Api-Key"))
	}
	if got := mustJSON(t, r.body["contents"]); got != `[{"parts":[{"text":"hi"}],"role":"user"}]` {
		t.Errorf("contents %s", got)
	}
}

// A turn of Gemini 3 with thinking: a thought summary, then two parallel
// calls, the first signed; the next request sends all of it back as it
// came, and the tool results in one user content.
func TestParallelCallsAndSignaturesGoBack(t *testing.T) {
	const sig = "CpwBAdHtim9Ws0vU+9DzNwK7kcy/4V1kW1Sj2X0fFJmRvdy3SBS5Yj1sZh3c0uLq6Yx5bGk9a5F/4bC="
	f := newFake(t,
		reply{sse: true, body: sse(
			`{"candidates":[{"content":{"parts":[{"text":"Thinking about weather","thought":true}],"role":"model"}}]}`,
			`{"candidates":[{"content":{"parts":[{"functionCall":{"name":"weather","args":{"city":"Paris","unit":"c"}},"thoughtSignature":"`+sig+`"},{"functionCall":{"name":"weather","args":{"city":"Rome"}}}],"role":"model"},"finishReason":"STOP"}],"usageMetadata":{"promptTokenCount":20,"candidatesTokenCount":10,"totalTokenCount":30}}`,
		)},
		reply{sse: true, body: sse(`{"candidates":[{"content":{"parts":[{"text":"Sunny both.","thoughtSignature":"AAAA"}],"role":"model"},"finishReason":"STOP"}]}`)},
	)
	p := newTestProvider(t, f)
	tools := []tool.Tool{{Name: "weather", Description: "Weather of a city", Schema: []byte(`{"type":"object","properties":{"city":{"type":"string"}}}`)}}
	req := &provider.Request{Turns: turns(user("weather in Paris and Rome?")), Tools: tools}
	deltas, whole, err := collect(p, req)
	if err != nil {
		t.Fatal(err)
	}
	id1, id2 := idPrefix+"1", idPrefix+"2"
	want := []artifact.Artifact{
		artifact.Reasoning{Content: "Thinking about weather", Field: FieldThought},
		artifact.Reasoning{Signature: sig, Field: FieldSignature},
		artifact.ToolCall{ID: id1, Name: "weather", Arguments: `{"city":"Paris","unit":"c"}`},
		artifact.ToolCall{ID: id2, Name: "weather", Arguments: `{"city":"Rome"}`},
		artifact.Usage{InputTokens: 20, OutputTokens: 10},
		artifact.Finish{Reason: "tool_calls"},
	}
	if !reflect.DeepEqual(whole, want) {
		t.Fatalf("whole:\n%#v\nwant:\n%#v", whole, want)
	}
	wantD := []artifact.Artifact{
		artifact.ReasoningDelta{Content: "Thinking about weather"},
		artifact.ToolCallDelta{Index: 0, ID: id1, Name: "weather", Arguments: `{"city":"Paris","unit":"c"}`},
		artifact.ToolCallDelta{Index: 1, ID: id2, Name: "weather", Arguments: `{"city":"Rome"}`},
	}
	if !reflect.DeepEqual(deltas, wantD) {
		t.Errorf("deltas %#v", deltas)
	}

	th := ledger.NewThread()
	_ = th.Append(ledger.RoleUser, artifact.Text{Content: "weather in Paris and Rome?"})
	_ = th.Append(ledger.RoleAssistant, whole...)
	_ = th.Append(ledger.RoleTool,
		artifact.ToolResult{ToolCallID: id1, Name: "weather", Content: "sunny"},
		artifact.ToolResult{ToolCallID: id2, Name: "weather", Content: "no such city", IsError: true})
	if _, _, err := collect(p, &provider.Request{Turns: th.Turns(), Tools: tools}); err != nil {
		t.Fatal(err)
	}
	got := mustJSON(t, f.last()["contents"])
	wantC := `[{"parts":[{"text":"weather in Paris and Rome?"}],"role":"user"},` +
		`{"parts":[{"text":"Thinking about weather","thought":true},` +
		`{"functionCall":{"args":{"city":"Paris","unit":"c"},"name":"weather"},"thoughtSignature":"` + sig + `"},` +
		`{"functionCall":{"args":{"city":"Rome"},"name":"weather"}}],"role":"model"},` +
		`{"parts":[{"functionResponse":{"name":"weather","response":{"output":"sunny"}}},` +
		`{"functionResponse":{"name":"weather","response":{"error":"no such city"}}}],"role":"user"}]`
	if got != wantC {
		t.Errorf("contents sent back:\n%s\nwant:\n%s", got, wantC)
	}
	// The signature is the very text the server sent, byte for byte.
	if raw := f.requests()[1].raw; !strings.Contains(raw, `"thoughtSignature":"`+sig+`"`) {
		t.Errorf("raw request lacks the signature as sent: %s", raw)
	}
}

// IDs the server sends are kept and sent back.
func TestCallIDsFromServer(t *testing.T) {
	f := newFake(t,
		reply{sse: true, body: sse(`{"candidates":[{"content":{"parts":[{"functionCall":{"id":"fc-7","name":"f","args":{}}}],"role":"model"},"finishReason":"STOP"}]}`)},
		reply{sse: true, body: sse(`{"candidates":[{"content":{"parts":[{"text":"ok"}],"role":"model"},"finishReason":"STOP"}]}`)},
	)
	p := newTestProvider(t, f)
	_, whole, err := collect(p, userText("go"))
	if err != nil {
		t.Fatal(err)
	}
	if c := whole[0].(artifact.ToolCall); c.ID != "fc-7" || c.Arguments != "{}" {
		t.Fatalf("call %+v", c)
	}
	tt := turns(user("go"),
		ledger.Turn{Role: ledger.RoleAssistant, Artifacts: whole},
		ledger.Turn{Role: ledger.RoleTool, Artifacts: []artifact.Artifact{artifact.ToolResult{ToolCallID: "fc-7", Content: "done"}}})
	if _, _, err := collect(p, &provider.Request{Turns: tt}); err != nil {
		t.Fatal(err)
	}
	got := mustJSON(t, dig(f.last(), "contents"))
	want := `[{"parts":[{"text":"go"}],"role":"user"},{"parts":[{"functionCall":{"id":"fc-7","name":"f"}}],"role":"model"},{"parts":[{"functionResponse":{"id":"fc-7","name":"f","response":{"output":"done"}}}],"role":"user"}]`
	if got != want {
		t.Errorf("contents\n%s\nwant\n%s", got, want)
	}
}

// Gemini 3 may end a streamed text with an empty part carrying the
// signature; a signed part in mid-text is a Text of its own, and each goes
// back as the part it came as.
func TestSignedTextParts(t *testing.T) {
	f := newFake(t,
		reply{sse: true, body: sse(
			`{"candidates":[{"content":{"parts":[{"text":"One "}],"role":"model"}}]}`,
			`{"candidates":[{"content":{"parts":[{"text":"two.","thoughtSignature":"U0lHMQ=="}],"role":"model"}}]}`,
			`{"candidates":[{"content":{"parts":[{"text":" Three."}],"role":"model"}}]}`,
			`{"candidates":[{"content":{"parts":[{"text":"","thoughtSignature":"U0lHMg=="}],"role":"model"},"finishReason":"STOP"}]}`,
		)},
		reply{sse: true, body: sse(`{"candidates":[{"content":{"parts":[{"text":"ok"}],"role":"model"},"finishReason":"STOP"}]}`)},
	)
	p := newTestProvider(t, f)
	_, whole, err := collect(p, userText("count"))
	if err != nil {
		t.Fatal(err)
	}
	want := []artifact.Artifact{
		artifact.Text{Content: "One "},
		artifact.Reasoning{Signature: "U0lHMQ==", Field: FieldSignature},
		artifact.Text{Content: "two."},
		artifact.Text{Content: " Three."},
		artifact.Reasoning{Signature: "U0lHMg==", Field: FieldSignature},
		artifact.Text{Content: ""},
		artifact.Finish{Reason: "stop"},
	}
	if !reflect.DeepEqual(whole, want) {
		t.Fatalf("whole %#v", whole)
	}
	tt := turns(user("count"), ledger.Turn{Role: ledger.RoleAssistant, Artifacts: whole}, user("again"))
	if _, _, err := collect(p, &provider.Request{Turns: tt}); err != nil {
		t.Fatal(err)
	}
	got := mustJSON(t, dig(f.last(), "contents", 1))
	wantC := `{"parts":[{"text":"One "},{"text":"two.","thoughtSignature":"U0lHMQ=="},{"text":" Three."},{"thoughtSignature":"U0lHMg=="}],"role":"model"}`
	if got != wantC {
		t.Errorf("model content\n%s\nwant\n%s", got, wantC)
	}
}

// A signature-only part (no text key) before a call stays on its own part.
func TestSignatureOnlyPartBeforeCall(t *testing.T) {
	f := newFake(t,
		reply{sse: true, body: sse(`{"candidates":[{"content":{"parts":[{"thoughtSignature":"QUJD"},{"functionCall":{"name":"f","args":{"a":1}}}],"role":"model"},"finishReason":"STOP"}]}`)},
		reply{sse: true, body: sse(`{"candidates":[{"content":{"parts":[{"text":"ok"}],"role":"model"},"finishReason":"STOP"}]}`)},
	)
	p := newTestProvider(t, f)
	_, whole, err := collect(p, userText("x"))
	if err != nil {
		t.Fatal(err)
	}
	tt := turns(user("x"), ledger.Turn{Role: ledger.RoleAssistant, Artifacts: whole},
		ledger.Turn{Role: ledger.RoleTool, Artifacts: []artifact.Artifact{artifact.ToolResult{ToolCallID: idPrefix + "1", Name: "f", Content: "1"}}})
	if _, _, err := collect(p, &provider.Request{Turns: tt}); err != nil {
		t.Fatal(err)
	}
	got := mustJSON(t, dig(f.last(), "contents", 1, "parts"))
	want := `[{"thoughtSignature":"QUJD"},{"functionCall":{"args":{"a":1},"name":"f"}}]`
	if got != want {
		t.Errorf("parts %s, want %s", got, want)
	}
}

func TestFinishReasons(t *testing.T) {
	cases := []struct {
		reason, msg string
		name        string // the reason's name, when reason is a number
		want        string // the Finish reason, or
		kind        error  // the error kind
	}{
		{reason: `"STOP"`, want: "stop"},
		{reason: `"MAX_TOKENS"`, want: "length"},
		{reason: `"SAFETY"`, want: "content_filter"},
		{reason: `"RECITATION"`, want: "content_filter"},
		{reason: `"PROHIBITED_CONTENT"`, want: "content_filter"},
		{reason: `"OTHER"`, want: "other"},
		{reason: `"LANGUAGE"`, want: "language"},
		{reason: `2`, want: "length"}, // enum-encoding=int
		{reason: `6`, want: "language"},
		{reason: `10`, name: "MALFORMED_FUNCTION_CALL", kind: ErrInvalidToolCall},
		{reason: `"MALFORMED_FUNCTION_CALL"`, msg: "Malformed function call: print(x=", kind: ErrInvalidToolCall},
		{reason: `"UNEXPECTED_TOOL_CALL"`, kind: ErrInvalidToolCall},
	}
	for _, c := range cases {
		t.Run(c.reason, func(t *testing.T) {
			ch := `{"candidates":[{"content":{"parts":[{"text":"partial"}],"role":"model"},"finishReason":` + c.reason
			if c.msg != "" {
				ch += `,"finishMessage":"` + c.msg + `"`
			}
			ch += `}]}`
			p := newTestProvider(t, newFake(t, reply{sse: true, body: sse(ch)}))
			_, whole, err := collect(p, userText("x"))
			if c.kind != nil {
				name := c.name
				if name == "" {
					name = strings.Trim(c.reason, `"`)
				}
				var re *ResponseError
				if !errors.Is(err, c.kind) || !errors.As(err, &re) || re.Reason != name || !strings.Contains(err.Error(), c.msg) {
					t.Fatalf("err = %v", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			want := []artifact.Artifact{artifact.Text{Content: "partial"}, artifact.Finish{Reason: c.want}}
			if !reflect.DeepEqual(whole, want) {
				t.Errorf("whole %v", whole)
			}
		})
	}
}

func TestPromptBlocked(t *testing.T) {
	p := newTestProvider(t, newFake(t, reply{sse: true, body: sse(`{"promptFeedback":{"blockReason":"SAFETY","safetyRatings":[{"category":"HARM_CATEGORY_HARASSMENT","probability":"HIGH"}]},"usageMetadata":{"promptTokenCount":7,"totalTokenCount":7}}`)}))
	_, _, err := collect(p, userText("x"))
	var re *ResponseError
	if !errors.Is(err, ErrBlocked) || !errors.As(err, &re) || re.Reason != "SAFETY" {
		t.Fatalf("err = %v", err)
	}
	if err.Error() != "gemini: prompt blocked: the prompt was blocked (SAFETY)" {
		t.Errorf("text %q", err.Error())
	}
}

func TestWholeAnswer(t *testing.T) {
	f := newFake(t, reply{body: `{
  "candidates": [{"content": {"parts": [{"text": "Hi "}, {"text": "there"}, {"functionCall": {"name": "f", "args": {"q": [1, 2]}}}], "role": "model"}, "finishReason": "STOP", "index": 0}],
  "usageMetadata": {"promptTokenCount": 5, "candidatesTokenCount": 4, "totalTokenCount": 9},
  "modelVersion": "gemini-2.5-pro", "responseId": "abc"
}`})
	p := newTestProvider(t, f, WithStreaming(false))
	deltas, whole, err := collect(p, userText("x"))
	if err != nil {
		t.Fatal(err)
	}
	if len(deltas) != 0 {
		t.Errorf("deltas without streaming: %v", deltas)
	}
	want := []artifact.Artifact{
		artifact.Text{Content: "Hi there"},
		artifact.ToolCall{ID: idPrefix + "1", Name: "f", Arguments: `{"q": [1, 2]}`},
		artifact.Usage{InputTokens: 5, OutputTokens: 4},
		artifact.Finish{Reason: "tool_calls"},
	}
	if !reflect.DeepEqual(whole, want) {
		t.Fatalf("whole %#v", whole)
	}
	if r := f.requests()[0]; r.path != "/v1beta/models/gemini-2.5-flash:generateContent" || r.query != "" {
		t.Errorf("request %s?%s", r.path, r.query)
	}
}
