package a2a_test

import (
	"context"
	"fmt"
	"net/http/httptest"
	"os"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2aclient"
	"github.com/a2aproject/a2a-go/v2/a2aclient/agentcard"

	"github.com/lodeworks/lode/artifact"
	"github.com/lodeworks/lode/ledger/file"
	"github.com/lodeworks/lode/loop"
	"github.com/lodeworks/lode/tool"
	lodea2a "github.com/lodeworks/lode/x/a2a"
	"github.com/lodeworks/lode/x/provider/script"
	xtool "github.com/lodeworks/lode/x/tool"
)

// A lode agent served over A2A, and an A2A client that asks it to delete
// a ticket: the call waits for approval (input-required), the client
// approves it on the task, and the task completes.
func Example() {
	ctx := context.Background()
	dir, _ := os.MkdirTemp("", "a2a-example")
	defer os.RemoveAll(dir)
	store, _ := file.Open(dir)
	defer store.Close()

	reg := tool.NewRegistry()
	_ = reg.Register(tool.Tool{Name: "delete_ticket", Description: "Delete a ticket."}, func(context.Context, tool.Sandbox, map[string]any) (any, error) {
		return "deleted", nil
	})
	needs := func(context.Context, tool.Tool, artifact.ToolCall) (string, bool) { return "it cannot be undone", true }
	model := script.Play(script.Call("c1", "delete_ticket", `{"id":7}`), script.Text("Ticket 7 is deleted."))
	srv, err := lodea2a.NewServer(model, store,
		lodea2a.WithLoopOptions(
			loop.WithHandlers(xtool.NewHandler(reg, xtool.WithApprover(xtool.PauseForDecision), xtool.WithApprovalRule(needs))),
			loop.WithInvokeOptions(xtool.WithFilteredTools(reg, nil)),
		),
		lodea2a.WithTools(reg.Tools()...),
	)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer srv.Close()
	hs := httptest.NewServer(srv)
	defer hs.Close()

	card, _ := agentcard.DefaultResolver.Resolve(ctx, hs.URL)
	client, _ := a2aclient.NewFromCard(ctx, card)
	defer client.Destroy()
	res, _ := client.SendMessage(ctx, &a2a.SendMessageRequest{Message: a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart("delete ticket 7"))})
	task := res.(*a2a.Task)
	fmt.Println(task.Status.State)

	answer := a2a.NewMessage(a2a.MessageRoleUser, a2a.NewDataPart(map[string]any{
		"decisions": []any{map[string]any{"id": "c1", "approve": true}},
	}))
	answer.TaskID, answer.ContextID = task.ID, task.ContextID
	res, _ = client.SendMessage(ctx, &a2a.SendMessageRequest{Message: answer})
	task = res.(*a2a.Task)
	fmt.Println(task.Status.State, task.Artifacts[0].Parts[0].Text())
	// Output:
	// TASK_STATE_INPUT_REQUIRED
	// TASK_STATE_COMPLETED Ticket 7 is deleted.
}
