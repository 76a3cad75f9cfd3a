package responses

import (
	"errors"
	"net"
	"net/http"
	"reflect"
	"strings"
	"testing"

	"github.com/lodeworks/lode/artifact"
	"github.com/lodeworks/lode/ledger"
	"github.com/lodeworks/lode/provider"
	"github.com/lodeworks/lode/tool"

	"github.com/lodeworks/lode/x/provider/internal/providertest"
)

func TestStreamText(t *testing.T) {
	f := newFake(t, sse(textAnswer("Hel", "lo", "!")...))
	deltas, arts, err := providertest.CollectContext(t.Context(), f.provider(t), userReq("hi"))
	if err != nil {
		t.Fatal(err)
	}
	wantDeltas := []artifact.Artifact{artifact.TextDelta{Content: "Hel"}, artifact.TextDelta{Content: "lo"}, artifact.TextDelta{Content: "!"}}
	if !reflect.DeepEqual(deltas, wantDeltas) {
		t.Errorf("deltas = %#v", deltas)
	}
	want := []artifact.Artifact{
		artifact.Text{Content: "Hello!"},
		artifact.Usage{InputTokens: 10, OutputTokens: 5, CachedInputTokens: 3, ReasoningTokens: 2},
		artifact.Finish{Reason: "stop"},
	}
	if !reflect.DeepEqual(arts, want) {
		t.Errorf("artifacts = %#v", arts)
	}
	reqs := f.requests()
	if len(reqs) != 1 || reqs[0].Path != "/v1/responses" {
		t.Fatalf("requests = %#v", reqs)
	}
	got := reqs[0].Body
	wantBody := asJSON(t, `{"model":"gpt-test","stream":true,"store":false,"include":["reasoning.encrypted_content"],
		"input":[{"type":"message","role":"user","content":"hi"}]}`)
	if !reflect.DeepEqual(got, wantBody) {
		t.Errorf("body = %s\nwant %s", mustJSON(got), mustJSON(wantBody))
	}
	if h := reqs[0].Header.Get("Authorization"); h != "Bearer sk-test" {
		t.Errorf("Authorization = %q", h)
	}
}

func TestStreamReasoningAndParallelCalls(t *testing.T) {
	f := newFake(t, sse(reasonedCalls()...))
	deltas, arts, err := providertest.CollectContext(t.Context(), f.provider(t), userReq("weather and time?"))
	if err != nil {
		t.Fatal(err)
	}
	wantDeltas := []artifact.Artifact{
		artifact.ReasoningDelta{Content: "Weather "}, artifact.ReasoningDelta{Content: "first."},
		artifact.ReasoningDelta{Content: "\n\n"}, artifact.ReasoningDelta{Content: "Then time."},
		artifact.ToolCallDelta{Index: 0, ID: "call_w", Name: "get_weather"},
		artifact.ToolCallDelta{Index: 0, Arguments: `{"city":`}, artifact.ToolCallDelta{Index: 0, Arguments: `"Paris"}`},
		artifact.ToolCallDelta{Index: 1, ID: "call_t", Name: "get_time"},
		artifact.ToolCallDelta{Index: 1, Arguments: `{"tz":"Europe/Paris"}`},
	}
	if !reflect.DeepEqual(deltas, wantDeltas) {
		t.Errorf("deltas =\n%#v\nwant\n%#v", deltas, wantDeltas)
	}
	want := []artifact.Artifact{
		artifact.Reasoning{Content: "Weather first.\n\nThen time.", Signature: "gAAAA-enc==", Field: FieldItem,
			Data: reasoningItem(0, "gAAAA-enc==", "Weather first.", "Then time.")},
		artifact.ToolCall{ID: "call_w", Name: "get_weather", Arguments: `{"city":"Paris"}`},
		artifact.ToolCall{ID: "call_t", Name: "get_time", Arguments: `{"tz":"Europe/Paris"}`},
		artifact.Usage{InputTokens: 10, OutputTokens: 5, CachedInputTokens: 3, ReasoningTokens: 2},
		artifact.Finish{Reason: "tool_calls"},
	}
	if !reflect.DeepEqual(arts, want) {
		t.Errorf("artifacts =\n%#v\nwant\n%#v", arts, want)
	}
}

// TestRequestMapping sends a whole history: reasoning goes back byte for
// byte before its call, results follow as function_call_output.
func TestRequestMapping(t *testing.T) {
	raw := reasoningItem(0, "gAAAA-enc==", "Weather first.")
	turns := []ledger.Turn{
		{Role: ledger.RoleSystem, Artifacts: []artifact.Artifact{artifact.Text{Content: "Be brief."}}},
		{Role: ledger.RoleUser, Artifacts: []artifact.Artifact{artifact.Text{Content: "Look:"}, artifact.Image{URL: "https://example.test/a.png"}}},
		{Role: ledger.RoleAssistant, Artifacts: []artifact.Artifact{
			artifact.Reasoning{Content: "Weather first.", Signature: "gAAAA-enc==", Field: FieldItem, Data: raw},
			artifact.Reasoning{Content: "from another server"},
			artifact.Reasoning{Content: "from Kimi", Field: "reasoning_details", ContentField: "reasoning_content", Data: `[]`},
			artifact.Text{Content: "Checking."},
			artifact.ToolCall{ID: "call_w", Name: "get_weather", Arguments: `{"city":"Paris"}`},
			artifact.ToolCall{ID: "call_n", Name: "now", Arguments: ``},
			artifact.Usage{InputTokens: 1}, artifact.Finish{Reason: "tool_calls"},
		}},
		{Role: ledger.RoleTool, Artifacts: []artifact.Artifact{
			artifact.ToolResult{ToolCallID: "call_w", Name: "get_weather", Content: "sunny"},
			artifact.ToolResult{ToolCallID: "call_n", Name: "now", IsError: true, Content: "clock broken"},
		}},
		{Role: ledger.RoleUser, Artifacts: []artifact.Artifact{artifact.Text{Content: "Thanks"}}},
	}
	tools := []tool.Tool{
		{Name: "get_weather", Description: "Weather.", Schema: []byte(`{"type":"object","properties":{"city":{"type":"string"}},"required":["city"],"additionalProperties":false}`)},
		{Name: "now", Schema: []byte(`{"type":"object","properties":{"tz":{"type":"string"}}}`)},
	}
	temp, on := 0.0, false
	req := &provider.Request{Turns: turns, Tools: tools, MaxTokens: 300, Temperature: &temp, ParallelToolCalls: &on,
		ToolChoice: provider.ToolChoice{Mode: provider.ToolChoiceTool, Name: "now"}}
	if err := provider.Resolve(t.Context(), ledger.NewThread(ledger.WithID("thread-7")), req, WithThreadCacheKey(), WithEffort("low")); err != nil {
		t.Fatal(err)
	}
	f := newFake(t, sse(textAnswer("ok")...))
	if _, _, err := providertest.CollectContext(t.Context(), f.provider(t, WithReasoningSummary("auto")), req); err != nil {
		t.Fatal(err)
	}
	want := asJSON(t, `{"model":"gpt-test","stream":true,"store":false,"include":["reasoning.encrypted_content"],
		"max_output_tokens":300,"temperature":0,"parallel_tool_calls":false,"prompt_cache_key":"thread-7",
		"reasoning":{"effort":"low","summary":"auto"},
		"tool_choice":{"type":"function","name":"now"},
		"tools":[
			{"type":"function","name":"get_weather","description":"Weather.","strict":true,
			 "parameters":{"type":"object","properties":{"city":{"type":"string"}},"required":["city"],"additionalProperties":false}},
			{"type":"function","name":"now","strict":false,"parameters":{"type":"object","properties":{"tz":{"type":"string"}}}}],
		"input":[
			{"type":"message","role":"system","content":"Be brief."},
			{"type":"message","role":"user","content":[{"type":"input_text","text":"Look:"},{"type":"input_image","image_url":"https://example.test/a.png","detail":"auto"}]},
			`+raw+`,
			{"type":"message","role":"assistant","content":"Checking."},
			{"type":"function_call","call_id":"call_w","name":"get_weather","arguments":"{\"city\":\"Paris\"}"},
			{"type":"function_call","call_id":"call_n","name":"now","arguments":"{}"},
			{"type":"function_call_output","call_id":"call_w","output":"sunny"},
			{"type":"function_call_output","call_id":"call_n","output":"clock broken"},
			{"type":"message","role":"user","content":"Thanks"}]}`)
	got := f.requests()[0]
	if !reflect.DeepEqual(got.Body, want) {
		t.Errorf("body =\n%s\nwant\n%s", mustJSON(got.Body), mustJSON(want))
	}
	if !strings.Contains(string(got.Raw), raw) {
		t.Errorf("the reasoning item did not go back byte for byte:\n%s", got.Raw)
	}
}

func TestRequestErrors(t *testing.T) {
	user := ledger.Turn{Role: ledger.RoleUser, Artifacts: []artifact.Artifact{artifact.Text{Content: "hi"}}}
	cases := []struct {
		name string
		req  *provider.Request
		want string
	}{
		{"stop", &provider.Request{Turns: []ledger.Turn{user}, Stop: []string{"END"}}, "takes no stop sequences"},
		{"negative max", &provider.Request{Turns: []ledger.Turn{user}, MaxTokens: -1}, "must not be negative"},
		{"unknown tool choice", &provider.Request{Turns: []ledger.Turn{user}, ToolChoice: provider.ToolChoice{Mode: provider.ToolChoiceTool, Name: "x"}}, `names "x"`},
		{"required without tools", &provider.Request{Turns: []ledger.Turn{user}, ToolChoice: provider.ToolChoice{Mode: provider.ToolChoiceRequired}}, "no tools offered"},
		{"bad schema", &provider.Request{Turns: []ledger.Turn{user}, Tools: []tool.Tool{{Name: "t", Schema: []byte(`[1]`)}}}, `tool "t": the schema is not a JSON object`},
		{"bad format", &provider.Request{Turns: []ledger.Turn{user}, ResponseFormat: &provider.ResponseFormat{Type: "yaml"}}, `unknown response format type "yaml"`},
		{"call without ID", &provider.Request{Turns: []ledger.Turn{user, {Role: ledger.RoleAssistant, Artifacts: []artifact.Artifact{artifact.ToolCall{Name: "t"}}}}}, "turn 1 (assistant): tool call"},
		{"broken reasoning item", &provider.Request{Turns: []ledger.Turn{user, {Role: ledger.RoleAssistant, Artifacts: []artifact.Artifact{artifact.Reasoning{Field: FieldItem, Signature: "enc", Data: "{"}}}}}, "not JSON"},
		{"text in a tool turn", &provider.Request{Turns: []ledger.Turn{user, {Role: ledger.RoleTool, Artifacts: []artifact.Artifact{artifact.Text{Content: "x"}}}}}, "carries tool results, not a text artifact"},
		{"audio from a user", &provider.Request{Turns: []ledger.Turn{{Role: ledger.RoleUser, Artifacts: []artifact.Artifact{artifact.Audio{Data: []byte{1}}}}}}, "cannot carry an audio artifact"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := newFake(t)
			_, _, err := providertest.CollectContext(t.Context(), f.provider(t), c.req)
			var re *RequestError
			if !errors.As(err, &re) || !strings.Contains(err.Error(), c.want) || !strings.HasPrefix(err.Error(), "responses: request: ") {
				t.Fatalf("err = %v; want a *RequestError saying %q", err, c.want)
			}
			if n := len(f.requests()); n != 0 {
				t.Errorf("%d requests sent", n)
			}
		})
	}
}

func TestResponseFormat(t *testing.T) {
	schema := []byte(`{"type":"object","properties":{"n":{"type":"integer"}},"required":["n"],"additionalProperties":false}`)
	f := newFake(t, sse(textAnswer(`{"n":1}`)...), sse(textAnswer(`{}`)...))
	p := f.provider(t)
	if !p.SupportsResponseFormat(provider.ResponseFormatJSONSchema) || !p.SupportsResponseFormat(provider.ResponseFormatJSONObject) || p.SupportsResponseFormat("yaml") {
		t.Error("SupportsResponseFormat is wrong")
	}
	r := userReq("n?")
	r.ResponseFormat = &provider.ResponseFormat{Type: provider.ResponseFormatJSONSchema, Schema: schema, Description: "a number"}
	if _, _, err := providertest.CollectContext(t.Context(), p, r); err != nil {
		t.Fatal(err)
	}
	r.ResponseFormat = &provider.ResponseFormat{Type: provider.ResponseFormatJSONObject}
	if _, _, err := providertest.CollectContext(t.Context(), p, r); err != nil {
		t.Fatal(err)
	}
	reqs := f.requests()
	want := asJSON(t, `{"format":{"type":"json_schema","name":"answer","description":"a number","strict":true,"schema":`+string(schema)+`}}`)
	if got := reqs[0].Body["text"]; !reflect.DeepEqual(got, want) {
		t.Errorf("text = %s", mustJSON(got))
	}
	if got := reqs[1].Body["text"]; !reflect.DeepEqual(got, asJSON(t, `{"format":{"type":"json_object"}}`)) {
		t.Errorf("text = %s", mustJSON(got))
	}
}

func TestFinishReasons(t *testing.T) {
	msg := func(extra string) []string {
		return []string{created(), added(0, messageItem(0, "")), textDelta(0, "cut"), done(0, messageItem(0, "cut")), extra}
	}
	cases := []struct {
		name   string
		events []string
		want   string
	}{
		{"completed", msg(completed("completed", "")), "stop"},
		{"max_output_tokens", msg(completed("incomplete", `,"incomplete_details":{"reason":"max_output_tokens"}`)), "length"},
		{"content_filter", msg(completed("incomplete", `,"incomplete_details":{"reason":"content_filter"}`)), "content_filter"},
		{"other reason", msg(completed("incomplete", `,"incomplete_details":{"reason":"something_new"}`)), "something_new"},
		{"refusal", []string{created(), added(0, messageItem(0, "")),
			`{"type":"response.refusal.delta","output_index":0,"delta":"I can't."}`,
			done(0, `{"id":"msg_0","type":"message","role":"assistant","content":[{"type":"refusal","refusal":"I can't."}]}`),
			completed("completed", "")}, "content_filter"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := newFake(t, sse(c.events...))
			_, arts, err := providertest.CollectContext(t.Context(), f.provider(t), userReq("x"))
			if err != nil {
				t.Fatal(err)
			}
			if got := arts[len(arts)-1]; got != (artifact.Finish{Reason: c.want}) {
				t.Errorf("finish = %#v; want %q", got, c.want)
			}
			if _, ok := arts[0].(artifact.Text); !ok {
				t.Errorf("the text before the end is lost: %#v", arts)
			}
		})
	}
}

func TestStreamFailures(t *testing.T) {
	cases := []struct {
		name   string
		events []string
		check  func(t *testing.T, err error)
	}{
		{"response.failed", []string{created(), `{"type":"response.failed","response":{` + respHead + `,"status":"failed","error":{"code":"server_error","message":"The model failed."}}}`},
			func(t *testing.T, err error) {
				var ae *APIError
				if !errors.As(err, &ae) || ae.Code != "server_error" || ae.Message != "The model failed." || ae.ResponseID != "resp_1" || !errors.Is(err, ErrServer) {
					t.Fatalf("err = %#v", err)
				}
				if err.Error() != "responses: error in stream (server_error): The model failed. — the server failed; try again later" {
					t.Errorf("text = %q", err)
				}
			}},
		{"error event", []string{created(), `{"type":"error","code":"rate_limit_exceeded","message":"Slow down.","param":null,"sequence_number":1}`},
			func(t *testing.T, err error) {
				var ae *APIError
				if !errors.As(err, &ae) || ae.Code != "rate_limit_exceeded" || ae.Message != "Slow down." || !errors.Is(err, ErrRateLimited) || ae.StatusCode != 0 {
					t.Fatalf("err = %#v", err)
				}
			}},
		{"error event with an error object", []string{created(),
			`{"type":"error","sequence_number":2,"error":{"type":"insufficient_quota","code":"insufficient_quota","message":"Out of credit.","param":null}}`,
			`{"type":"response.failed","response":{` + respHead + `,"status":"failed","error":{"code":"insufficient_quota","message":"Out of credit."}}}`},
			func(t *testing.T, err error) {
				var ae *APIError
				if !errors.As(err, &ae) || ae.Code != "insufficient_quota" || ae.Type != "insufficient_quota" || ae.Message != "Out of credit." || ae.ResponseID != "resp_1" {
					t.Fatalf("err = %#v", err)
				}
				if err.Error() != "responses: error in stream (insufficient_quota): Out of credit. — the account is out of quota: check its plan and billing" {
					t.Errorf("text = %q", err)
				}
			}},
		{"failed by a rate limit", []string{created(), `{"type":"response.failed","response":{` + respHead + `,"status":"failed","error":{"code":"rate_limit_exceeded","message":"Request too large."}}}`},
			func(t *testing.T, err error) {
				if !errors.Is(err, ErrRateLimited) || !strings.Contains(err.Error(), "rate limited: slow down") {
					t.Fatalf("err = %v", err)
				}
			}},
		{"error event without an error", []string{created(), `{"type":"error","sequence_number":2}`}, kind(ErrMalformed, "error event without an error")},
		{"cut before completed", textAnswer("a", "b")[:4], kind(ErrIncomplete, "before response.completed")},
		{"nothing at all", nil, kind(ErrIncomplete, "before response.completed")},
		{"delta to no item", []string{created(), textDelta(3, "x")}, kind(ErrMalformed, "output item 3, which was not added")},
		{"delta of the wrong type", []string{created(), added(0, messageItem(0, "")), argsDelta(0, "{")}, kind(ErrMalformed, "to output item 0, a message")},
		{"item out of order", []string{created(), added(1, messageItem(1, ""))}, kind(ErrMalformed, "adds output item 1; item 0 was expected")},
		{"delta after done", []string{created(), added(0, messageItem(0, "")), done(0, messageItem(0, "")), textDelta(0, "late")}, kind(ErrMalformed, "which is done")},
		{"done of another type", []string{created(), added(0, messageItem(0, "")), done(0, callItem(0, "c", "n", "{}"))}, kind(ErrMalformed, "added as a message")},
		{"item not an object", []string{created(), `{"type":"response.output_item.added","output_index":0,"item":[1]}`}, kind(ErrMalformed, "not an object")},
		{"terminal without response", []string{created(), `{"type":"response.completed"}`}, kind(ErrMalformed, "has no response")},
		{"summary part skipped", []string{created(), added(0, `{"id":"rs_0","type":"reasoning","summary":[]}`), summaryPart(0, 1)}, kind(ErrMalformed, "part 0 was expected")},
		{"call without name", []string{created(), added(0, `{"type":"function_call","call_id":"c1","name":""}`), done(0, `{"type":"function_call","call_id":"c1","name":"","arguments":"{}"}`), completed("completed", "")},
			kind(ErrInvalidToolCall, "lacks a name")},
		{"calls sharing an ID", []string{created(), added(0, callItem(0, "c1", "a", "{}")), done(0, callItem(0, "c1", "a", "{}")),
			added(1, callItem(1, "c1", "b", "{}")), done(1, callItem(1, "c1", "b", "{}")), completed("completed", "")}, kind(ErrInvalidToolCall, `share the call ID "c1"`)},
		{"status still in progress", []string{created(), `{"type":"response.completed","response":{` + respHead + `,"status":"in_progress"}}`}, kind(ErrIncomplete, `status "in_progress"`)},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := newFake(t, sse(c.events...))
			_, _, err := providertest.CollectContext(t.Context(), f.provider(t), userReq("x"))
			c.check(t, err)
		})
	}
}

// kind checks err is a *ResponseError of kind k saying detail.
func kind(k error, detail string) func(*testing.T, error) {
	return func(t *testing.T, err error) {
		t.Helper()
		var re *ResponseError
		if !errors.As(err, &re) || !errors.Is(err, k) || !strings.Contains(err.Error(), detail) {
			t.Fatalf("err = %v; want %v saying %q", err, k, detail)
		}
	}
}

func TestStreamNotJSON(t *testing.T) {
	f := newFake(t, func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = w.Write([]byte(event(created()) + "event: response.output_text.delta\ndata: {not json\n\n"))
	})
	_, _, err := providertest.CollectContext(t.Context(), f.provider(t), userReq("x"))
	kind(ErrMalformed, "event 2 is not JSON")(t, err)
	var re *ResponseError
	errors.As(err, &re)
	if re.Data != "{not json" {
		t.Errorf("data = %q", re.Data)
	}
}

// TestStreamBrokenConnection closes the connection in the middle of an
// event: the deltas before it were yielded, and the error says the stream
// broke.
func TestStreamBrokenConnection(t *testing.T) {
	f := newFake(t, func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
		evs := textAnswer("one ", "two")
		_, _ = w.Write([]byte(event(evs[0]) + event(evs[1]) + event(evs[2]) + "event: response.output_text.delta\ndata: {\"type\":\"resp"))
		w.(http.Flusher).Flush()
		conn, _, err := http.NewResponseController(w).Hijack()
		if err != nil {
			t.Error(err)
			return
		}
		if tc, ok := conn.(*net.TCPConn); ok {
			_ = tc.SetLinger(0)
		}
		conn.Close()
	})
	deltas, _, err := providertest.CollectContext(t.Context(), f.provider(t), userReq("x"))
	if len(deltas) != 1 || deltas[0] != (artifact.TextDelta{Content: "one "}) {
		t.Errorf("deltas = %#v", deltas)
	}
	if !errors.Is(err, ErrIncomplete) && !errors.Is(err, ErrMalformed) {
		t.Fatalf("err = %v", err)
	}
}

func TestWholeResponse(t *testing.T) {
	body := `{` + respHead + `,"status":"completed","output":[` + reasoningItem(0, "enc", "Think.") + `,` + messageItem(1, "Hi") + `,` +
		callItem(2, "call_1", "f", `{"a":1}`) + `],"usage":` + usageJSON(7, 4) + `}`
	f := newFake(t, jsonReply(200, body))
	deltas, arts, err := providertest.CollectContext(t.Context(), f.provider(t, WithStreaming(false)), userReq("x"))
	if err != nil {
		t.Fatal(err)
	}
	if len(deltas) != 0 {
		t.Errorf("deltas = %#v", deltas)
	}
	want := []artifact.Artifact{
		artifact.Reasoning{Content: "Think.", Signature: "enc", Field: FieldItem, Data: reasoningItem(0, "enc", "Think.")},
		artifact.Text{Content: "Hi"},
		artifact.ToolCall{ID: "call_1", Name: "f", Arguments: `{"a":1}`},
		artifact.Usage{InputTokens: 7, OutputTokens: 4, CachedInputTokens: 3, ReasoningTokens: 2},
		artifact.Finish{Reason: "tool_calls"},
	}
	if !reflect.DeepEqual(arts, want) {
		t.Errorf("artifacts =\n%#v\nwant\n%#v", arts, want)
	}
	if _, ok := f.requests()[0].Body["stream"]; ok {
		t.Error("a whole request asked for a stream")
	}
}

func TestWholeResponseHostile(t *testing.T) {
	cases := []struct {
		name, body string
		check      func(*testing.T, error)
	}{
		{"not JSON", `<html>`, kind(ErrMalformed, "not a response object")},
		{"failed", `{` + respHead + `,"status":"failed","error":{"code":"server_error","message":"boom"},"output":[]}`, func(t *testing.T, err error) {
			if !errors.Is(err, ErrServer) {
				t.Fatalf("err = %v", err)
			}
		}},
		{"no status", `{` + respHead + `,"output":[]}`, kind(ErrIncomplete, "no status")},
		{"item not an object", `{` + respHead + `,"status":"completed","output":["x"]}`, kind(ErrMalformed, "output item 0 is not an object")},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := newFake(t, jsonReply(200, c.body))
			_, _, err := providertest.CollectContext(t.Context(), f.provider(t, WithStreaming(false)), userReq("x"))
			c.check(t, err)
		})
	}
}

func TestPreviousResponse(t *testing.T) {
	f := newFake(t, sse(reasonedCalls()...), sse(textAnswer("done")...))
	p := f.provider(t, WithPreviousResponse(true))
	_, arts, err := providertest.CollectContext(t.Context(), p, userReq("go"))
	if err != nil {
		t.Fatal(err)
	}
	marker := artifact.Reasoning{Field: FieldResponseID, Data: "resp_1"}
	if arts[3] != marker {
		t.Fatalf("artifacts = %#v", arts)
	}
	turns := []ledger.Turn{
		userReq("go").Turns[0],
		{Role: ledger.RoleAssistant, Artifacts: arts},
		{Role: ledger.RoleTool, Artifacts: []artifact.Artifact{
			artifact.ToolResult{ToolCallID: "call_w", Content: "sunny"}, artifact.ToolResult{ToolCallID: "call_t", Content: "noon"},
		}},
	}
	if _, _, err := providertest.CollectContext(t.Context(), p, &provider.Request{Turns: turns}); err != nil {
		t.Fatal(err)
	}
	reqs := f.requests()
	if reqs[0].Body["store"] != true || reqs[0].Body["include"] != nil || reqs[0].Body["previous_response_id"] != nil {
		t.Errorf("first body = %s", reqs[0].Raw)
	}
	want := asJSON(t, `[{"type":"function_call_output","call_id":"call_w","output":"sunny"},{"type":"function_call_output","call_id":"call_t","output":"noon"}]`)
	if reqs[1].Body["previous_response_id"] != "resp_1" || !reflect.DeepEqual(reqs[1].Body["input"], want) {
		t.Errorf("second body = %s", reqs[1].Raw)
	}

	// Off (the default), the marker is not sent and the whole history goes.
	g := newFake(t, sse(textAnswer("done")...))
	if _, _, err := providertest.CollectContext(t.Context(), g.provider(t), &provider.Request{Turns: turns}); err != nil {
		t.Fatal(err)
	}
	body := g.requests()[0].Body
	if body["previous_response_id"] != nil || len(body["input"].([]any)) != 6 {
		t.Errorf("body without chaining = %s", g.requests()[0].Raw)
	}
}

func TestConsumerStops(t *testing.T) {
	f := newFake(t, sse(textAnswer("a", "b", "c")...))
	n := 0
	for _, err := range f.provider(t).Invoke(t.Context(), userReq("x")) {
		if err != nil {
			t.Fatal(err)
		}
		n++
		break
	}
	if n != 1 {
		t.Errorf("%d yields after break", n)
	}
}

func TestStreamHostileLines(t *testing.T) {
	cases := []struct {
		name string
		body string
		want error
		text string
	}{
		{"a line longer than the bound", event(created()) + "data: {\"type\":\"response.output_text.delta\",\"delta\":\"" + strings.Repeat("x", 5000), ErrMalformed, "longer than 4096 bytes"},
		{"only lines that are not events", strings.Repeat(": ping\n", 10001), ErrMalformed, "too many lines that are not events"},
		{"an HTML page", "<html><body>gateway</body></html>\n", ErrIncomplete, "before response.completed"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := newFake(t, func(w http.ResponseWriter, _ *http.Request) {
				w.Header().Set("Content-Type", "text/event-stream")
				_, _ = w.Write([]byte(c.body))
			})
			_, _, err := providertest.CollectContext(t.Context(), f.provider(t, withMaxLine(4096)), userReq("x"))
			kind(c.want, c.text)(t, err)
		})
	}
	// A JSON answer to a streaming request says what to do.
	f := newFake(t, jsonReply(200, `{"id":"resp_1","status":"completed","output":[]}`))
	_, _, err := providertest.CollectContext(t.Context(), f.provider(t), userReq("x"))
	kind(ErrIncomplete, "use WithStreaming(false)")(t, err)
}

// TestStreamChatError: a gateway that answers a stream with a
// chat-completions style error line gets an *APIError with its message.
func TestStreamChatError(t *testing.T) {
	f := newFake(t, func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = w.Write([]byte("data: {\"error\":{\"message\":\"upstream overloaded\",\"type\":\"server_error\",\"code\":\"server_error\"}}\n\n"))
	})
	_, _, err := providertest.CollectContext(t.Context(), f.provider(t), userReq("x"))
	var ae *APIError
	if !errors.As(err, &ae) || ae.Message != "upstream overloaded" || !errors.Is(err, ErrServer) || ae.StatusCode/100 == 2 {
		t.Fatalf("err = %#v", err)
	}
}

// TestWholeResponseBeyondGoOpenAI: a member go-openai types otherwise
// (here metadata as a list) does not stop the answer, which this package
// reads itself.
func TestWholeResponseBeyondGoOpenAI(t *testing.T) {
	body := `{` + respHead + `,"status":"completed","metadata":["odd"],"output":[` + messageItem(0, "Hi") + `],"usage":` + usageJSON(7, 4) + `}`
	f := newFake(t, jsonReply(200, body))
	_, arts, err := providertest.CollectContext(t.Context(), f.provider(t, WithStreaming(false)), userReq("x"))
	if err != nil {
		t.Fatal(err)
	}
	if len(arts) != 3 || arts[0] != (artifact.Text{Content: "Hi"}) {
		t.Errorf("artifacts = %#v", arts)
	}
}
