package web_test

import (
	"encoding/json"
	"io"
	"net/http"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/lodeworks/lode/artifact"
	"github.com/lodeworks/lode/x/provider/script"
	xtool "github.com/lodeworks/lode/x/tool"
)

// askForAdd makes every call to "add" wait for a person.
var askForAdd = []xtool.HandlerOption{xtool.WithApprover(xtool.PauseForDecision), xtool.WithApprovalFor("add")}

// paused posts a message whose answer calls add, which waits for approval,
// checks the stream's tool-approval-request and data-approval parts, and
// returns the thread.
func paused(t *testing.T, f *fixture) string {
	t.Helper()
	resp := f.post(t, "/api/chat", chatBody("", "add 2 and 3"))
	id := resp.Header.Get("X-Lode-Thread")
	ps := parts(t, resp)
	want := []string{"start", "start-step", "tool-input-start", "tool-input-delta", "tool-input-available", "tool-approval-request", "finish-step", "data-approval", "finish"}
	if got := types(ps); !slices.Equal(got, want) {
		t.Fatalf("parts:\n got %v\nwant %v", got, want)
	}
	if p := find(ps, "tool-approval-request"); p["approvalId"] != "c1" || p["toolCallId"] != "c1" || !strings.Contains(stringOr(p["reason"]), "requires approval for add") {
		t.Errorf("tool-approval-request = %v", p)
	}
	if ps[0]["messageId"] != "turn-1" {
		t.Errorf("start = %v, want messageId turn-1, the replay's", ps[0])
	}
	ap := find(ps, "data-approval")
	if ap["transient"] != true {
		t.Errorf("data-approval is not transient: %v", ap)
	}
	checkApproval(t, ap["data"], id)
	return id
}

// checkApproval checks a data-approval part's data: add's one call c1.
func checkApproval(t *testing.T, data any, thread string) {
	t.Helper()
	d, _ := data.(map[string]any)
	calls, _ := d["calls"].([]any)
	if d["threadId"] != thread || len(calls) != 1 {
		t.Fatalf("data-approval data = %v, want thread %s and one call", data, thread)
	}
	c := calls[0].(map[string]any)
	in, _ := c["input"].(map[string]any)
	if c["toolCallId"] != "c1" || c["toolName"] != "add" || in["a"] != 2.0 || !strings.Contains(stringOr(c["reason"]), "requires approval for add") {
		t.Errorf("pending call = %v", c)
	}
}

func decideBody(decisions ...map[string]any) string {
	b, _ := json.Marshal(map[string]any{"decisions": decisions})
	return string(b)
}

// replayParts returns the parts of the thread's last message, as replayed.
func replayParts(t *testing.T, f *fixture, id string) []map[string]any {
	t.Helper()
	resp, err := f.srv.Client().Get(f.srv.URL + "/api/threads/" + id)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var v struct {
		Messages []struct {
			Parts []map[string]any `json:"parts"`
		} `json:"messages"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&v); err != nil || len(v.Messages) == 0 {
		t.Fatalf("replay: %v, %d messages", err, len(v.Messages))
	}
	return v.Messages[len(v.Messages)-1].Parts
}

// results counts the stored results of call id.
func results(t *testing.T, f *fixture, thread, id string) int {
	t.Helper()
	n := 0
	for _, tn := range turns(t, f.store, thread) {
		for _, a := range tn.Artifacts {
			if r, ok := a.(artifact.ToolResult); ok && r.ToolCallID == id {
				n++
			}
		}
	}
	return n
}

func TestPauseThenApprove(t *testing.T) {
	prov := script.Play(script.Call("c1", "add", `{"a":2,"b":3}`), script.Text("It is 5."))
	f := serveTools(t, prov, askForAdd)
	id := paused(t, f)
	if results(t, f, id, "c1") != 0 {
		t.Fatal("the paused call ran")
	}
	rp := replayParts(t, f, id)
	if last := rp[len(rp)-1]; last["type"] != "data-approval" {
		t.Fatalf("replay ends with %v, want the data-approval part", last)
	} else {
		checkApproval(t, last["data"], id)
	}

	resp := f.post(t, "/api/threads/"+id+"/decide", decideBody(map[string]any{"id": "c1", "approve": true}))
	ps := parts(t, resp)
	// The paused message goes on: same messageId, no step reopened.
	want := []string{"start", "tool-output-available",
		"start-step", "text-start", "text-delta", "text-end", "finish-step", "finish"}
	if got := types(ps); !slices.Equal(got, want) {
		t.Fatalf("parts:\n got %v\nwant %v", got, want)
	}
	if ps[0]["messageId"] != "turn-1" {
		t.Errorf("start = %v, want the paused message's ID turn-1", ps[0])
	}
	if p := find(ps, "tool-output-available"); p["toolCallId"] != "c1" || p["output"] != "5" {
		t.Errorf("tool-output-available = %v", p)
	}
	if p := find(ps, "text-delta"); p["delta"] != "It is 5." {
		t.Errorf("text-delta = %v", p)
	}
	if n := results(t, f, id, "c1"); n != 1 {
		t.Errorf("c1 has %d results, want 1 (ran once)", n)
	}
	for _, p := range replayParts(t, f, id) {
		if p["type"] == "data-approval" {
			t.Errorf("replay still shows a pending call after the decision: %v", p)
		}
	}
}

// TestDecidedCallConflicts: a decision on a call someone already decided,
// while another call of the same answer still waits, is 409.
func TestDecidedCallConflicts(t *testing.T) {
	prov := script.Play(script.Reply(
		artifact.ToolCall{ID: "c1", Name: "add", Arguments: `{"a":2,"b":3}`},
		artifact.ToolCall{ID: "c2", Name: "add", Arguments: `{"a":1,"b":1}`}))
	f := serveTools(t, prov, askForAdd, quiet())
	resp := f.post(t, "/api/chat", chatBody("", "add"))
	id := resp.Header.Get("X-Lode-Thread")
	parts(t, resp)
	ps := parts(t, f.post(t, "/api/threads/"+id+"/decide", decideBody(map[string]any{"id": "c1", "approve": false})))
	if got := types(ps); got[len(got)-2] != "data-approval" || got[len(got)-1] != "finish" {
		t.Fatalf("deciding one of two calls streamed %v, want data-approval and finish last (c2 still waits)", got)
	}
	before := turns(t, f.store, id)
	resp = f.post(t, "/api/threads/"+id+"/decide", decideBody(map[string]any{"id": "c1", "approve": true}))
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if want := `web: tool call "c1" of thread "` + id + `" waits for no decision: it was decided already, or ran without one` + "\n"; resp.StatusCode != http.StatusConflict || string(b) != want {
		t.Errorf("second decision on c1: %d %q, want 409 %q", resp.StatusCode, b, want)
	}
	if len(turns(t, f.store, id)) != len(before) || results(t, f, id, "c1") != 1 || len(prov.Requests()) != 1 {
		t.Errorf("the refused decision changed the thread or invoked the model")
	}
}

func TestDenyReachesTheModel(t *testing.T) {
	prov := script.Play(script.Call("c1", "add", `{"a":2,"b":3}`), script.Text("Understood."))
	f := serveTools(t, prov, askForAdd)
	id := paused(t, f)
	ps := parts(t, f.post(t, "/api/threads/"+id+"/decide", decideBody(map[string]any{"id": "c1", "approve": false, "reason": "not on a Monday"})))
	want := []string{"start", "tool-output-denied",
		"start-step", "text-start", "text-delta", "text-end", "finish-step", "finish"}
	if got := types(ps); !slices.Equal(got, want) {
		t.Fatalf("parts:\n got %v\nwant %v", got, want)
	}
	if p := find(ps, "tool-output-denied"); p["toolCallId"] != "c1" {
		t.Errorf("tool-output-denied = %v", p)
	}
	rp := replayParts(t, f, id)
	if p := rp[1]; p["type"] != "tool-add" || p["state"] != "output-denied" ||
		!reflect.DeepEqual(p["approval"], map[string]any{"id": "c1", "approved": false, "reason": "not on a Monday"}) {
		t.Errorf("replayed call = %v, want output-denied with the reason", p)
	}
	reqs := prov.Requests()
	if len(reqs) != 2 {
		t.Fatalf("%d model invocations, want 2", len(reqs))
	}
	var read string
	for _, tn := range reqs[1].Turns {
		for _, a := range tn.Artifacts {
			if r, ok := a.(artifact.ToolResult); ok && r.ToolCallID == "c1" {
				read = r.Content
			}
		}
	}
	if !strings.Contains(read, "denied") || !strings.Contains(read, "not on a Monday") {
		t.Errorf("the model read %q for c1, want the denial and its reason", read)
	}
}

func TestBadDecisions(t *testing.T) {
	tests := []struct {
		name string
		body string
		code int
		msg  string
	}{
		{"unknown call", decideBody(map[string]any{"id": "c9", "approve": true}), http.StatusBadRequest, `" has no tool call "c9"`},
		{"edited arguments break the schema", decideBody(map[string]any{"id": "c1", "approve": true, "arguments": map[string]any{"a": "two"}}), http.StatusBadRequest, `decision on call "c1"`},
		{"edited arguments are not JSON", decideBody(map[string]any{"id": "c1", "approve": true, "arguments": `{"a":`}), http.StatusBadRequest, `decision on call "c1"`},
		{"arguments on a denial", decideBody(map[string]any{"id": "c1", "approve": false, "arguments": map[string]any{"a": 1}}), http.StatusBadRequest, `web: decision on call "c1": arguments are only taken with an approval`},
		{"no decisions", `{"decisions":[]}`, http.StatusBadRequest, `web: no decisions: send {"decisions": [{"id": CALL, "approve": true}]}`},
		{"no call id", decideBody(map[string]any{"approve": true}), http.StatusBadRequest, "web: a decision has no call id"},
		{"decided twice", decideBody(map[string]any{"id": "c1", "approve": true}, map[string]any{"id": "c1", "approve": false}), http.StatusBadRequest, `decided twice in one Resume`},
		{"not JSON", `{"decisions":`, http.StatusBadRequest, "web: the body is not valid JSON"},
	}
	prov := script.Play(script.Call("c1", "add", `{"a":2,"b":3}`))
	f := serveTools(t, prov, askForAdd, quiet())
	id := paused(t, f)
	before := turns(t, f.store, id)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp := f.post(t, "/api/threads/"+id+"/decide", tt.body)
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			body := string(b)
			if resp.StatusCode != tt.code || !strings.Contains(body, tt.msg) || strings.Count(body, "\n") != 1 {
				t.Errorf("got %d %q, want %d with %q on one line", resp.StatusCode, body, tt.code, tt.msg)
			}
			if after := turns(t, f.store, id); len(after) != len(before) {
				t.Errorf("%d turns after, %d before: the refused decision stored something", len(after), len(before))
			}
		})
	}
	if len(prov.Requests()) != 1 {
		t.Errorf("%d model invocations, want 1", len(prov.Requests()))
	}
}

// TestMessageWhileCallsWaitConflicts: a message posted to a thread whose
// calls wait is refused with 409, naming them, and stores nothing: it
// would stand between the calls and their results.
func TestMessageWhileCallsWaitConflicts(t *testing.T) {
	prov := script.Play(script.Call("c1", "add", `{"a":2,"b":3}`), script.Text("never"))
	f := serveTools(t, prov, askForAdd, quiet())
	id := paused(t, f)
	before := turns(t, f.store, id)
	resp := f.post(t, "/api/chat", chatBody(id, "and also"))
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	want := `web: thread "` + id + `" has 1 tool call(s) waiting for approval (add (c1)): decide them before sending a message`
	if resp.StatusCode != http.StatusConflict || strings.TrimSpace(string(b)) != want {
		t.Fatalf("message while c1 waits: %d %q\nwant 409 %q", resp.StatusCode, b, want)
	}
	if len(turns(t, f.store, id)) != len(before) || len(prov.Requests()) != 1 {
		t.Errorf("the refused message changed the thread or invoked the model")
	}
}

// TestDecisionStatusesAgree: once a turn has ended, the same decision
// answers the same status and body by either route: 409 for a call that
// was decided already, 400 for a call the thread never had or a body
// that does not parse, and nothing is stored or asked of the model.
func TestDecisionStatusesAgree(t *testing.T) {
	prov := script.Play(script.Call("c1", "add", `{"a":2,"b":3}`), script.Text("It is 5."))
	f := serveTools(t, prov, askForAdd, quiet())
	id := paused(t, f)
	parts(t, f.post(t, "/api/threads/"+id+"/decide", decideBody(map[string]any{"id": "c1", "approve": true})))
	before := turns(t, f.store, id)
	decided := `web: tool call "c1" of thread "` + id + `" waits for no decision: it was decided already, or ran without one` + "\n"
	unknown := `web: thread "` + id + `" has no tool call "c9"` + "\n"
	const notJSON = "web: the body is not valid JSON: "
	decide, chat := "/api/threads/"+id+"/decide", "/api/chat"
	tests := []struct {
		name, path, body string
		code             int
		want             string // the whole body, or its start when prefix
		prefix           bool
	}{
		{"decide: decided already", decide, decideBody(map[string]any{"id": "c1", "approve": false}), http.StatusConflict, decided, false},
		{"chat: decided already", chat, approvalBody(id, "c1", map[string]any{"id": "c1", "approved": false}), http.StatusConflict, decided, false},
		{"decide: a call the thread never had", decide, decideBody(map[string]any{"id": "c9", "approve": true}), http.StatusBadRequest, unknown, false},
		{"chat: a call the thread never had", chat, approvalBody(id, "c9", map[string]any{"id": "c9", "approved": true}), http.StatusBadRequest, unknown, false},
		{"decide: a call never had beside one decided", decide, decideBody(map[string]any{"id": "c1", "approve": true}, map[string]any{"id": "c9", "approve": true}), http.StatusBadRequest, unknown, false},
		{"chat: not JSON", chat, `{"id":`, http.StatusBadRequest, notJSON, true},
		{"decide: not JSON", decide, `{"decisions":`, http.StatusBadRequest, notJSON, true},
		{"decide: no decision word", decide, `{"decisions":[{"id":"c1","approve":"maybe"}]}`, http.StatusBadRequest, notJSON, true},
		{"chat: no decision word", chat, approvalBody(id, "c1", map[string]any{"id": "c1", "approved": "maybe"}), http.StatusBadRequest, notJSON, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp := f.post(t, tt.path, tt.body)
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			body := string(b)
			ok := body == tt.want
			if tt.prefix {
				ok = strings.HasPrefix(body, tt.want) && strings.Count(body, "\n") == 1
			}
			if resp.StatusCode != tt.code || !ok {
				t.Errorf("got %d %q, want %d %q", resp.StatusCode, body, tt.code, tt.want)
			}
			if n := len(turns(t, f.store, id)); n != len(before) {
				t.Errorf("%d turns, %d before: the refused decision stored something", n, len(before))
			}
		})
	}
	if n := len(prov.Requests()); n != 2 {
		t.Errorf("%d model invocations, want 2", n)
	}
}
