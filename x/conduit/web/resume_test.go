package web_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"testing"

	"github.com/lodeworks/lode/artifact"
	"github.com/lodeworks/lode/ledger"
	"github.com/lodeworks/lode/x/conduit/web"
	"github.com/lodeworks/lode/x/provider/script"
)

func (f *fixture) get(t *testing.T, path string, hdr ...string) *http.Response {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, f.srv.URL+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := f.srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

// approvalBody is what the SDK's Chat sends after addToolApprovalResponse:
// the paused assistant message, its tool part approval-responded.
func approvalBody(id, call string, approval map[string]any) string {
	b, _ := json.Marshal(map[string]any{"id": id, "trigger": "submit-message", "messageId": "turn-1", "messages": []any{
		map[string]any{"id": "turn-0", "role": "user", "parts": []any{map[string]any{"type": "text", "text": "add 2 and 3"}}},
		map[string]any{"id": "turn-1", "role": "assistant", "parts": []any{
			map[string]any{"type": "step-start"},
			map[string]any{"type": "tool-add", "toolCallId": call, "state": "approval-responded", "input": map[string]any{"a": 2, "b": 3}, "approval": approval},
		}},
	}})
	return string(b)
}

func TestApprovalAnswerOverChat(t *testing.T) {
	prov := script.Play(script.Call("c1", "add", `{"a":2,"b":3}`), script.Text("It is 5."))
	f := serveTools(t, prov, askForAdd, quiet())
	id := paused(t, f)
	before := len(turns(t, f.store, id))
	bad := []struct {
		name, body string
		code       int
		msg        string
	}{
		{"no approved", approvalBody(id, "c1", map[string]any{"id": "c1"}), 400, `web: the approval-responded part of call "c1" has no approval.approved`},
		{"no approval", approvalBody(id, "c1", nil), 400, `web: the approval-responded part of call "c1" has no approval.approved`},
		{"no thread", approvalBody("", "c1", map[string]any{"id": "c1", "approved": true}), 400, "web: approvals sent with no thread id"},
		{"unknown thread", approvalBody("nosuch", "c1", map[string]any{"id": "c1", "approved": true}), 404, `web: thread "nosuch" not found`},
		{"a call the thread never had", approvalBody(id, "c9", map[string]any{"id": "c9", "approved": true}), 400,
			fmt.Sprintf("web: thread %q has no tool call \"c9\"", id)},
	}
	for _, c := range bad {
		t.Run(c.name, func(t *testing.T) {
			resp := f.post(t, "/api/chat", c.body)
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != c.code || string(b) != c.msg+"\n" {
				t.Errorf("got %d %q, want %d %q", resp.StatusCode, b, c.code, c.msg+"\n")
			}
			if n := len(turns(t, f.store, id)); n != before {
				t.Errorf("%d turns, %d before: the refused answer stored something", n, before)
			}
		})
	}
	ps := parts(t, f.post(t, "/api/chat", approvalBody(id, "c1", map[string]any{"id": "c1", "approved": true, "reason": "fine"})))
	want := []string{"start", "tool-output-available", "start-step", "text-start", "text-delta", "text-end", "finish-step", "finish"}
	if got := types(ps); !slices.Equal(got, want) || ps[0]["messageId"] != "turn-1" {
		t.Fatalf("parts %v (start %v), want %v continuing turn-1", got, ps[0], want)
	}
	var dec artifact.Decision
	for _, tn := range turns(t, f.store, id) {
		for _, a := range tn.Artifacts {
			if d, ok := a.(artifact.Decision); ok {
				dec = d
			}
		}
	}
	if !dec.Approved || dec.Reason != "fine" || dec.ToolCallID != "c1" {
		t.Errorf("stored decision %+v, want c1 approved with the reason", dec)
	}
	rp := replayParts(t, f, id)
	if p := rp[1]; p["state"] != "output-available" || p["output"] != "5" || p["approval"].(map[string]any)["approved"] != true {
		t.Errorf("replayed call %v, want output-available, approved", p)
	}
	// The same answer again: nothing waits now.
	resp := f.post(t, "/api/chat", approvalBody(id, "c1", map[string]any{"id": "c1", "approved": true}))
	resp.Body.Close()
	if resp.StatusCode != http.StatusConflict {
		t.Errorf("the answer sent twice: %d, want 409", resp.StatusCode)
	}
}

func regenerateBody(id, messageID string) string {
	m := map[string]any{"id": id, "trigger": "regenerate-message", "messages": []any{
		map[string]any{"id": "u", "role": "user", "parts": []any{map[string]any{"type": "text", "text": "hi"}}},
	}}
	if messageID != "" {
		m["messageId"] = messageID
	}
	b, _ := json.Marshal(m)
	return string(b)
}

func TestRegenerate(t *testing.T) {
	prov := script.Play(script.Text("first"), script.Text("second"), script.Text("third"), script.Text("again"))
	f := serve(t, prov, web.WithIdentify(owner), quiet())
	parts(t, f.post(t, "/api/chat", chatBody("r1", "one"), "X-User", "ann"))
	parts(t, f.post(t, "/api/chat", chatBody("r1", "two"), "X-User", "ann"))
	bad := []struct {
		name, body, user string
		code             int
		msg              string
	}{
		{"another caller's thread", regenerateBody("r1", ""), "bob", 404, `web: thread "r1" not found`},
		{"unknown message", regenerateBody("r1", "m-9"), "ann", 400, `web: regenerate: thread "r1" has no message "m-9" that follows a user message`},
		{"message out of range", regenerateBody("r1", "turn-9"), "ann", 400, `web: regenerate: thread "r1" has no message "turn-9" that follows a user message`},
	}
	for _, c := range bad {
		t.Run(c.name, func(t *testing.T) {
			resp := f.post(t, "/api/chat", c.body, "X-User", c.user)
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != c.code || string(b) != c.msg+"\n" {
				t.Errorf("got %d %q, want %d %q", resp.StatusCode, b, c.code, c.msg+"\n")
			}
			if n := len(turns(t, f.store, "r1")); n != 4 {
				t.Errorf("%d turns, want 4: the refused regenerate changed the thread", n)
			}
		})
	}
	texts := func() []string {
		var out []string
		for _, tn := range turns(t, f.store, "r1") {
			out = append(out, string(tn.Role)+":"+tn.Artifacts[0].(artifact.Text).Content)
		}
		return out
	}
	ps := parts(t, f.post(t, "/api/chat", regenerateBody("r1", ""), "X-User", "ann"))
	if ps[0]["messageId"] != "turn-3" {
		t.Errorf("start %v, want messageId turn-3, the replaced answer's", ps[0])
	}
	if got, want := texts(), []string{"user:one", "assistant:first", "user:two", "assistant:third"}; !slices.Equal(got, want) {
		t.Fatalf("after regenerate: %v, want %v", got, want)
	}
	// An earlier answer, by its ID: what follows its question goes.
	parts(t, f.post(t, "/api/chat", regenerateBody("r1", "turn-1"), "X-User", "ann"))
	if got, want := texts(), []string{"user:one", "assistant:again"}; !slices.Equal(got, want) {
		t.Fatalf("after regenerating turn-1: %v, want %v", got, want)
	}
	// The thread kept its owner, title and ID, and no copy is left.
	if l := f.list(t, "ann"); len(l.Threads) != 1 || l.Threads[0].ID != "r1" || l.Threads[0].Title != "one" {
		t.Errorf("ann lists %+v, want r1 alone, titled one", l)
	}
}

func TestRegenerateWithNoQuestion(t *testing.T) {
	f := serve(t, script.Play(), quiet())
	st, err := f.store.Create(t.Context(), ledger.WithID("empty"), ledger.WithMetadata(map[string]string{web.OwnerKey: ""}))
	if err != nil {
		t.Fatal(err)
	}
	st.Close()
	resp := f.post(t, "/api/chat", regenerateBody("empty", ""))
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if want := `web: regenerate: thread "empty" has no user message to answer` + "\n"; resp.StatusCode != 400 || string(b) != want {
		t.Errorf("got %d %q, want 400 %q", resp.StatusCode, b, want)
	}
}

func TestResume(t *testing.T) {
	g := newGate()
	f := serve(t, g, web.WithIdentify(owner), quiet())
	// Nothing to resume yet: no thread is 404, a thread with no answer 204.
	resp := f.get(t, "/api/chat/z1/stream", "X-User", "ann")
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound {
		t.Errorf("resume of no thread: %d, want 404", resp.StatusCode)
	}
	first := f.post(t, "/api/chat", chatBody("z1", "hi"), "X-User", "ann")
	<-g.started
	// Another caller's running turn is 404 too.
	resp = f.get(t, "/api/chat/z1/stream", "X-User", "bob")
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound {
		t.Errorf("bob resuming ann's turn: %d, want 404", resp.StatusCode)
	}
	resumed := f.get(t, "/api/chat/z1/stream", "X-User", "ann")
	if resumed.StatusCode != http.StatusOK || resumed.Header.Get("x-vercel-ai-ui-message-stream") != "v1" {
		t.Fatalf("resume: %d %v", resumed.StatusCode, resumed.Header)
	}
	close(g.release)
	want := []string{"start", "start-step", "text-start", "text-delta", "text-end", "finish-step", "finish"}
	live, again := parts(t, first), parts(t, resumed)
	if !slices.Equal(types(live), want) || !slices.Equal(types(again), want) {
		t.Fatalf("the stream %v and its resume %v, want %v", types(live), types(again), want)
	}
	if again[0]["messageId"] != "turn-1" || find(again, "text-delta")["delta"] != "working" {
		t.Errorf("resumed %v", again)
	}
	<-f.returned
	// Finished: the last answer is replayed as one stream.
	replayed := parts(t, f.get(t, "/api/chat/z1/stream", "X-User", "ann"))
	if got := types(replayed); !slices.Equal(got, want) || replayed[0]["messageId"] != "turn-1" || find(replayed, "text-delta")["delta"] != "working" {
		t.Errorf("replay of the finished turn: %v", replayed)
	}
}

func TestResumeWithNoAnswer(t *testing.T) {
	f := serve(t, script.Play(script.Fail(fmt.Errorf("down"))), quiet())
	resp := f.post(t, "/api/chat", chatBody("q1", "hi"))
	parts(t, resp)
	<-f.returned
	resp = f.get(t, "/api/chat/q1/stream")
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusNoContent || len(b) != 0 {
		t.Errorf("resume of a thread ending with the user's message: %d %q, want 204", resp.StatusCode, b)
	}
}

// TestResumeOfALongTurn: a turn that streamed more than it keeps for
// reattaching is 204 while it runs, and replayed from the store after.
func TestResumeOfALongTurn(t *testing.T) {
	g := newGate()
	f := serve(t, g, web.WithStreamBufferBytes(64), quiet())
	first := f.post(t, "/api/chat", chatBody("long", "hi"))
	<-g.started
	resp := f.get(t, "/api/chat/long/stream")
	resp.Body.Close()
	if resp.StatusCode != http.StatusNoContent {
		t.Errorf("resume of a turn past its bound: %d, want 204", resp.StatusCode)
	}
	close(g.release)
	parts(t, first)
	<-f.returned
	replayed := parts(t, f.get(t, "/api/chat/long/stream"))
	if d := find(replayed, "text-delta"); d["delta"] != "working" {
		t.Errorf("replay after the turn: %v", replayed)
	}
}

// TestResumeOfAContinuedMessage: a client that reattaches while a decided
// turn runs gets the whole paused message first, then the rest: the SDK's
// client rebuilds the message from the resumed stream alone.
func TestResumeOfAContinuedMessage(t *testing.T) {
	told := gated("It is 5.")
	prov := &replies{next: []*reply{answer(artifact.ToolCall{ID: "c1", Name: "add", Arguments: `{"a":2,"b":3}`}), told}}
	f := serveTools(t, prov, askForAdd, quiet())
	resp := f.post(t, "/api/chat", chatBody("k1", "add 2 and 3"))
	parts(t, resp)
	<-f.returned
	live := f.post(t, "/api/threads/k1/decide", decideBody(map[string]any{"id": "c1", "approve": true}))
	// The decided call has run once the model streams again; its text
	// waits for the gate, so the turn is running when the client comes back.
	resumed := f.get(t, "/api/chat/k1/stream")
	close(told.gate)
	want := []string{"start", "start-step", "tool-input-available", "tool-approval-request", "finish-step",
		"tool-output-available", "start-step", "text-start", "text-delta", "text-delta", "text-end", "finish-step", "finish"}
	ps := parts(t, resumed)
	if got := types(ps); !slices.Equal(got, want) || ps[0]["messageId"] != "turn-1" {
		t.Fatalf("resumed parts %v (start %v)\nwant %v continuing turn-1", got, ps[0], want)
	}
	if got := types(parts(t, live)); !slices.Equal(got, append([]string{"start"}, want[5:]...)) {
		t.Errorf("the decide stream %v, want %v", got, append([]string{"start"}, want[5:]...))
	}
}

func TestEditBadInput(t *testing.T) {
	f := serve(t, script.Play(script.Text("first")), quiet())
	parts(t, f.post(t, "/api/chat", chatBody("e1", "one")))
	body := func(messageID string, ids ...string) string {
		var ms []any
		for i, id := range ids {
			role := "user"
			if i%2 == 1 {
				role = "assistant"
			}
			ms = append(ms, map[string]any{"id": id, "role": role, "parts": []any{map[string]any{"type": "text", "text": "x"}}})
		}
		b, _ := json.Marshal(map[string]any{"id": "e1", "trigger": "submit-message", "messageId": messageID, "messages": ms})
		return string(b)
	}
	for _, c := range []struct{ name, body, msg string }{
		{"not the last message", body("u0", "u0", "turn-1", "u2"), `web: edit: the last message is "u2", not the edited message "u0"`},
		{"past the thread", body("u2", "u0", "turn-1", "u2"), `web: edit: thread "e1" has no user message at 2, where message "u2" is`},
	} {
		t.Run(c.name, func(t *testing.T) {
			resp := f.post(t, "/api/chat", c.body)
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusBadRequest || string(b) != c.msg+"\n" {
				t.Errorf("got %d %q, want 400 %q", resp.StatusCode, b, c.msg+"\n")
			}
			if n := len(turns(t, f.store, "e1")); n != 2 {
				t.Errorf("%d turns, want 2: the refused edit changed the thread", n)
			}
		})
	}
}
