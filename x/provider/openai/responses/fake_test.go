package responses

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/lodeworks/lode/artifact"
	"github.com/lodeworks/lode/ledger"
	"github.com/lodeworks/lode/provider"
	"github.com/lodeworks/lode/x/provider/openai/openaitest"
)

// fakeServer speaks the Responses API's wire format on 127.0.0.1: it
// answers the n-th request with the n-th reply and records every request.
type fakeServer struct{ srv *openaitest.Server }

func newFake(t *testing.T, replies ...http.HandlerFunc) *fakeServer {
	t.Helper()
	return &fakeServer{srv: openaitest.NewServer(t, replies...)}
}

func (f *fakeServer) requests() []openaitest.Request { return f.srv.Requests() }

func noSleep(context.Context, time.Duration) error { return nil }

func (f *fakeServer) provider(t *testing.T, opts ...Option) *Provider {
	t.Helper()
	base := []Option{
		WithAPIKey("sk-test"), WithModel("gpt-test"), WithBaseURL(f.srv.BaseURL()),
		WithHTTPClient(f.srv.Client()), withSleep(noSleep), WithEnv(func(string) string { return "" }),
	}
	p, err := New(append(base, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// event is one server-sent event as the API writes it.
func event(data string) string {
	var head struct {
		Type string `json:"type"`
	}
	if err := json.Unmarshal([]byte(data), &head); err != nil {
		panic(fmt.Sprintf("bad test event %s: %v", data, err))
	}
	return "event: " + head.Type + "\ndata: " + data + "\n\n"
}

// sse streams the events, each given as the JSON of its data.
func sse(events ...string) http.HandlerFunc {
	var b strings.Builder
	for _, e := range events {
		b.WriteString(event(e))
	}
	return openaitest.Raw(b.String())
}

func jsonReply(status int, body string, headers ...string) http.HandlerFunc {
	return openaitest.JSON(status, body, headers...)
}

func q(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

const respHead = `"id":"resp_1","object":"response","created_at":1760000000,"model":"gpt-test-2025"`

func created() string {
	return `{"type":"response.created","sequence_number":0,"response":{` + respHead + `,"status":"in_progress","output":[],"usage":null}}`
}

// usageJSON is a usage object with 3 cached input tokens and 2 reasoning
// tokens.
func usageJSON(in, out int) string {
	return fmt.Sprintf(`{"input_tokens":%d,"input_tokens_details":{"cached_tokens":3},"output_tokens":%d,"output_tokens_details":{"reasoning_tokens":2},"total_tokens":%d}`, in, out, in+out)
}

func completed(status, extra string) string {
	return `{"type":"response.` + status + `","sequence_number":99,"response":{` + respHead + `,"status":"` + status + `"` + extra +
		`,"usage":` + usageJSON(10, 5) + `}}`
}

func added(i int, itemJSON string) string {
	return fmt.Sprintf(`{"type":"response.output_item.added","output_index":%d,"item":%s}`, i, itemJSON)
}

func done(i int, itemJSON string) string {
	return fmt.Sprintf(`{"type":"response.output_item.done","output_index":%d,"item":%s}`, i, itemJSON)
}

func textDelta(i int, s string) string {
	return fmt.Sprintf(`{"type":"response.output_text.delta","item_id":"msg_%d","output_index":%d,"content_index":0,"delta":%s}`, i, i, q(s))
}

func argsDelta(i int, s string) string {
	return fmt.Sprintf(`{"type":"response.function_call_arguments.delta","item_id":"fc_%d","output_index":%d,"delta":%s}`, i, i, q(s))
}

func summaryDelta(i, part int, s string) string {
	return fmt.Sprintf(`{"type":"response.reasoning_summary_text.delta","item_id":"rs_%d","output_index":%d,"summary_index":%d,"delta":%s}`, i, i, part, q(s))
}

func summaryPart(i, part int) string {
	return fmt.Sprintf(`{"type":"response.reasoning_summary_part.added","item_id":"rs_%d","output_index":%d,"summary_index":%d,"part":{"type":"summary_text","text":""}}`, i, i, part)
}

func messageItem(i int, text string) string {
	return fmt.Sprintf(`{"id":"msg_%d","type":"message","status":"completed","role":"assistant","content":[{"type":"output_text","annotations":[],"text":%s}]}`, i, q(text))
}

func callItem(i int, callID, name, args string) string {
	return fmt.Sprintf(`{"id":"fc_%d","type":"function_call","status":"completed","arguments":%s,"call_id":%q,"name":%q}`, i, q(args), callID, name)
}

// reasoningItem is a reasoning item with an encrypted_content and the
// summary parts given.
func reasoningItem(i int, enc string, summary ...string) string {
	parts := make([]string, len(summary))
	for j, s := range summary {
		parts[j] = `{"type":"summary_text","text":` + q(s) + `}`
	}
	return fmt.Sprintf(`{"id":"rs_%d","type":"reasoning","encrypted_content":%q,"summary":[%s]}`, i, enc, strings.Join(parts, ","))
}

// textAnswer streams a one-message answer in the deltas given.
func textAnswer(deltas ...string) []string {
	evs := []string{created(), added(0, `{"id":"msg_0","type":"message","status":"in_progress","role":"assistant","content":[]}`)}
	for _, d := range deltas {
		evs = append(evs, textDelta(0, d))
	}
	return append(evs, done(0, messageItem(0, strings.Join(deltas, ""))), completed("completed", ""))
}

// reasonedCalls streams a reasoning item and two parallel calls.
func reasonedCalls() []string {
	return []string{
		created(),
		added(0, `{"id":"rs_0","type":"reasoning","summary":[]}`),
		summaryPart(0, 0),
		summaryDelta(0, 0, "Weather "), summaryDelta(0, 0, "first."),
		summaryPart(0, 1),
		summaryDelta(0, 1, "Then time."),
		done(0, reasoningItem(0, "gAAAA-enc==", "Weather first.", "Then time.")),
		added(1, `{"id":"fc_1","type":"function_call","status":"in_progress","arguments":"","call_id":"call_w","name":"get_weather"}`),
		argsDelta(1, `{"city":`), argsDelta(1, `"Paris"}`),
		`{"type":"response.function_call_arguments.done","output_index":1,"item_id":"fc_1","arguments":"{\"city\":\"Paris\"}"}`,
		done(1, callItem(1, "call_w", "get_weather", `{"city":"Paris"}`)),
		added(2, `{"id":"fc_2","type":"function_call","status":"in_progress","arguments":"","call_id":"call_t","name":"get_time"}`),
		argsDelta(2, `{"tz":"Europe/Paris"}`),
		done(2, callItem(2, "call_t", "get_time", `{"tz":"Europe/Paris"}`)),
		completed("completed", ""),
	}
}

func userReq(text string) *provider.Request {
	return &provider.Request{Turns: []ledger.Turn{{Role: ledger.RoleUser, Artifacts: []artifact.Artifact{artifact.Text{Content: text}}}}}
}

// asJSON decodes s for comparison as a JSON value.
func asJSON(t *testing.T, s string) any {
	t.Helper()
	var v any
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		t.Fatalf("bad JSON %s: %v", s, err)
	}
	return v
}

func mustJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}
