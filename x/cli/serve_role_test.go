package cli

import (
	"context"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

const serveRoleConfig = `tools:
  calculator: {}
  filesystem:
    root: .
policy:
  roles:
    viewer:
      allow:
        packs: [calculator]
`

// lode serve over stdio with a policy: without --role it warns on stderr,
// as lode run does, and stdout stays the protocol's (the go-sdk client
// connects through it); an MCP client refused a tool is told what holds
// for its call, not for a turn it does not have.
func TestServeStdioRoleWarningAndRefusals(t *testing.T) {
	dir := writeConfig(t, serveRoleConfig)
	for _, tc := range []struct {
		name       string
		args       []string
		call       string
		wantText   string
		wantStderr string
	}{
		{"no role", nil, "calculator__eval",
			`unknown tool "calculator__eval". No tools are available to this caller.`,
			"lode: warning: lode.yaml has a policy and no --role was given, so MCP clients are offered no tools: give the caller's roles with --role R (lode policy explain --role R says what R may use)\n"},
		{"a role that may not use the tool", []string{"--role", "viewer"}, "filesystem__read",
			`unknown tool "filesystem__read". Tools available to this caller: calculator__eval.`, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cmd := exec.Command(lodeBin, append([]string{"serve", "--config", filepath.Join(dir, "lode.yaml")}, tc.args...)...)
			cmd.Dir = dir
			stderr := newWatched()
			cmd.Stderr = stderr
			c := sdk.NewClient(&sdk.Implementation{Name: "plain", Version: "1"}, nil)
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			cs, err := c.Connect(ctx, &sdk.CommandTransport{Command: cmd}, nil)
			if err != nil {
				t.Fatal(err)
			}
			res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: tc.call, Arguments: map[string]any{"expression": "1+1", "path": "x"}})
			if err != nil {
				t.Fatal(err)
			}
			text := ""
			for _, ct := range res.Content {
				if tx, ok := ct.(*sdk.TextContent); ok {
					text += tx.Text
				}
			}
			if !res.IsError || text != tc.wantText {
				t.Errorf("call %s: %q (isError %v)\nwant exactly %q", tc.call, text, res.IsError, tc.wantText)
			}
			// Close waits for the process, and so for all it wrote.
			_ = cs.Close()
			if got := stderr.String(); got != tc.wantStderr {
				t.Errorf("stderr %q\nwant exactly %q", got, tc.wantStderr)
			}
		})
	}
}
