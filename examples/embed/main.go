// Command embed is the README's embedding example as a program: a typed
// tool, an OpenAI-compatible model, per-role filtering and a bounded run.
//
//	OPENAI_API_KEY=... go run ./examples/embed
//	OPENAI_BASE_URL=http://127.0.0.1:11434/v1 LODE_MODEL=llama3.1 go run ./examples/embed
package main

import (
	"context"
	"fmt"
	"io"
	"log"
	"os"

	"github.com/lodeworks/lode/artifact"
	"github.com/lodeworks/lode/ledger"
	"github.com/lodeworks/lode/loop"
	"github.com/lodeworks/lode/tool"
	"github.com/lodeworks/lode/x/provider/openai"
	xtool "github.com/lodeworks/lode/x/tool"
)

type addArgs struct {
	A float64 `json:"a"`
	B float64 `json:"b"`
}

// byRole offers viewers only read-only tools.
func byRole(_ context.Context, st ledger.State, tools []tool.Tool) []tool.Tool {
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

func main() {
	if err := run(context.Background(), os.Stdout); err != nil {
		log.Fatal(err)
	}
}

// run is the program; opts come after its own provider options (a test
// replays a recorded session through them).
func run(ctx context.Context, w io.Writer, opts ...openai.Option) error {
	registry := tool.NewRegistry()
	err := tool.RegisterFunc(registry, "add", "Add two numbers",
		func(ctx context.Context, in addArgs) (float64, error) { return in.A + in.B, nil },
		tool.WithHints(tool.Hints{ReadOnly: true}))
	if err != nil {
		return err
	}

	model := os.Getenv("LODE_MODEL")
	if model == "" {
		model = "gpt-4o-mini"
	}
	prov, err := openai.New(append([]openai.Option{openai.WithModel(model)}, opts...)...) // key and base URL from OPENAI_API_KEY / OPENAI_BASE_URL
	if err != nil {
		return err
	}

	step := loop.New(
		loop.WithHandlers(xtool.NewHandler(registry)),                     // runs tool calls; failures become results
		loop.WithInvokeOptions(xtool.WithFilteredTools(registry, byRole)), // the turn's tools, per caller
		loop.WithMaxTurns(10),
	)
	thread := ledger.NewThread(ledger.WithMetadata(map[string]string{"role": "viewer"}))
	_ = thread.Append(ledger.RoleUser, artifact.Text{Content: "What is 2 + 40?"})
	if _, err := step.Run(ctx, thread, prov); err != nil {
		return err
	}
	answer, _ := loop.Answer(thread)
	fmt.Fprintln(w, answer)
	return nil
}
