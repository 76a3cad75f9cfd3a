package a2a_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/lodeworks/lode/artifact"
	"github.com/lodeworks/lode/provider"
	lodea2a "github.com/lodeworks/lode/x/a2a"
	"github.com/lodeworks/lode/x/auth"
	"github.com/lodeworks/lode/x/provider/script"
)

func TestSendRunsATurnAndAnswers(t *testing.T) {
	prov := script.Play(script.Call("c1", "lookup", `{"id":7}`), script.Text("Ticket 7: the printer is on fire."))
	ag := startAgent(t, prov, agentOpts{})
	c := connect(t, ag.url, "")
	task := send(t, c, userText("what is ticket 7?"))
	if task.Status.State != a2a.TaskStateCompleted {
		t.Fatalf("state %s (%s), want completed", task.Status.State, statusText(task))
	}
	if got := artifactText(task); got != "Ticket 7: the printer is on fire." {
		t.Errorf("answer %q", got)
	}
	if n := len(task.Artifacts[0].Parts); n != 1 {
		t.Errorf("the answer of a SendMessage is in %d parts, want 1", n)
	}
	if n := ag.lookups.Load(); n != 1 {
		t.Errorf("lookup ran %d times, want 1", n)
	}
	got, err := c.GetTask(t.Context(), &a2a.GetTaskRequest{ID: task.ID})
	if err != nil {
		t.Fatal(err)
	}
	if got.Status.State != a2a.TaskStateCompleted || artifactText(got) != artifactText(task) {
		t.Errorf("GetTask: %s %q", got.Status.State, artifactText(got))
	}
	// The context is a lode thread holding the conversation.
	st, err := ag.store.Load(t.Context(), "a2a-ctx-"+task.ContextID)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if n := len(st.Turns()); n != 4 {
		t.Errorf("the context's thread has %d turns, want 4 (user, call, result, answer)", n)
	}
}

func TestNextMessageOnAContextContinuesItsThread(t *testing.T) {
	prov := script.Play(script.Text("Hello."), script.Text("Still here."))
	ag := startAgent(t, prov, agentOpts{})
	c := connect(t, ag.url, "")
	first := send(t, c, userText("hi"))
	req := userText("again")
	req.Message.ContextID = first.ContextID
	second := send(t, c, req)
	if second.ContextID != first.ContextID || second.ID == first.ID {
		t.Fatalf("second task %s on %s", second.ID, second.ContextID)
	}
	reqs := prov.Requests()
	if n := len(reqs[1].Turns); n != 3 {
		t.Errorf("the second turn sent %d turns to the model, want 3", n)
	}
}

func TestStreamSendsArtifactChunksAndStatus(t *testing.T) {
	prov := script.New([]script.Step{script.Text("one two three four")}, script.WithChunkSize(4))
	ag := startAgent(t, prov, agentOpts{})
	c := connect(t, ag.url, "")
	var states []a2a.TaskState
	var text strings.Builder
	chunks := 0
	for ev, err := range c.SendStreamingMessage(t.Context(), userText("count")) {
		if err != nil {
			t.Fatal(err)
		}
		switch ev := ev.(type) {
		case *a2a.Task:
			states = append(states, ev.Status.State)
		case *a2a.TaskStatusUpdateEvent:
			states = append(states, ev.Status.State)
		case *a2a.TaskArtifactUpdateEvent:
			chunks++
			for _, p := range ev.Artifact.Parts {
				text.WriteString(p.Text())
			}
		}
	}
	if text.String() != "one two three four" {
		t.Errorf("streamed %q", text.String())
	}
	if chunks < 2 {
		t.Errorf("%d artifact chunks, want the answer streamed in several", chunks)
	}
	want := []a2a.TaskState{a2a.TaskStateSubmitted, a2a.TaskStateWorking, a2a.TaskStateCompleted}
	if len(states) != 3 || states[0] != want[0] || states[1] != want[1] || states[2] != want[2] {
		t.Errorf("states %v, want %v", states, want)
	}
}

func TestInputRequiredApproveRunsTheCallOnce(t *testing.T) {
	prov := script.Play(script.Call("c1", "delete_ticket", `{"id":7}`), script.Text("Deleted."))
	ag := startAgent(t, prov, agentOpts{})
	c := connect(t, ag.url, "")
	task := send(t, c, userText("delete ticket 7"))
	ids := pendingIDs(t, task)
	if len(ids) != 1 || ids[0] != "c1" {
		t.Fatalf("pending %v", ids)
	}
	if n := ag.deletes.Load(); n != 0 {
		t.Fatalf("delete ran %d times before approval", n)
	}
	yes := true
	decide := a2a.NewDataPart(map[string]any{"decisions": []any{map[string]any{"id": "c1", "approve": yes}}})
	done := send(t, c, answerTo(task, decide))
	if done.Status.State != a2a.TaskStateCompleted || done.ID != task.ID {
		t.Fatalf("after approval: %s %s (%s)", done.ID, done.Status.State, statusText(done))
	}
	if n := ag.deletes.Load(); n != 1 {
		t.Fatalf("delete ran %d times, want 1", n)
	}
	// A second answer is refused: the decision was applied.
	_, err := c.SendMessage(t.Context(), answerTo(task, decide))
	if err == nil || !strings.Contains(err.Error(), "has ended") {
		t.Fatalf("second answer: %v, want a refusal saying the task has ended", err)
	}
	if n := ag.deletes.Load(); n != 1 {
		t.Fatalf("delete ran %d times after a second answer, want 1", n)
	}
}

func TestInputRequiredDenyByText(t *testing.T) {
	prov := script.Play(script.Call("c1", "delete_ticket", `{"id":7}`), script.Text("I did not delete it."))
	ag := startAgent(t, prov, agentOpts{})
	c := connect(t, ag.url, "")
	task := send(t, c, userText("delete ticket 7"))
	pendingIDs(t, task)
	done := send(t, c, answerTo(task, a2a.NewTextPart("deny: keep it")))
	if done.Status.State != a2a.TaskStateCompleted {
		t.Fatalf("state %s", done.Status.State)
	}
	if n := ag.deletes.Load(); n != 0 {
		t.Fatalf("a denied call ran %d times", n)
	}
	reqs := prov.Requests()
	last := reqs[len(reqs)-1].Turns
	res := last[len(last)-1].Artifacts
	var saw bool
	for _, a := range res {
		if r, ok := a.(artifact.ToolResult); ok && r.IsError && strings.Contains(r.Content, "keep it") {
			saw = true
		}
	}
	if !saw {
		t.Errorf("the model did not read the denial's reason: %+v", res)
	}
}

func TestApprovalCannotBeSkipped(t *testing.T) {
	prov := script.Play(script.Call("c1", "delete_ticket", `{"id":7}`), script.Text("Deleted."))
	ag := startAgent(t, prov, agentOpts{})
	c := connect(t, ag.url, "")
	task := send(t, c, userText("delete ticket 7"))
	pendingIDs(t, task)
	other := userText("never mind, just do it")
	other.Message.ContextID = task.ContextID
	tru := true
	cases := []struct {
		name string
		req  *a2a.SendMessageRequest
		want string
	}{
		{"a new message on the context", other, "waits for decisions"},
		{"a text that decides nothing", answerTo(task, a2a.NewTextPart("please go ahead")), "wait for a decision"},
		{"an unknown call", answerTo(task, a2a.NewDataPart(map[string]any{"decisions": []any{map[string]any{"id": "c9", "approve": tru}}})), `call "c9" does not wait`},
		{"no approve field", answerTo(task, a2a.NewDataPart(map[string]any{"decisions": []any{map[string]any{"id": "c1"}}})), `no "approve"`},
		{"a call decided twice", answerTo(task, a2a.NewDataPart(map[string]any{"decisions": []any{map[string]any{"id": "c1", "approve": tru}, map[string]any{"id": "c1", "approve": false}}})), "decided twice"},
		{"an unknown field", answerTo(task, a2a.NewDataPart(map[string]any{"decisions": []any{map[string]any{"id": "c1", "approve": tru}}, "skip": true})), "holds no decisions"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := c.SendMessage(t.Context(), tc.req)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want an error containing %q", err, tc.want)
			}
		})
	}
	if n := ag.deletes.Load(); n != 0 {
		t.Fatalf("delete ran %d times without approval", n)
	}
	got, err := c.GetTask(t.Context(), &a2a.GetTaskRequest{ID: task.ID})
	if err != nil {
		t.Fatal(err)
	}
	if got.Status.State != a2a.TaskStateInputRequired {
		t.Fatalf("the task is %s after refused answers, want still input-required", got.Status.State)
	}
}

// gate is a model that answers once released, so a test can act while a
// turn runs.
func gate(release <-chan struct{}, text string) script.Step {
	return script.Func(func(req *provider.Request) ([]artifact.Artifact, error) {
		<-release
		return []artifact.Artifact{artifact.Text{Content: text}}, nil
	})
}

func TestCancelStopsTheRunningTurn(t *testing.T) {
	prov := script.Play(script.Hang(artifact.Text{Content: "thinking"}))
	ag := startAgent(t, prov, agentOpts{})
	c := connect(t, ag.url, "")
	ctx, stop := context.WithCancel(t.Context())
	defer stop()
	var id a2a.TaskID
	for ev, err := range c.SendStreamingMessage(ctx, userText("think forever")) {
		if err != nil {
			t.Fatal(err)
		}
		if a, ok := ev.(*a2a.TaskArtifactUpdateEvent); ok {
			id = a.TaskID
			break
		}
	}
	if id == "" {
		t.Fatal("no artifact chunk before the stream ended")
	}
	task, err := c.CancelTask(t.Context(), &a2a.CancelTaskRequest{ID: id})
	if err != nil {
		t.Fatal(err)
	}
	if task.Status.State != a2a.TaskStateCanceled {
		t.Fatalf("state %s after cancel", task.Status.State)
	}
	got, err := c.GetTask(t.Context(), &a2a.GetTaskRequest{ID: id})
	if err != nil || got.Status.State != a2a.TaskStateCanceled {
		t.Fatalf("GetTask after cancel: %v %v", got, err)
	}
}

func TestCancelWhileWaitingThenTheContextGoesOn(t *testing.T) {
	prov := script.Play(script.Call("c1", "delete_ticket", `{"id":7}`), script.Text("OK, something else."))
	ag := startAgent(t, prov, agentOpts{})
	c := connect(t, ag.url, "")
	task := send(t, c, userText("delete ticket 7"))
	pendingIDs(t, task)
	got, err := c.CancelTask(t.Context(), &a2a.CancelTaskRequest{ID: task.ID})
	if err != nil || got.Status.State != a2a.TaskStateCanceled {
		t.Fatalf("cancel: %v %v", got, err)
	}
	next := userText("something else")
	next.Message.ContextID = task.ContextID
	done := send(t, c, next)
	if done.Status.State != a2a.TaskStateCompleted {
		t.Fatalf("next task: %s (%s)", done.Status.State, statusText(done))
	}
	if n := ag.deletes.Load(); n != 0 {
		t.Fatalf("the cancelled task's call ran %d times", n)
	}
}

func TestResubscribeAfterADroppedStream(t *testing.T) {
	release := make(chan struct{})
	prov := script.Play(gate(release, "done at last"))
	ag := startAgent(t, prov, agentOpts{})
	c := connect(t, ag.url, "")
	ctx, drop := context.WithCancel(t.Context())
	var id a2a.TaskID
	for ev, err := range c.SendStreamingMessage(ctx, userText("wait")) {
		if err != nil {
			t.Fatal(err)
		}
		if s, ok := ev.(*a2a.TaskStatusUpdateEvent); ok && s.Status.State == a2a.TaskStateWorking {
			id = s.TaskID
			break
		}
	}
	drop()
	if id == "" {
		t.Fatal("no working status")
	}
	var final a2a.TaskState
	var text strings.Builder
	first := true
	for ev, err := range c.SubscribeToTask(t.Context(), &a2a.SubscribeToTaskRequest{ID: id}) {
		if err != nil {
			t.Fatal(err)
		}
		if first {
			close(release)
			first = false
		}
		switch ev := ev.(type) {
		case *a2a.TaskStatusUpdateEvent:
			final = ev.Status.State
		case *a2a.TaskArtifactUpdateEvent:
			for _, p := range ev.Artifact.Parts {
				text.WriteString(p.Text())
			}
		}
	}
	if final != a2a.TaskStateCompleted || text.String() != "done at last" {
		t.Fatalf("resubscribed: final %s, text %q", final, text.String())
	}
}

func tokens(t *testing.T) auth.Authenticator {
	t.Helper()
	tk, err := auth.NewTokens(
		auth.Token{Secret: "admin-secret", Identity: auth.Identity{User: "ada", Tenant: "acme", Roles: []string{"admin"}}},
		auth.Token{Secret: "viewer-secret", Identity: auth.Identity{User: "vic", Tenant: "acme", Roles: []string{"viewer"}}},
	)
	if err != nil {
		t.Fatal(err)
	}
	return tk
}

func TestCallerWithoutCredentialsIsRefused(t *testing.T) {
	prov := script.Play(script.Text("never"))
	ag := startAgent(t, prov, agentOpts{authn: tokens(t)})
	// The card is public, and says how to authenticate.
	resp, err := http.Get(ag.url + "/.well-known/agent-card.json")
	if err != nil {
		t.Fatal(err)
	}
	var card map[string]any
	_ = json.NewDecoder(resp.Body).Decode(&card)
	resp.Body.Close()
	if resp.StatusCode != 200 || card["securitySchemes"] == nil {
		t.Fatalf("card: %d %v", resp.StatusCode, card["securitySchemes"])
	}
	for _, token := range []string{"", "wrong"} {
		c := connect(t, ag.url, token)
		_, err := c.SendMessage(t.Context(), userText("hi"))
		if err == nil {
			t.Fatalf("token %q: the message was taken", token)
		}
	}
	r, err := http.Post(ag.url+"/", "application/json", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{}}`))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(r.Body)
	r.Body.Close()
	if r.StatusCode != http.StatusUnauthorized || r.Header.Get("WWW-Authenticate") == "" {
		t.Fatalf("no credentials: %d %s", r.StatusCode, body)
	}
	if prov.Remaining() != 1 {
		t.Fatal("the model was asked")
	}
	// Another caller's task is not found.
	c := connect(t, ag.url, "admin-secret")
	task := send(t, c, userText("hi"))
	v := connect(t, ag.url, "viewer-secret")
	if _, err := v.GetTask(t.Context(), &a2a.GetTaskRequest{ID: task.ID}); err == nil {
		t.Fatal("another caller read the task")
	}
	next := userText("hijack")
	next.Message.ContextID = task.ContextID
	if _, err := v.SendMessage(t.Context(), next); err == nil {
		t.Fatal("another caller wrote on the context")
	}
}

const viewerPolicy = `
roles:
  viewer:
    allow:
      tools: ["lookup"]
  admin:
    allow:
      tools: ["*"]
`

func TestRoleForbidsToolItNeverRuns(t *testing.T) {
	prov := script.Play(script.Call("c1", "delete_ticket", `{"id":7}`), script.Text("I may not."))
	ag := startAgent(t, prov, agentOpts{authn: tokens(t), policy: viewerPolicy})
	c := connect(t, ag.url, "viewer-secret")
	viewerOnly(t, ag, prov, send(t, c, userText("delete ticket 7")))
}

// viewerOnly checks a task the viewer's token sent, whose model asked for
// delete_ticket: the task completed, the tool was neither offered nor run,
// and the identity on the context's thread, where the policy reads it, is
// the token's.
func viewerOnly(t *testing.T, ag *agent, prov *script.Provider, task *a2a.Task) {
	t.Helper()
	if task.Status.State != a2a.TaskStateCompleted {
		t.Fatalf("state %s (%s)", task.Status.State, statusText(task))
	}
	if n := ag.deletes.Load(); n != 0 {
		t.Fatalf("a tool the role forbids ran %d times", n)
	}
	for _, tl := range prov.Requests()[0].Tools {
		if tl.Name == "delete_ticket" {
			t.Fatal("the viewer's turn was offered delete_ticket")
		}
	}
	st, err := ag.store.Load(t.Context(), "a2a-ctx-"+task.ContextID)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if id := auth.Of(st); id.User != "vic" || id.Tenant != "acme" || len(id.Roles) != 1 || id.Roles[0] != "viewer" {
		t.Fatalf("identity on the thread: %+v, want vic's from the token", id)
	}
}

func TestHostileRequests(t *testing.T) {
	prov := script.Play(script.Text("fine"))
	ag := startAgent(t, prov, agentOpts{})
	c := connect(t, ag.url, "")
	for _, ctxID := range []string{"../../etc/passwd", strings.Repeat("a", 200), "ctx with spaces", "ü"} {
		req := userText("hi")
		req.Message.ContextID = ctxID
		if _, err := c.SendMessage(t.Context(), req); err == nil || !strings.Contains(err.Error(), "cannot name a thread") {
			t.Errorf("contextId %q: %v", ctxID, err)
		}
	}
	for _, id := range []a2a.TaskID{"../x", "nope", a2a.TaskID(strings.Repeat("z", 300))} {
		if _, err := c.GetTask(t.Context(), &a2a.GetTaskRequest{ID: id}); err == nil {
			t.Errorf("task %q found", id)
		}
	}
	empty := &a2a.SendMessageRequest{Message: a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart("  "))}
	if _, err := c.SendMessage(t.Context(), empty); err == nil || !strings.Contains(err.Error(), "no text part") {
		t.Errorf("empty message: %v", err)
	}
	post := func(body string) (int, string) {
		r, err := http.Post(ag.url+"/", "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		defer r.Body.Close()
		b, _ := io.ReadAll(r.Body)
		return r.StatusCode, string(b)
	}
	if code, body := post(`{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":{"messageId":"m","role":"ROLE_USER","parts":[{"text":"` + strings.Repeat("x", 2<<20) + `"}]}}}`); code != http.StatusRequestEntityTooLarge {
		t.Errorf("a huge body: %d %.200s", code, body)
	}
	if _, body := post(`{not json`); !strings.Contains(body, `"error"`) {
		t.Errorf("a body that is not JSON: %.200s", body)
	}
	if _, body := post(`{"jsonrpc":"2.0","id":1,"method":"NoSuchMethod","params":{}}`); !strings.Contains(body, `"error"`) {
		t.Errorf("an unknown method: %.200s", body)
	}
	if prov.Remaining() != 1 {
		t.Fatal("a hostile request reached the model")
	}
}

func TestCardTellsTheTruth(t *testing.T) {
	ag := startAgent(t, script.Play(), agentOpts{})
	card := ag.srv.Card()
	if !card.Capabilities.Streaming || card.Capabilities.PushNotifications {
		t.Errorf("capabilities %+v: want streaming, no push (none configured)", card.Capabilities)
	}
	if len(card.SecuritySchemes) != 0 {
		t.Errorf("security schemes %v with no authenticator", card.SecuritySchemes)
	}
	if len(card.Skills) != 2 || card.Skills[0].ID != "delete_ticket" || card.Skills[1].ID != "lookup" {
		t.Errorf("skills %+v, want the two tools", card.Skills)
	}
	c := connect(t, ag.url, "")
	// Push configs are refused when none is configured.
	_, err := c.CreateTaskPushConfig(t.Context(), &a2a.PushConfig{TaskID: "x", URL: "http://127.0.0.1:1/hook"})
	if err == nil {
		t.Error("a push config was taken")
	}
}

// A caller that answers on the context, not the task (as ADK's remote
// agents do), answers the task that waits.
func TestAnswerOnTheContextDecidesTheWaitingTask(t *testing.T) {
	prov := script.Play(script.Call("c1", "delete_ticket", `{"id":7}`), script.Text("Deleted."))
	ag := startAgent(t, prov, agentOpts{})
	c := connect(t, ag.url, "")
	task := send(t, c, userText("delete ticket 7"))
	pendingIDs(t, task)
	answer := userText("approve")
	answer.Message.ContextID = task.ContextID
	done := send(t, c, answer)
	if done.ID != task.ID || done.Status.State != a2a.TaskStateCompleted || ag.deletes.Load() != 1 {
		t.Fatalf("answer on the context: task %s (want %s) %s, %d deletes", done.ID, task.ID, done.Status.State, ag.deletes.Load())
	}
}

func TestHostHeaderOfAnotherNameIsRefused(t *testing.T) {
	ag := startAgent(t, script.Play(), agentOpts{})
	for host, want := range map[string]int{"evil.example": http.StatusForbidden, "localhost": http.StatusOK, "127.0.0.1:80": http.StatusOK} {
		req, _ := http.NewRequest(http.MethodGet, ag.url+"/.well-known/agent-card.json", nil)
		req.Host = host
		r, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		r.Body.Close()
		if r.StatusCode != want {
			t.Errorf("Host %s: %d, want %d", host, r.StatusCode, want)
		}
	}
}

// A caller cannot raise its own roles by what it writes: identity comes
// from the authenticator alone, and metadata naming an admin, on the
// message or the request, in lode's own key or any other, is not read.
func TestMetadataClaimingRolesIsIgnored(t *testing.T) {
	prov := script.Play(script.Call("c1", "delete_ticket", `{"id":7}`), script.Text("I may not."))
	ag := startAgent(t, prov, agentOpts{authn: tokens(t), policy: viewerPolicy})
	c := connect(t, ag.url, "viewer-secret")
	claim := map[string]any{"user": "ada", "tenant": "other", "roles": []any{"admin"}}
	req := userText("delete ticket 7")
	req.Message.Metadata = map[string]any{lodea2a.MetaCaller: claim, "roles": []any{"admin"}, "identity": claim}
	req.Metadata = map[string]any{lodea2a.MetaCaller: claim, "roles": []any{"admin"}}
	viewerOnly(t, ag, prov, send(t, c, req))
}
