// Command research mounts agents as tools: the top-level model asks a
// researcher agent, which searches a small offline corpus and hands what it
// found to a summariser agent. Each agent runs on a thread of its own, kept
// in a file store and linked to the call that started it; scripted models
// stand in for real ones, so it runs offline and the same every time.
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"github.com/lodeworks/lode/artifact"
	"github.com/lodeworks/lode/ledger"
	"github.com/lodeworks/lode/ledger/file"
	"github.com/lodeworks/lode/loop"
	"github.com/lodeworks/lode/provider"
	"github.com/lodeworks/lode/tool"
	"github.com/lodeworks/lode/x/agent"
	"github.com/lodeworks/lode/x/provider/script"
	xtool "github.com/lodeworks/lode/x/tool"
)

var corpus = map[string]string{
	"generics":  "Go 1.18 added type parameters, so functions and types can be written once for many types. Constraints are interfaces that list what a type must support.",
	"iterators": "Go 1.23 added range over functions. An iterator is a function that takes a yield callback.",
}

type searchIn struct {
	Query string `json:"query" jsonschema:"description=one word to look up"`
}

func main() {
	dir, err := os.MkdirTemp("", "lode-research-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	defer os.RemoveAll(dir)
	if err := run(context.Background(), os.Stdout, dir); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

// lastResult is the content of the last tool result the model was sent.
func lastResult(req *provider.Request) string {
	turn := req.Turns[len(req.Turns)-1]
	return turn.Artifacts[len(turn.Artifacts)-1].(artifact.ToolResult).Content
}

func reply(text string) []artifact.Artifact { return []artifact.Artifact{artifact.Text{Content: text}} }

func run(ctx context.Context, w io.Writer, dir string) error {
	store, err := file.Open(dir)
	if err != nil {
		return err
	}
	defer store.Close()

	// The summariser keeps the first sentence of the text it is given.
	summariser, err := agent.New("summarise", "Summarise a text in one sentence.",
		agent.WithSystemPrompt("Summarise the text in one sentence."),
		agent.WithStore(store),
		agent.WithProvider(script.Play(script.Func(func(req *provider.Request) ([]artifact.Artifact, error) {
			task := req.Turns[len(req.Turns)-1].Artifacts[0].(artifact.Text).Content
			_, text, _ := strings.Cut(task, ": ")
			first, _, _ := strings.Cut(text, ". ")
			return reply(strings.TrimSuffix(first, ".") + "."), nil
		}))))
	if err != nil {
		return err
	}

	// The researcher searches, then asks the summariser.
	researchTools := tool.NewRegistry()
	if err := tool.RegisterFunc(researchTools, "search", "Look a topic up in the corpus",
		func(_ context.Context, in searchIn) (string, error) {
			if doc, ok := corpus[in.Query]; ok {
				return doc, nil
			}
			return "", fmt.Errorf("nothing on %q; try one of: generics, iterators", in.Query)
		}, tool.WithHints(tool.Hints{ReadOnly: true})); err != nil {
		return err
	}
	if err := agent.Register(researchTools, summariser); err != nil {
		return err
	}
	researcher, err := agent.New("research", "Research a question and report what the sources say.",
		agent.WithRegistry(researchTools),
		agent.WithStore(store),
		agent.WithMaxTurns(5),
		agent.WithProvider(script.Play(
			script.Call("r1", "search", `{"query":"generics"}`),
			script.Func(func(req *provider.Request) ([]artifact.Artifact, error) {
				return []artifact.Artifact{artifact.ToolCall{ID: "r2", Name: "summarise",
					Arguments: fmt.Sprintf(`{"task":%q}`, "Summarise: "+lastResult(req))}}, nil
			}),
			script.Func(func(req *provider.Request) ([]artifact.Artifact, error) {
				return reply("The sources say: " + lastResult(req)), nil
			}),
		)))
	if err != nil {
		return err
	}

	top := tool.NewRegistry()
	if err := agent.Register(top, researcher); err != nil {
		return err
	}
	model := script.Play(
		script.Call("c1", "research", `{"task":"What did generics bring to Go?"}`),
		script.Func(func(req *provider.Request) ([]artifact.Artifact, error) {
			return reply("Report: " + lastResult(req)), nil
		}),
	)
	step := loop.New(
		loop.WithHandlers(xtool.NewHandler(top)),
		loop.WithInvokeOptions(xtool.WithFilteredTools(top, nil)),
	)
	thread, err := store.Create(ctx, ledger.WithID("question"))
	if err != nil {
		return err
	}
	defer thread.Close()
	if err := thread.Append(ledger.RoleUser, artifact.Text{Content: "What did generics bring to Go?"}); err != nil {
		return err
	}
	if _, err := step.Run(ctx, thread, model); err != nil {
		return err
	}
	fmt.Fprintln(w, "== question")
	printThread(w, thread, "")

	// Every child thread is in the store, linked to its parent thread and
	// call: walk the tree from the top.
	var infos []ledger.ThreadInfo
	for info, err := range store.List(ctx) {
		if err != nil {
			return err
		}
		infos = append(infos, info)
	}
	return printChildren(ctx, w, store, infos, "question", "  ")
}

func printChildren(ctx context.Context, w io.Writer, store ledger.Store, infos []ledger.ThreadInfo, parent, indent string) error {
	children := slices.DeleteFunc(slices.Clone(infos), func(i ledger.ThreadInfo) bool {
		return i.Metadata[agent.MetaParentThread] != parent
	})
	for _, info := range children {
		st, err := store.Load(ctx, info.ID)
		if err != nil {
			return err
		}
		fmt.Fprintf(w, "%s== %s (depth %s), started by call %s\n", indent,
			info.Metadata[agent.MetaAgent], info.Metadata[agent.MetaDepth], info.Metadata[agent.MetaParentCall])
		printThread(w, st, indent)
		st.Close()
		if err := printChildren(ctx, w, store, infos, info.ID, indent+"  "); err != nil {
			return err
		}
	}
	return nil
}

func printThread(w io.Writer, st ledger.State, indent string) {
	for _, t := range st.Turns() {
		for _, a := range t.Artifacts {
			switch a := a.(type) {
			case artifact.Text:
				fmt.Fprintf(w, "%s%s: %s\n", indent, t.Role, a.Content)
			case artifact.ToolCall:
				fmt.Fprintf(w, "%s%s: %s(%s)\n", indent, t.Role, a.Name, a.Arguments)
			case artifact.ToolResult:
				fmt.Fprintf(w, "%s%s: %s\n", indent, t.Role, a.Content)
			}
		}
	}
}
