// Command fx is an MCP server over stdio for the tests against a real
// Temporal server: its tools leave a line in $FX_LOG each time they run,
// so a test counts their side effects across processes.
//
//	note     appends "note TEXT"; returns at once
//	slow     appends "slow", writes "inside" to the FIFO $FX_FIFO (which
//	         blocks until the test reads it), then waits for ever: the
//	         test kills its worker in there
//	guarded  appends "guarded"; lode.yaml makes it wait for approval
//
// None is idempotent, so none is retried. It exits when its client goes
// (standard input closes), whatever its tools are doing.
package main

import (
	"context"
	"fmt"
	"os"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

type noteIn struct {
	Text string `json:"text"`
}

type none struct{}

func main() {
	s := mcp.NewServer(&mcp.Implementation{Name: "fx", Version: "v0.0.1"}, nil)
	safe := func() *mcp.ToolAnnotations {
		f := false
		return &mcp.ToolAnnotations{DestructiveHint: &f}
	}
	mcp.AddTool(s, &mcp.Tool{Name: "note", Description: "Note a text.", Annotations: safe()},
		func(ctx context.Context, _ *mcp.CallToolRequest, in noteIn) (*mcp.CallToolResult, any, error) {
			if err := record("note " + in.Text); err != nil {
				return nil, nil, err
			}
			return text("noted " + in.Text), nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "slow", Description: "Work for a long time.", Annotations: safe()},
		func(ctx context.Context, _ *mcp.CallToolRequest, _ none) (*mcp.CallToolResult, any, error) {
			if err := record("slow"); err != nil {
				return nil, nil, err
			}
			f, err := os.OpenFile(os.Getenv("FX_FIFO"), os.O_WRONLY, 0)
			if err != nil {
				return nil, nil, err
			}
			_, err = fmt.Fprintln(f, "inside")
			f.Close()
			if err != nil {
				return nil, nil, err
			}
			<-ctx.Done()
			return nil, nil, ctx.Err()
		})
	mcp.AddTool(s, &mcp.Tool{Name: "guarded", Description: "Do what needs a person's yes.", Annotations: safe()},
		func(ctx context.Context, _ *mcp.CallToolRequest, _ none) (*mcp.CallToolResult, any, error) {
			if err := record("guarded"); err != nil {
				return nil, nil, err
			}
			return text("guarded ran"), nil, nil
		})
	_ = s.Run(context.Background(), &mcp.StdioTransport{})
	os.Exit(0)
}

func text(s string) *mcp.CallToolResult {
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: s}}}
}

// record appends one line to $FX_LOG; O_APPEND keeps lines whole across
// processes.
func record(line string) error {
	f, err := os.OpenFile(os.Getenv("FX_LOG"), os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return err
	}
	defer f.Close()
	_, err = fmt.Fprintln(f, line)
	return err
}
