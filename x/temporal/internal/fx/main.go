// Command fx is an MCP server over stdio for the tests against a real
// Temporal server: its tools leave a line in $FX_LOG each time they run,
// so a test counts their side effects across processes.
//
//	note     appends "note TEXT"; returns at once
//	slow     appends "slow", writes "inside" to the FIFO $FX_FIFO (which
//	         blocks until the test reads it), then waits for ever: the
//	         test kills its worker in there
//	guarded  appends "guarded"; lode.yaml makes it wait for approval
//	work     idempotent: POSTs $FX_URL/fx/begin?token=TOKEN (the test may
//	         hold the request: the worker dies inside the tool), then,
//	         unless an earlier run with TOKEN completed, POSTs
//	         $FX_URL/fx/end?token=TOKEN, the tool's one effect; returns
//	         "worked TOKEN" either way. Completed tokens are kept in
//	         $FX_LOG.work, so a retry on another worker does nothing twice;
//	         once kept, it POSTs $FX_URL/fx/done?token=TOKEN.
//
// Only work is idempotent, so only work is retried. It exits when its client goes
// (standard input closes), whatever its tools are doing.
package main

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

type noteIn struct {
	Text string `json:"text"`
}

type none struct{}

type workIn struct {
	Token string `json:"token"`
}

// call tells the test at $FX_URL that work's run on token is at what.
func call(ctx context.Context, what, token string) error {
	base := os.Getenv("FX_URL")
	if base == "" {
		return nil
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+"/fx/"+what+"?token="+url.QueryEscape(token), nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("fx: %s %s: %s", what, token, resp.Status)
	}
	return nil
}

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
	yes := true
	mcp.AddTool(s, &mcp.Tool{Name: "work", Description: "Work on a token.", Annotations: &mcp.ToolAnnotations{DestructiveHint: new(bool), IdempotentHint: yes}},
		func(ctx context.Context, _ *mcp.CallToolRequest, in workIn) (*mcp.CallToolResult, any, error) {
			if err := call(ctx, "begin", in.Token); err != nil {
				return nil, nil, err
			}
			done := os.Getenv("FX_LOG") + ".work"
			b, _ := os.ReadFile(done)
			if !slices.Contains(strings.Fields(string(b)), in.Token) {
				if err := call(ctx, "end", in.Token); err != nil {
					return nil, nil, err
				}
				f, err := os.OpenFile(done, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
				if err != nil {
					return nil, nil, err
				}
				_, err = fmt.Fprintln(f, in.Token)
				f.Close()
				if err != nil {
					return nil, nil, err
				}
				if err := call(ctx, "done", in.Token); err != nil {
					return nil, nil, err
				}
			}
			return text("worked " + in.Token), nil, nil
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
