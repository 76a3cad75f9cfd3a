// Command calculator is the seed's calculator: a registry with the
// calculator pack mounted, and a loop in which a model calls it and then
// answers with what it returned. The model is scripted
// (x/provider/script), so it runs offline.
package main

import (
	"context"
	"fmt"
	"log"

	"github.com/lodeworks/lode/artifact"
	"github.com/lodeworks/lode/ledger"
	"github.com/lodeworks/lode/loop"
	"github.com/lodeworks/lode/provider"
	"github.com/lodeworks/lode/tool"
	"github.com/lodeworks/lode/x/provider/script"
	xtool "github.com/lodeworks/lode/x/tool"
	"github.com/lodeworks/lode/x/tool/calculator"
)

func main() {
	ctx := context.Background()

	// The Go API, for code that needs no model.
	v, err := calculator.Eval("1/3 + 1/6")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("Go API: 1/3 + 1/6 =", v.Text())

	// The tool: mounted as calculator__eval.
	reg := tool.NewRegistry()
	if err := reg.Mount(ctx, calculator.New()); err != nil {
		log.Fatal(err)
	}

	// A scripted model: it calls the tool twice in one turn (the second
	// expression divides by zero), then answers from what the tool said.
	model := script.Play(
		script.Reply(
			artifact.ToolCall{ID: "call-1", Name: "calculator__eval", Arguments: `{"expression": "(1/3 + 1/6) × 2^10"}`},
			artifact.ToolCall{ID: "call-2", Name: "calculator__eval", Arguments: `{"expression": "1/(2 - 2)"}`},
		),
		script.Func(func(req *provider.Request) ([]artifact.Artifact, error) {
			last := req.Turns[len(req.Turns)-1]
			first := last.Artifacts[0].(artifact.ToolResult)
			return []artifact.Artifact{artifact.Text{Content: "(1/3 + 1/6) × 2^10 is " + first.Content + "; 1/(2 - 2) has no value."}}, nil
		}),
	)
	step := loop.New(
		loop.WithHandlers(xtool.NewHandler(reg)),
		loop.WithInvokeOptions(xtool.WithFilteredTools(reg, nil)),
	)
	st := ledger.NewThread()
	if err := st.Append(ledger.RoleUser, artifact.Text{Content: "What is (1/3 + 1/6) × 2^10, and 1/(2-2)?"}); err != nil {
		log.Fatal(err)
	}
	if _, err := step.Run(ctx, st, model); err != nil {
		log.Fatal(err)
	}
	for _, turn := range st.Turns() {
		for _, a := range turn.Artifacts {
			switch a := a.(type) {
			case artifact.ToolCall:
				fmt.Printf("%s: call %s %s\n", turn.Role, a.Name, a.Arguments)
			case artifact.ToolResult:
				fmt.Printf("%s: %s (error: %v)\n", turn.Role, a.Content, a.IsError)
			case artifact.Text:
				fmt.Printf("%s: %s\n", turn.Role, a.Content)
			}
		}
	}
}
