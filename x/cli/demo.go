package cli

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/lodeworks/lode/artifact"
	"github.com/lodeworks/lode/ledger"
	"github.com/lodeworks/lode/loop"
	"github.com/lodeworks/lode/provider"
	"github.com/lodeworks/lode/x/provider/script"
	xtool "github.com/lodeworks/lode/x/tool"
	"github.com/lodeworks/lode/x/tool/pack"
)

const demoPrompt = "Work out 1/3 + 1/6 exactly, save the answer in notes/answer.txt, and tell me which tickets on the board are still open."

var demoBoard = map[string]string{
	"1.md": "---\nid: \"1\"\ntitle: Printer on fire\nstate: open\nstateType: started\nlabels: [urgent, hardware]\n---\nSmoke from tray 2.\n",
	"2.md": "---\nid: \"2\"\ntitle: Order more toner\nstate: todo\nstateType: unstarted\nlabels: [supplies]\n---\n",
	"3.md": "---\nid: \"3\"\ntitle: Replace the fax\nstate: done\nstateType: completed\nlabels: [hardware]\n---\nNobody noticed.\n",
}

// cmdDemo runs a complete agent offline: a scripted model, real tools (the
// calculator, a filesystem confined to a temporary root, the local board
// pack), the real loop and handler, and a trace of what ran.
func cmdDemo(ctx context.Context, e env, args []string) error {
	fs := flag.NewFlagSet("lode demo", flag.ContinueOnError)
	keep := fs.Bool("keep", false, "keep the temporary folder the demo works in")
	rest, err := parseFlags(fs, e, args)
	if err != nil {
		return err
	}
	if err := noArgs("lode demo", rest); err != nil {
		return err
	}
	dir, err := os.MkdirTemp("", "lode-demo-")
	if err != nil {
		return err
	}
	if !*keep {
		defer os.RemoveAll(dir)
	}
	root, board := filepath.Join(dir, "files"), filepath.Join(dir, "board")
	for _, d := range []string{root, board} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return err
		}
	}
	for name, body := range demoBoard {
		if err := os.WriteFile(filepath.Join(board, name), []byte(body), 0o644); err != nil {
			return err
		}
	}
	cfg := &Config{Tools: pack.ToolsMap{
		{Name: "calculator"},
		{Name: "filesystem", Options: map[string]any{"root": root}},
		{Name: "local", Options: map[string]any{"path": board}},
	}}
	tb, err := mountTools(ctx, cfg)
	if err != nil {
		return err
	}
	defer tb.Close()

	spans := &spanLog{}
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(spans))
	defer tp.Shutdown(context.Background())
	tracer := tp.Tracer("lode demo")

	step := loop.New(
		loop.WithTracer(tracer),
		loop.WithHandlers(xtool.NewHandler(tb.reg, xtool.WithTracer(tracer))),
		loop.WithInvokeOptions(
			xtool.WithFilteredTools(tb.reg, nil),
			provider.WithSystemPrompt("You are a careful assistant. Use tools; never guess."),
		),
		loop.WithMaxTurns(6),
	)
	thread := ledger.NewThread()
	_ = thread.Append(ledger.RoleUser, artifact.Text{Content: demoPrompt})

	fmt.Fprintf(e.stdout, "lode demo: a scripted model drives real tools — %d of them — in %s\n\n", len(tb.reg.Tools()), dir)
	start := time.Now()
	if _, err := step.Run(ctx, thread, demoModel()); err != nil {
		return err
	}
	elapsed := time.Since(start)
	printConversation(e.stdout, thread)
	printTrace(e.stdout, spans.ended(), thread, elapsed)
	saved, err := os.ReadFile(filepath.Join(root, "notes", "answer.txt"))
	if err != nil {
		return fmt.Errorf("the demo's file was not written: %w", err)
	}
	fmt.Fprintf(e.stdout, "\nnotes/answer.txt on disk: %q\n", string(saved))
	return nil
}

// demoModel is the scripted model: it reacts to what the tools returned,
// including a refusal, like a real model would.
func demoModel() *script.Provider {
	return script.Play(
		script.Reply(
			artifact.Reasoning{Content: "Three jobs: exact arithmetic, a file, the board. The first and last are independent; run them together."},
			artifact.Text{Content: "I'll compute the sum and look at the board at the same time."},
			artifact.ToolCall{ID: "call_1", Name: "calculator__eval", Arguments: `{"expression":"1/3 + 1/6"}`},
			artifact.ToolCall{ID: "call_2", Name: "local_query", Arguments: `{"filter":{"field":"stateType","op":"nin","value":["completed","canceled"]},"sort":[{"field":"id"}]}`},
			artifact.Usage{InputTokens: 412, OutputTokens: 61},
		),
		script.Func(func(req *provider.Request) ([]artifact.Artifact, error) {
			// The calculator answers "1/2 = 0.5": the exact form comes first.
			exact, _, _ := strings.Cut(lastResult(req, "calculator__eval"), " ")
			return []artifact.Artifact{
				artifact.Text{Content: "The sum is " + exact + ". Saving it — and checking whether there is an older note outside the workspace."},
				artifact.ToolCall{ID: "call_3", Name: "filesystem__write", Arguments: fmt.Sprintf(`{"path":"notes/answer.txt","content":"1/3 + 1/6 = %s\n"}`, exact)},
				artifact.ToolCall{ID: "call_4", Name: "filesystem__read", Arguments: `{"path":"../../etc/passwd"}`},
				artifact.Usage{InputTokens: 690, OutputTokens: 74},
			}, nil
		}),
		script.Func(func(req *provider.Request) ([]artifact.Artifact, error) {
			var board struct {
				Items []struct {
					ID    string `json:"id"`
					Title string `json:"title"`
					State string `json:"state"`
				} `json:"items"`
			}
			_ = json.Unmarshal([]byte(lastResult(req, "local_query")), &board)
			var open []string
			for _, it := range board.Items {
				open = append(open, fmt.Sprintf("#%s %s (%s)", it.ID, it.Title, it.State))
			}
			return []artifact.Artifact{
				artifact.Text{Content: fmt.Sprintf("1/3 + 1/6 = 1/2 exactly; it is saved in notes/answer.txt. (Reading outside the workspace was refused, as it should be.) Still open: %s.", strings.Join(open, "; "))},
				artifact.Usage{InputTokens: 845, OutputTokens: 52},
			}, nil
		}),
	)
}

// lastResult finds the newest result of the named tool in what the model
// was sent.
func lastResult(req *provider.Request, name string) string {
	for i := len(req.Turns) - 1; i >= 0; i-- {
		for _, a := range req.Turns[i].Artifacts {
			if r, ok := a.(artifact.ToolResult); ok && r.Name == name {
				return r.Content
			}
		}
	}
	return ""
}

func printConversation(w io.Writer, st ledger.State) {
	for _, t := range st.Turns() {
		for _, a := range t.Artifacts {
			switch a := a.(type) {
			case artifact.Text:
				fmt.Fprintf(w, "%-9s %s\n", t.Role+":", a.Content)
			case artifact.Reasoning:
				fmt.Fprintf(w, "%-9s (thinking) %s\n", t.Role+":", a.Content)
			case artifact.ToolCall:
				fmt.Fprintf(w, "%-9s → %s %s\n", "", a.Name, a.Arguments)
			case artifact.ToolResult:
				mark := "←"
				if a.IsError {
					mark = "✗"
				}
				fmt.Fprintf(w, "%-9s %s %s: %s\n", "", mark, a.Name, clip(a.Content, 160))
			}
		}
	}
}

func printTrace(w io.Writer, spans []sdktrace.ReadOnlySpan, st ledger.State, elapsed time.Duration) {
	returned := map[string]string{}
	for _, t := range st.Turns() {
		for _, a := range t.Artifacts {
			if r, ok := a.(artifact.ToolResult); ok {
				returned[r.ToolCallID] = r.Content
			}
		}
	}
	var tools []sdktrace.ReadOnlySpan
	turns := 0
	for _, s := range spans {
		switch {
		case strings.HasPrefix(s.Name(), "execute_tool "):
			tools = append(tools, s)
		case s.Name() == "lode.turn":
			turns++
		}
	}
	sort.Slice(tools, func(i, j int) bool {
		return attr(tools[i], "gen_ai.tool.call.id") < attr(tools[j], "gen_ai.tool.call.id")
	})
	fmt.Fprintf(w, "\ntrace: %s, %s, %s\n", plural(turns, "turn"), plural(len(tools), "tool call"), elapsed.Round(time.Microsecond))
	for _, s := range tools {
		outcome := "ok"
		if s.Status().Code == codes.Error {
			outcome = "error (" + attr(s, "error.type") + ")"
		}
		id := attr(s, "gen_ai.tool.call.id")
		fmt.Fprintf(w, "  %-7s %-18s %9s  %-22s %s\n", id, attr(s, "gen_ai.tool.name"),
			s.EndTime().Sub(s.StartTime()).Round(time.Microsecond), outcome, clip(returned[id], 60))
	}
}
