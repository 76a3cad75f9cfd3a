package tool_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/lodeworks/lode/artifact"
	"github.com/lodeworks/lode/ledger"
	"github.com/lodeworks/lode/loop"
	"github.com/lodeworks/lode/tool"
	"github.com/lodeworks/lode/x/provider/script"
	xtool "github.com/lodeworks/lode/x/tool"
)

// The seed's shape: a registry, a handler, and the registry's tools offered
// on every turn.
func ExampleNewHandler() {
	registry := tool.NewRegistry()
	schema := json.RawMessage(`{"type":"object","properties":{"a":{"type":"number"},"b":{"type":"number"}},"required":["a","b"]}`)
	if err := registry.Register(tool.Tool{Name: "add", Description: "Add two numbers", Schema: schema}, func(ctx context.Context, _ tool.Sandbox, args map[string]any) (any, error) {
		a, _ := args["a"].(float64)
		b, _ := args["b"].(float64)
		return a + b, nil
	}); err != nil {
		fmt.Println(err)
		return
	}

	prov := script.Play(script.Call("c1", "add", `{"a":2,"b":40}`), script.Text("2 + 40 = 42"))
	step := loop.New(
		loop.WithHandlers(xtool.NewHandler(registry)),
		loop.WithInvokeOptions(xtool.WithFilteredTools(registry, nil)),
	)
	state := ledger.NewThread()
	_ = state.Append(ledger.RoleUser, artifact.Text{Content: "What is 2 + 40?"})
	if _, err := step.Run(context.Background(), state, prov); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(state.Turns()[2].Artifacts[0].(artifact.ToolResult).Content)
	fmt.Println(state.Turns()[3].Artifacts[0].(artifact.Text).Content)
	// Output:
	// 42
	// 2 + 40 = 42
}

// Per-role filtering: the caller's role lives in thread metadata; viewers
// see read-only tools, and a call to anything else is refused even if the
// model guesses its name.
func ExampleWithFilteredTools() {
	registry := tool.NewRegistry()
	_ = registry.Register(tool.Tool{Name: "read_ticket", Hints: tool.Hints{ReadOnly: true}},
		func(context.Context, tool.Sandbox, map[string]any) (any, error) {
			return "ticket 7: printer on fire", nil
		})
	_ = registry.Register(tool.Tool{Name: "close_ticket", Hints: tool.Hints{Destructive: true}},
		func(context.Context, tool.Sandbox, map[string]any) (any, error) { return "closed", nil })

	byRole := func(_ context.Context, st ledger.State, tools []tool.Tool) []tool.Tool {
		if role, _ := st.Metadata("role"); role == "admin" {
			return tools
		}
		var out []tool.Tool
		for _, t := range tools {
			if t.Hints.ReadOnly {
				out = append(out, t)
			}
		}
		return out
	}

	for _, role := range []string{"viewer", "admin"} {
		prov := script.Play(
			script.Reply(artifact.ToolCall{ID: "1", Name: "read_ticket", Arguments: "{}"}, artifact.ToolCall{ID: "2", Name: "close_ticket", Arguments: "{}"}),
			script.Text("done"),
		)
		step := loop.New(
			loop.WithHandlers(xtool.NewHandler(registry)),
			loop.WithInvokeOptions(xtool.WithFilteredTools(registry, byRole)),
		)
		thread := ledger.NewThread(ledger.WithMetadata(map[string]string{"role": role}))
		_ = thread.Append(ledger.RoleUser, artifact.Text{Content: "Read ticket 7 and close it."})
		if _, err := step.Run(context.Background(), thread, prov); err != nil {
			fmt.Println(err)
			return
		}
		var offered []string
		for _, t := range prov.Requests()[0].Tools {
			offered = append(offered, t.Name)
		}
		fmt.Printf("%s is offered %s\n", role, strings.Join(offered, ", "))
		for _, a := range thread.Turns()[2].Artifacts {
			r := a.(artifact.ToolResult)
			fmt.Printf("  %s -> error=%v %s\n", r.Name, r.IsError, r.Content)
		}
	}
	// Output:
	// viewer is offered read_ticket
	//   read_ticket -> error=false ticket 7: printer on fire
	//   close_ticket -> error=true unknown tool "close_ticket". Tools available in this turn: read_ticket.
	// admin is offered close_ticket, read_ticket
	//   read_ticket -> error=false ticket 7: printer on fire
	//   close_ticket -> error=false closed
}

// A typed tool that computes and returns may promise to run inline: the
// Handler then runs it on the caller's goroutine, with the same checks
// and results.
func ExampleNewHandler_inline() {
	type addIn struct {
		A int `json:"a"`
		B int `json:"b"`
	}
	registry := tool.NewRegistry()
	if err := tool.RegisterFunc(registry, "add", "Add a and b", func(_ context.Context, in addIn) (int, error) {
		return in.A + in.B, nil
	}, tool.WithInline()); err != nil {
		fmt.Println(err)
		return
	}
	h := xtool.NewHandler(registry)
	fmt.Println(h.Execute(context.Background(), artifact.ToolCall{ID: "c1", Name: "add", Arguments: `{"a":2,"b":40}`}).Content)
	fmt.Println(h.Execute(context.Background(), artifact.ToolCall{ID: "c2", Name: "add", Arguments: `{"a":"2","b":40}`}).Content)
	// Output:
	// 42
	// invalid arguments for add: arguments do not match the schema: validating root: validating /properties/a: type: 2 has type "string", want "integer". The arguments you sent were: "{\"a\":\"2\",\"b\":40}"
}
