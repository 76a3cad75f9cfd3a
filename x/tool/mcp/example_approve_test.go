package mcp_test

import (
	"context"
	"fmt"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/lodeworks/lode/tool"
	xtool "github.com/lodeworks/lode/x/tool"
	"github.com/lodeworks/lode/x/tool/mcp"
)

// A served tool that needs approval runs only when the client's person
// says yes through elicitation; a client that cannot ask is refused.
func ExampleAskClient() {
	reg := tool.NewRegistry()
	type in struct {
		Path string `json:"path"`
	}
	_ = tool.RegisterFunc(reg, "wipe", "Deletes a file", func(_ context.Context, a in) (string, error) {
		return "wiped " + a.Path, nil
	})
	h := xtool.NewHandler(reg, xtool.WithApprover(mcp.AskClient()), xtool.WithApprovalFor("wipe"))
	srv, _ := mcp.NewServer(reg, mcp.WithHandler(h))

	call := func(elicit func(context.Context, *sdk.ElicitRequest) (*sdk.ElicitResult, error)) {
		ctx := context.Background()
		st, ct := sdk.NewInMemoryTransports()
		ss, _ := srv.Connect(ctx, st)
		defer ss.Close()
		cs, _ := sdk.NewClient(&sdk.Implementation{Name: "app", Version: "1"}, &sdk.ClientOptions{ElicitationHandler: elicit}).Connect(ctx, ct, nil)
		defer cs.Close()
		res, _ := cs.CallTool(ctx, &sdk.CallToolParams{Name: "wipe", Arguments: map[string]any{"path": "a.txt"}})
		fmt.Println(res.IsError, res.Content[0].(*sdk.TextContent).Text)
	}
	call(func(_ context.Context, req *sdk.ElicitRequest) (*sdk.ElicitResult, error) {
		fmt.Println("asked:", req.Params.Message)
		return &sdk.ElicitResult{Action: "accept", Content: map[string]any{"approve": true}}, nil
	})
	call(nil) // this client declares no elicitation
	// Output:
	// asked: Approve the call to wipe with arguments {"path":"a.txt"}? It needs approval because this server requires approval for wipe.
	// false wiped a.txt
	// true the call to wipe was not approved: mcp: the client cannot ask a person for approval: the call needs a person's approval (this server requires approval for wipe), and this client declared no elicitation capability to ask one; call it from an MCP client that supports elicitation, or ask whoever runs this server to change what needs approval
}
