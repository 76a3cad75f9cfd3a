// Command pack shows how to write a tool pack: the echo pack, registered in
// a catalog, turned on by a tools: map, mounted into a registry and called
// — directly, then by a scripted model through the loop. It runs offline.
package main

import (
	"context"
	"fmt"
	"log"

	"github.com/lodeworks/lode/artifact"
	"github.com/lodeworks/lode/ledger"
	"github.com/lodeworks/lode/loop"
	"github.com/lodeworks/lode/tool"
	"github.com/lodeworks/lode/x/provider/script"
	xtool "github.com/lodeworks/lode/x/tool"
	"github.com/lodeworks/lode/x/tool/pack"
)

// SayArgs are echo_say's arguments; the schema the model sees comes from
// this struct.
type SayArgs struct {
	Message string `json:"message" jsonschema:"description=The message to return."`
}

// echoPack declares one tool that returns its argument. A failure the
// model should read is a value (pack.Failure), not an error.
func echoPack() *pack.Bundle {
	return pack.MustNew("echo",
		pack.Tool("echo_say", "Return the given message unchanged. Args: message.",
			func(ctx context.Context, in SayArgs) (*tool.Result, error) {
				if in.Message == "" {
					return pack.Failure("'message' must not be empty"), nil
				}
				return pack.Success(map[string]any{"message": in.Message}), nil
			}),
	)
}

const workflow = `
tools:
  echo: {}
`

func main() {
	ctx := context.Background()

	catalog, err := pack.NewCatalog(echoPack())
	if err != nil {
		log.Fatal(err)
	}
	settings, err := pack.ParseConfig([]byte(workflow))
	if err != nil {
		log.Fatal(err)
	}
	reg := tool.NewRegistry()
	if _, err := catalog.Mount(ctx, reg, settings); err != nil {
		log.Fatal(err)
	}

	// Called directly, as an MCP server or a test would.
	b, _ := reg.Lookup("echo_say")
	out, err := b.Call(ctx, tool.NoSandbox(), `{"message": "hello"}`)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("direct:", out.(*tool.Result).Value)

	// Called by a model: here a scripted one, so no network or key.
	model := script.Play(
		script.Call("call-1", "echo_say", `{"message": "hi from the model"}`),
		script.Call("call-2", "echo_say", `{"message": ""}`),
		script.Text("All echoed."),
	)
	step := loop.New(
		loop.WithHandlers(xtool.NewHandler(reg)),
		loop.WithInvokeOptions(xtool.WithFilteredTools(reg, nil)),
	)
	st, err := step.Run(ctx, ledger.NewThread(), model)
	if err != nil {
		log.Fatal(err)
	}
	for _, turn := range st.Turns() {
		for _, a := range turn.Artifacts {
			switch a := a.(type) {
			case artifact.ToolResult:
				fmt.Printf("%s -> %s (error: %v)\n", a.Name, a.Content, a.IsError)
			case artifact.Text:
				fmt.Println("model:", a.Content)
			}
		}
	}
}
