package a2a_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/a2aproject/a2a-go/v2/a2a"

	lodea2a "github.com/lodeworks/lode/x/a2a"
	"github.com/lodeworks/lode/x/provider/script"
)

func TestPushGoesOnlyToConfiguredDestinations(t *testing.T) {
	states := make(chan a2a.TaskState, 16)
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		var sr a2a.StreamResponse
		if err := json.Unmarshal(b, &sr); err == nil {
			switch ev := sr.Event.(type) {
			case *a2a.TaskStatusUpdateEvent:
				states <- ev.Status.State
			case *a2a.Task:
				states <- ev.Status.State
			}
		}
	}))
	defer hook.Close()
	prov := script.Play(script.Text("done"))
	ag := startAgent(t, prov, agentOpts{extra: []lodea2a.Option{lodea2a.WithPushDestinations(hook.URL + "/hooks/")}})
	if card := ag.srv.Card(); !card.Capabilities.PushNotifications {
		t.Error("the card does not say push is supported")
	}
	c := connect(t, ag.url, "")

	elsewhere := userText("hi")
	elsewhere.Config = &a2a.SendMessageConfig{PushConfig: &a2a.PushConfig{URL: "http://169.254.169.254/latest"}}
	if _, err := c.SendMessage(t.Context(), elsewhere); err == nil || !strings.Contains(err.Error(), "only to the destinations") {
		t.Fatalf("a push to an address of the caller's choosing: %v", err)
	}
	req := userText("hi")
	req.Config = &a2a.SendMessageConfig{PushConfig: &a2a.PushConfig{URL: hook.URL + "/hooks/mine"}}
	task := send(t, c, req)
	if task.Status.State != a2a.TaskStateCompleted {
		t.Fatalf("state %s", task.Status.State)
	}
	for s := range states {
		if s == a2a.TaskStateCompleted {
			break
		}
	}
}
