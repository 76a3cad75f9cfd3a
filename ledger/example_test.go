package ledger_test

import (
	"fmt"

	"github.com/lodeworks/lode/artifact"
	"github.com/lodeworks/lode/ledger"
)

// A thread is the history of one conversation plus its metadata: whatever
// a tool filter or a handler needs to know about who is asking.
func ExampleNewThread() {
	th := ledger.NewThread(
		ledger.WithID("support-42"),
		ledger.WithMetadata(map[string]string{"role": "viewer"}),
	)

	_ = th.Append(ledger.RoleUser, artifact.Text{Content: "What is 2+3?"})
	_ = th.Append(ledger.RoleAssistant, artifact.ToolCall{ID: "c1", Name: "add", Arguments: `{"a":2,"b":3}`})
	_ = th.Append(ledger.RoleTool, artifact.ToolResult{ToolCallID: "c1", Name: "add", Content: "5"})
	_ = th.Append(ledger.RoleAssistant, artifact.Text{Content: "2+3 is 5."})

	// Turns is a snapshot: appends after this call do not change it.
	for _, t := range th.Turns() {
		fmt.Printf("%-9s %s\n", t.Role, t.Artifacts[0].Kind())
	}

	_ = th.SetMetadata("role", "admin")
	role, _ := th.Metadata("role")
	fmt.Println(th.ID(), "role:", role)

	// An invalid role is refused rather than stored.
	fmt.Println(th.Append("robot", artifact.Text{Content: "beep"}))
	// Output:
	// user      text
	// assistant tool_call
	// tool      tool_result
	// assistant text
	// support-42 role: admin
	// ledger: append: invalid role "robot"
}
