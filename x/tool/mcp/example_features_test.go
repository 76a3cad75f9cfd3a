package mcp_test

import (
	"context"
	"fmt"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/lodeworks/lode/tool"
	"github.com/lodeworks/lode/x/tool/mcp"
)

// A server's tool asks the person for a name; the application's Elicitor
// answers, and the greeting left out of the answer takes its schema
// default.
func ExampleWithElicitation() {
	srv := sdk.NewServer(&sdk.Implementation{Name: "greeter", Version: "1"}, nil)
	sdk.AddTool(srv, &sdk.Tool{Name: "greet"}, func(ctx context.Context, req *sdk.CallToolRequest, _ struct{}) (*sdk.CallToolResult, any, error) {
		res, err := req.Session.Elicit(ctx, &sdk.ElicitParams{
			Message: "Who should be greeted?",
			RequestedSchema: map[string]any{"type": "object", "properties": map[string]any{
				"name":     map[string]any{"type": "string"},
				"greeting": map[string]any{"type": "string", "default": "Hello"},
			}},
		})
		if err != nil {
			return nil, nil, err
		}
		if res.Action != "accept" {
			return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "nobody to greet (" + res.Action + ")"}}}, nil, nil
		}
		text := fmt.Sprintf("%s, %s", res.Content["greeting"], res.Content["name"])
		return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: text}}}, nil, nil
	})
	connect := mcp.WithTransport(func(ctx context.Context) (sdk.Transport, error) {
		ct, st := sdk.NewInMemoryTransports()
		_, err := srv.Connect(ctx, st, nil)
		return ct, err
	})

	ask := func(ctx context.Context, req mcp.ElicitRequest) (mcp.ElicitResult, error) {
		fmt.Println("asked:", req.Message)
		return mcp.ElicitResult{Action: mcp.ElicitAccept, Content: map[string]any{"name": "Ada"}}, nil
	}
	for _, opts := range [][]mcp.Option{{mcp.WithElicitation(ask)}, nil} {
		// This server asks within the call, as revisions before
		// 2026-07-28 do; the client answers the newer round trips too.
		c, err := mcp.NewClient(append([]mcp.Option{mcp.WithName("greeter"), connect, mcp.WithProtocolVersion("2025-11-25")}, opts...)...)
		if err != nil {
			panic(err)
		}
		res, err := c.Call(context.Background(), "greet", nil)
		if err != nil {
			panic(err)
		}
		fmt.Println(res.(*tool.Result).Content)
		c.Close()
	}
	// Output:
	// asked: Who should be greeted?
	// Hello, Ada
	// nobody to greet (decline)
}
