package policy_test

import (
	"context"
	"fmt"

	"github.com/lodeworks/lode/artifact"
	"github.com/lodeworks/lode/ledger"
	"github.com/lodeworks/lode/loop"
	"github.com/lodeworks/lode/tool"
	"github.com/lodeworks/lode/x/policy"
	"github.com/lodeworks/lode/x/provider/script"
	xtool "github.com/lodeworks/lode/x/tool"
)

// A viewer's turn is offered only what the policy allows, and a call to
// anything else reads like a call to a tool that does not exist.
func Example() {
	p, err := policy.Parse([]byte(`
roles:
  viewer:
    allow:
      tools: ["read_*"]
  admin:
    allow:
      tools: ["*"]
`))
	if err != nil {
		fmt.Println(err)
		return
	}
	reg := tool.NewRegistry()
	for _, name := range []string{"read_ticket", "close_ticket"} {
		_ = reg.Register(tool.Tool{Name: name}, func(context.Context, tool.Sandbox, map[string]any) (any, error) {
			return name + " done", nil
		})
	}
	enf := policy.NewEnforcer(reg, p)
	step := loop.New(
		loop.WithHandlers(xtool.NewHandler(reg, enf.HandlerOptions()...)),
		loop.WithInvokeOptions(xtool.WithFilteredTools(reg, enf.Filter())),
	)
	st := ledger.NewThread(ledger.WithMetadata(map[string]string{policy.RolesKey: "viewer"}))
	_ = st.Append(ledger.RoleUser, artifact.Text{Content: "close ticket 7"})
	prov := script.Play(script.Reply(artifact.ToolCall{ID: "1", Name: "close_ticket", Arguments: "{}"}), script.Text("I cannot."))
	if _, err := step.Run(context.Background(), st, prov); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(st.Turns()[2].Artifacts[0].(artifact.ToolResult).Content)
	fmt.Println(p.Decide([]string{"viewer"}, policy.Tool{Name: "close_ticket"}).Rule)
	fmt.Println(p.Decide([]string{"admin"}, policy.Tool{Name: "close_ticket"}).Rule)
	// Output:
	// unknown tool "close_ticket". Tools available in this turn: read_ticket.
	// no rule allows it
	// admin allow tools "*" (line 8)
}
