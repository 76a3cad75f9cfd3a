package gemini

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/lodeworks/lode/artifact"
	"github.com/lodeworks/lode/ledger"
	"github.com/lodeworks/lode/provider"
)

// Every answer that breaks the protocol ends with the exact kind of error,
// never a short answer.
func TestHostileStreams(t *testing.T) {
	text := `{"candidates":[{"content":{"parts":[{"text":"a"}],"role":"model"}}]}`
	cases := []struct {
		name string
		rep  reply
		kind error
		msg  string
	}{
		{"garbage chunk", reply{sse: true, body: sse(text, `{not json`)}, ErrMalformed, "chunk 2 is not a response"},
		{"binary noise", reply{sse: true, body: "data: \x00\xff\xfe\r\n\r\n"}, ErrMalformed, "chunk 1 is not a response"},
		{"chunk of the wrong shape", reply{sse: true, body: sse(`{"candidates":{"a":1}}`)}, ErrMalformed, "chunk 1 is not a response"},
		{"part of the wrong shape", reply{sse: true, body: sse(`{"candidates":[{"content":{"parts":["text"]}}]}`)}, ErrMalformed, "a part of chunk 1 is not a part"},
		{"no finish reason", reply{sse: true, body: sse(text, text)}, ErrIncomplete, "the answer ended without a finish reason"},
		{"empty stream", reply{sse: true, body: ""}, ErrIncomplete, "the stream ended before any chunk"},
		{"comments only", reply{sse: true, body: ": keep-alive\r\n\r\n"}, ErrIncomplete, "the stream ended before any chunk"},
		{"event cut before its blank line", reply{sse: true, body: sse(text) + `data: {"candidates":[{"finishReason":"STOP"}]}`}, ErrIncomplete, "the stream ended inside event 2"},
		{"connection cut", reply{sse: true, partial: true, body: sse(text)}, ErrIncomplete, "the connection broke mid-stream"},
		{"call without a name", reply{sse: true, body: sse(`{"candidates":[{"content":{"parts":[{"functionCall":{"args":{"a":1}}}]},"finishReason":"STOP"}]}`)}, ErrInvalidToolCall, "function call 0 has no name"},
		{"enum of the wrong type", reply{sse: true, body: sse(`{"candidates":[{"finishReason":true}]}`)}, ErrMalformed, "chunk 1 is not a response"},
		{"array cut", reply{body: `[{"candidates":[{"content":{"parts":[{"text":"a"}]}}]}`}, ErrIncomplete, "the stream's array is not closed"},
		{"array with garbage", reply{body: `[{"candidates":[]}, nonsense]`}, ErrMalformed, "chunk 2 is not JSON"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := newTestProvider(t, newFake(t, c.rep))
			_, whole, err := collect(p, userText("x"))
			if !errors.Is(err, c.kind) || !strings.Contains(err.Error(), c.msg) {
				t.Fatalf("err = %v, want %v with %q", err, c.kind, c.msg)
			}
			if len(whole) != 0 {
				t.Errorf("whole artifacts with an error: %v", whole)
			}
		})
	}
}

func TestHugeEvent(t *testing.T) {
	for _, body := range []string{
		"data: " + strings.Repeat("x", 300_000) + "\r\n\r\n",                // one line past the limit
		strings.Repeat("data: "+strings.Repeat("x", 1000)+"\n", 300) + "\n", // many lines past it
	} {
		p := newTestProvider(t, newFake(t, reply{sse: true, body: body}), withMaxEvent(200_000))
		_, _, err := collect(p, userText("x"))
		if !errors.Is(err, ErrMalformed) || !strings.Contains(err.Error(), "event 1 is longer than 200000 bytes") {
			t.Fatalf("err = %v", err)
		}
	}
}

// Long lines (past the reader's buffer), data split over several lines, LF
// framing, and fields Gemini does not use are all read.
func TestStreamFraming(t *testing.T) {
	long := strings.Repeat("y", 100_000)
	body := "event: message\nid: 1\ndata: {\"candidates\":[{\"content\":{\"parts\":[{\"text\":\"" + long + "\"}]}}]}\n\n" +
		": comment\n" +
		"data: {\"candidates\":[{\"content\":\n" +
		"data: {\"parts\":[{\"text\":\"!\"}]},\"finishReason\":\"STOP\"}]}\n\n"
	p := newTestProvider(t, newFake(t, reply{sse: true, body: body}))
	_, whole, err := collect(p, userText("x"))
	if err != nil {
		t.Fatal(err)
	}
	if tx := whole[0].(artifact.Text); tx.Content != long+"!" {
		t.Fatalf("text of %d bytes", len(tx.Content))
	}
}

// Parts of kinds this adapter does not map are kept as they came and sent
// back; unknown fields and candidates beyond the first are ignored.
func TestUnknownPartsKept(t *testing.T) {
	code := `{"executableCode":{"language":"PYTHON","code":"print(1+1)"}}`
	result := `{"codeExecutionResult":{"outcome":"OUTCOME_OK","output":"2\n"}}`
	f := newFake(t,
		reply{sse: true, body: sse(
			`{"candidates":[{"content":{"parts":[` + code + `,` + result + `,{"text":"It is 2.","futureField":{"x":1}}],"role":"model"},"finishReason":"STOP","groundingMetadata":{}},{"index":1,"content":{"parts":[{"text":"other"}]}}],"newTopLevel":[1,2]}`,
		)},
		reply{sse: true, body: sse(okText)},
	)
	p := newTestProvider(t, f)
	_, whole, err := collect(p, userText("1+1?"))
	if err != nil {
		t.Fatal(err)
	}
	want := []artifact.Artifact{
		artifact.Reasoning{Field: FieldPart, Data: code},
		artifact.Reasoning{Field: FieldPart, Data: result},
		artifact.Text{Content: "It is 2."},
		artifact.Finish{Reason: "stop"},
	}
	if !reflect.DeepEqual(whole, want) {
		t.Fatalf("whole %#v", whole)
	}
	tt := turns(user("1+1?"), ledger.Turn{Role: ledger.RoleAssistant, Artifacts: whole}, user("thanks"))
	if _, _, err := collect(p, &provider.Request{Turns: tt}); err != nil {
		t.Fatal(err)
	}
	got := mustJSON(t, dig(f.last(), "contents", 1, "parts"))
	wantP := `[{"executableCode":{"code":"print(1+1)","language":"PYTHON"}},{"codeExecutionResult":{"outcome":"OUTCOME_OK","output":"2\n"}},{"text":"It is 2."}]`
	if got != wantP {
		t.Errorf("parts\n%s\nwant\n%s", got, wantP)
	}
}

// Arguments that are not an object are kept as sent for the tool to refuse,
// and go back as {}; a call without args has {}.
func TestOddArguments(t *testing.T) {
	f := newFake(t,
		reply{sse: true, body: sse(`{"candidates":[{"content":{"parts":[{"functionCall":{"name":"f","args":"{\"a\": 1"}},{"functionCall":{"name":"g"}},{"functionCall":{"name":"h","args":null}}]},"finishReason":"STOP"}]}`)},
		reply{sse: true, body: sse(okText)},
	)
	p := newTestProvider(t, f)
	_, whole, err := collect(p, userText("x"))
	if err != nil {
		t.Fatal(err)
	}
	args := []string{whole[0].(artifact.ToolCall).Arguments, whole[1].(artifact.ToolCall).Arguments, whole[2].(artifact.ToolCall).Arguments}
	if !reflect.DeepEqual(args, []string{`"{\"a\": 1"`, "{}", "{}"}) {
		t.Fatalf("arguments %q", args)
	}
	var results []artifact.Artifact
	for _, a := range whole[:3] {
		c := a.(artifact.ToolCall)
		results = append(results, artifact.ToolResult{ToolCallID: c.ID, Name: c.Name, Content: "bad arguments", IsError: true})
	}
	tt := turns(user("x"), ledger.Turn{Role: ledger.RoleAssistant, Artifacts: whole}, ledger.Turn{Role: ledger.RoleTool, Artifacts: results})
	if _, _, err := collect(p, &provider.Request{Turns: tt}); err != nil {
		t.Fatal(err)
	}
	got := mustJSON(t, dig(f.last(), "contents", 1, "parts", 0))
	if got != `{"functionCall":{"name":"f"}}` {
		t.Errorf("part %s", got)
	}
}

// A candidate with no content, or a chunk with nothing but usage, is no
// error; the answer is what the finish reason closes.
func TestMissingFields(t *testing.T) {
	p := newTestProvider(t, newFake(t, reply{sse: true, body: sse(
		`{}`,
		`{"candidates":[{"content":{"parts":[{"thought":true},{"text":""}]}}]}`,
		`{"usageMetadata":{"promptTokenCount":3}}`,
		`{"candidates":[{"finishReason":"STOP"}]}`,
	)}))
	_, whole, err := collect(p, userText("x"))
	if err != nil {
		t.Fatal(err)
	}
	want := []artifact.Artifact{artifact.Usage{InputTokens: 3}, artifact.Finish{Reason: "stop"}}
	if !reflect.DeepEqual(whole, want) {
		t.Fatalf("whole %v", whole)
	}
}

// A server that answers the stream as a JSON array (no alt=sse) is read.
func TestArrayStream(t *testing.T) {
	body := "[{\n  \"candidates\": [{\"content\": {\"parts\": [{\"text\": \"A\"}], \"role\": \"model\"}}]\n}\n,\n{\n  \"candidates\": [{\"content\": {\"parts\": [{\"text\": \"B\"}], \"role\": \"model\"}, \"finishReason\": 1}],\n  \"usageMetadata\": {\"promptTokenCount\": 2, \"candidatesTokenCount\": 2, \"totalTokenCount\": 4}\n}\n]"
	p := newTestProvider(t, newFake(t, reply{body: body}))
	deltas, whole, err := collect(p, userText("x"))
	if err != nil {
		t.Fatal(err)
	}
	want := []artifact.Artifact{artifact.Text{Content: "AB"}, artifact.Usage{InputTokens: 2, OutputTokens: 2}, artifact.Finish{Reason: "stop"}}
	if !reflect.DeepEqual(whole, want) || len(deltas) != 2 {
		t.Fatalf("whole %v deltas %v", whole, deltas)
	}
}

func TestConsumerStops(t *testing.T) {
	f := newFake(t, reply{sse: true, body: sse(`{"candidates":[{"content":{"parts":[{"text":"a"}]}}]}`, `{"candidates":[{"content":{"parts":[{"text":"b"}]},"finishReason":"STOP"}]}`)})
	p := newTestProvider(t, f)
	n := 0
	for range p.Invoke(t.Context(), userText("x")) {
		n++
		break
	}
	if n != 1 {
		t.Fatalf("yielded %d after the consumer stopped", n)
	}
}

// A connection that fails after the chunk with the finish reason loses
// nothing: the answer is whole.
func TestCutAfterFinish(t *testing.T) {
	p := newTestProvider(t, newFake(t, reply{sse: true, partial: true, body: sse(okText)}))
	_, whole, err := collect(p, userText("x"))
	if err != nil {
		t.Fatal(err)
	}
	want := []artifact.Artifact{artifact.Text{Content: "ok"}, artifact.Finish{Reason: "stop"}}
	if !reflect.DeepEqual(whole, want) {
		t.Fatalf("whole %v", whole)
	}
}
