package a2a_test

import (
	"testing"

	"github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/lodeworks/lode/artifact"
	"github.com/lodeworks/lode/ledger"
	"github.com/lodeworks/lode/loop"
	lodea2a "github.com/lodeworks/lode/x/a2a"
	"github.com/lodeworks/lode/x/provider/script"
)

func TestCancelWhileWaitingDeniesTheCallsAtOnce(t *testing.T) {
	prov := script.Play(script.Call("c1", "delete_ticket", `{"id":7}`), script.Text("unused"))
	ag := startAgent(t, prov, agentOpts{})
	c := connect(t, ag.url, "")
	task := send(t, c, userText("delete ticket 7"))
	pendingIDs(t, task)
	if got, err := c.CancelTask(t.Context(), &a2a.CancelTaskRequest{ID: task.ID}); err != nil || got.Status.State != a2a.TaskStateCanceled {
		t.Fatalf("cancel: %v %v", got, err)
	}
	st, err := ag.store.Load(t.Context(), lodea2a.ContextPrefix+task.ContextID)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if p := loop.Pending(st); len(p) != 0 {
		t.Fatalf("after the cancel %d call(s) still wait", len(p))
	}
	if w, _ := st.Metadata(lodea2a.WaitingKey); w != "" {
		t.Errorf("%s = %q after the cancel, want empty", lodea2a.WaitingKey, w)
	}
	turns := st.Turns()
	last := turns[len(turns)-1]
	if last.Role != ledger.RoleTool || len(last.Artifacts) != 2 {
		t.Fatalf("last turn %s with %d artifacts, want the tool turn of a decision and its result", last.Role, len(last.Artifacts))
	}
	d, ok := last.Artifacts[0].(artifact.Decision)
	if !ok || d.ToolCallID != "c1" || d.Approved || d.Name != "delete_ticket" || d.By != "a2a" || d.Reason != "the task was cancelled before a decision" {
		t.Errorf("decision %#v", last.Artifacts[0])
	}
	r, ok := last.Artifacts[1].(artifact.ToolResult)
	want := "the call to delete_ticket was denied by the person approving tool calls; it did not run. Their reason: the task was cancelled before a decision"
	if !ok || r.ToolCallID != "c1" || !r.IsError || r.Content != want {
		t.Errorf("result %#v", last.Artifacts[1])
	}
	if n := len(prov.Requests()); n != 1 {
		t.Errorf("the model was asked %d times, want 1: denying on cancel runs no turn", n)
	}
	if n := ag.deletes.Load(); n != 0 {
		t.Errorf("delete ran %d times", n)
	}
}
