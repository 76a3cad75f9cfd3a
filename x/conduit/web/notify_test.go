package web_test

import (
	"context"
	"net/http/httptest"
	"reflect"
	"testing"

	"github.com/lodeworks/lode/artifact"
	"github.com/lodeworks/lode/ledger"
	"github.com/lodeworks/lode/ledger/file"
	"github.com/lodeworks/lode/loop"
	"github.com/lodeworks/lode/provider"
	"github.com/lodeworks/lode/x/conduit/web"
	"github.com/lodeworks/lode/x/provider/script"
)

// note is a DataEvent of a package the web conduit does not know.
type note struct{ msg string }

func (note) EventName() string { return "test_note" }
func (n note) UIData() (string, any) {
	return "notification", map[string]any{"kind": "progress", "message": n.msg}
}

// unnamed is a DataEvent with no name, which is not shown.
type unnamed struct{}

func (unnamed) EventName() string     { return "test_unnamed" }
func (unnamed) UIData() (string, any) { return "", 1 }

var _ web.DataEvent = note{}

// noteTool answers a tool call after posting two DataEvents, one of them
// unnamed.
var noteTool = loop.HandlerFunc(func(ctx context.Context, a artifact.Artifact, e loop.Emitter) error {
	c, ok := a.(artifact.ToolCall)
	if !ok {
		return nil
	}
	loop.Notify(ctx, unnamed{})
	loop.Notify(ctx, note{"half way"})
	e.Emit(ctx, loop.TurnCompleteEvent{Role: ledger.RoleTool, Artifacts: []artifact.Artifact{
		artifact.ToolResult{ToolCallID: c.ID, Name: c.Name, Content: "done"},
	}})
	return nil
})

// serveHandler serves prov with h as the only handler.
func serveHandler(t *testing.T, prov provider.Provider, h loop.Handler) *fixture {
	t.Helper()
	store, err := file.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	wh, err := web.New(prov, store, web.WithLoopOptions(loop.WithHandlers(h)))
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(wh)
	t.Cleanup(func() {
		srv.CloseClientConnections()
		wh.Close()
		srv.Close()
		store.Close()
	})
	return &fixture{h: wh, srv: srv, store: store}
}

// An event a tool posts with loop.Notify reaches the page as a transient
// data part naming the tool call, between the call and its result.
func TestNotificationPart(t *testing.T) {
	f := serveHandler(t, script.Play(script.Call("c1", "slow", "{}"), script.Text("ok")), noteTool)
	ps := parts(t, f.post(t, "/api/chat", chatBody("", "go")))
	var got []map[string]any
	order := map[string]int{}
	for i, p := range ps {
		order[p["type"].(string)] = i
		if p["type"] == "data-notification" {
			got = append(got, p)
		}
	}
	want := []map[string]any{{
		"type": "data-notification", "id": "c1", "transient": true,
		"data": map[string]any{"kind": "progress", "message": "half way"},
	}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("notification parts = %v, want %v (stream %v)", got, want, types(ps))
	}
	if !(order["tool-input-available"] < order["data-notification"] && order["data-notification"] < order["tool-output-available"]) {
		t.Errorf("data-notification out of place: %v", types(ps))
	}
}
