package a2a_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2aclient"
	"github.com/a2aproject/a2a-go/v2/a2acompat/a2av0"

	"github.com/lodeworks/lode/x/provider/script"
)

// A client of A2A 0.3 ("message/send", "tasks/get" over JSON-RPC) is
// served at the same address, with the same approvals.
func TestProtocol03ClientApproves(t *testing.T) {
	prov := script.Play(script.Call("c1", "delete_ticket", `{"id":7}`), script.Text("Deleted."), script.Text("streamed over 0.3"))
	ag := startAgent(t, prov, agentOpts{})
	iface := &a2a.AgentInterface{URL: ag.url + "/", ProtocolBinding: a2a.TransportProtocolJSONRPC, ProtocolVersion: a2av0.Version}
	c, err := a2aclient.NewFromEndpoints(t.Context(), []*a2a.AgentInterface{iface},
		a2aclient.WithDefaultsDisabled(), a2av0.WithJSONRPCTransport(a2av0.JSONRPCTransportConfig{Client: http.DefaultClient}))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Destroy()
	task := send(t, c, userText("delete ticket 7"))
	if ids := pendingIDs(t, task); len(ids) != 1 || ids[0] != "c1" {
		t.Fatalf("pending %v", ids)
	}
	done := send(t, c, answerTo(task, a2a.NewTextPart("approve")))
	if done.Status.State != a2a.TaskStateCompleted || artifactText(done) != "Deleted." || ag.deletes.Load() != 1 {
		t.Fatalf("0.3 approval: %s %q, %d deletes", done.Status.State, artifactText(done), ag.deletes.Load())
	}
	var text strings.Builder
	for ev, err := range c.SendStreamingMessage(t.Context(), userText("stream")) {
		if err != nil {
			t.Fatal(err)
		}
		if a, ok := ev.(*a2a.TaskArtifactUpdateEvent); ok {
			for _, p := range a.Artifact.Parts {
				text.WriteString(p.Text())
			}
		}
	}
	if text.String() != "streamed over 0.3" {
		t.Fatalf("0.3 stream: %q", text.String())
	}
}

// The HTTP+JSON binding the card lists serves the same agent.
func TestRESTBinding(t *testing.T) {
	prov := script.Play(script.Call("c1", "delete_ticket", `{"id":7}`), script.Text("Deleted."))
	ag := startAgent(t, prov, agentOpts{})
	iface := &a2a.AgentInterface{URL: ag.url, ProtocolBinding: a2a.TransportProtocolHTTPJSON, ProtocolVersion: a2a.Version}
	c, err := a2aclient.NewFromEndpoints(t.Context(), []*a2a.AgentInterface{iface}, a2aclient.WithDefaultsDisabled(), a2aclient.WithRESTTransport(http.DefaultClient))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Destroy()
	task := send(t, c, userText("delete ticket 7"))
	pendingIDs(t, task)
	done := send(t, c, answerTo(task, a2a.NewTextPart("approve")))
	if done.Status.State != a2a.TaskStateCompleted || ag.deletes.Load() != 1 {
		t.Fatalf("over REST: %s, %d deletes", done.Status.State, ag.deletes.Load())
	}
	got, err := c.GetTask(t.Context(), &a2a.GetTaskRequest{ID: task.ID})
	if err != nil || got.Status.State != a2a.TaskStateCompleted {
		t.Fatalf("GetTask over REST: %v %v", got, err)
	}
}
