package a2a_test

import (
	"context"
	"net/http/httptest"
	"testing"

	"github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/lodeworks/lode/artifact"
	"github.com/lodeworks/lode/ledger/file"
	lodea2a "github.com/lodeworks/lode/x/a2a"
	"github.com/lodeworks/lode/x/provider/script"
)

// Close mid-turn leaves the task working in the store, and the next
// server's Recover finishes it.
func TestCloseMidTurnThenRecover(t *testing.T) {
	dir := t.TempDir()
	store, err := file.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	srv, err := lodea2a.NewServer(script.Play(script.Hang(artifact.Text{Content: "half "})), store)
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(srv)
	c := connect(t, hs.URL, "")
	ctx, stop := context.WithCancel(t.Context())
	var id a2a.TaskID
	for ev, err := range c.SendStreamingMessage(ctx, userText("work")) {
		if err != nil {
			t.Fatal(err)
		}
		if a, ok := ev.(*a2a.TaskArtifactUpdateEvent); ok {
			id = a.TaskID
			break
		}
	}
	stop()
	srv.Close()
	hs.CloseClientConnections()
	hs.Close()

	next, err := lodea2a.NewServer(script.Play(script.Text("whole answer")), store)
	if err != nil {
		t.Fatal(err)
	}
	defer next.Close()
	done, err := next.Recover(t.Context())
	if err != nil || len(done) != 1 || done[0] != id {
		t.Fatalf("Recover: %v %v, want task %s", done, err, id)
	}
	hs2 := httptest.NewServer(next)
	defer hs2.Close()
	task, err := connect(t, hs2.URL, "").GetTask(t.Context(), &a2a.GetTaskRequest{ID: id})
	if err != nil {
		t.Fatal(err)
	}
	if task.Status.State != a2a.TaskStateCompleted || artifactText(task) != "whole answer" {
		t.Fatalf("after recovery: %s %q", task.Status.State, artifactText(task))
	}
	store.Close()
}
