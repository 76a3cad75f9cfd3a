// Command roles puts three roles — viewer, editor, admin — over lode's
// built-in calculator and filesystem packs with one policy file, and
// enforces it twice: in the agent loop and over MCP, with the same answers.
// Viewers read and calculate; editors also write; admins may do
// everything. A write is destructive, so a person approves it first
// whoever asks (the editor's approve rule says so for the policy's reader).
package main

import (
	"context"
	_ "embed"
	"fmt"
	"io"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"

	"github.com/lodeworks/lode/artifact"
	"github.com/lodeworks/lode/ledger"
	"github.com/lodeworks/lode/loop"
	"github.com/lodeworks/lode/tool"
	"github.com/lodeworks/lode/x/policy"
	"github.com/lodeworks/lode/x/provider/script"
	xtool "github.com/lodeworks/lode/x/tool"
	"github.com/lodeworks/lode/x/tool/calculator"
	"github.com/lodeworks/lode/x/tool/filesystem"
	"github.com/lodeworks/lode/x/tool/mcp"
	"github.com/lodeworks/lode/x/tool/pack"
)

// builtinPolicy is policy.yaml, built in so that the command runs from any
// folder (go run ./examples/roles from the repository's root, too).
//
//go:embed policy.yaml
var builtinPolicy []byte

// main follows the policy file named by its argument, else a copy of the
// built-in policy.yaml.
func main() {
	if err := runMain(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "roles:", err)
		os.Exit(1)
	}
}

func runMain(args []string) error {
	switch len(args) {
	case 0:
		dir, err := os.MkdirTemp("", "roles-policy")
		if err != nil {
			return err
		}
		defer os.RemoveAll(dir)
		path := filepath.Join(dir, "policy.yaml")
		if err := os.WriteFile(path, builtinPolicy, 0o644); err != nil {
			return err
		}
		return run(context.Background(), os.Stdout, path)
	case 1:
		return run(context.Background(), os.Stdout, args[0])
	}
	return fmt.Errorf("usage: roles [POLICY.yaml] (absent: the built-in policy.yaml)")
}

var roles = []string{"viewer", "editor", "admin"}

// The calls every caller tries, whatever it is offered.
var calls = []artifact.ToolCall{
	{ID: "1", Name: "filesystem__read", Arguments: `{"path":"notes.txt"}`},
	{ID: "2", Name: "filesystem__write", Arguments: `{"path":"notes.txt","content":"edited\n"}`},
	{ID: "3", Name: "calculator__eval", Arguments: `{"expression":"6*7"}`},
}

func run(ctx context.Context, w io.Writer, policyPath string) error {
	root, err := os.MkdirTemp("", "roles")
	if err != nil {
		return err
	}
	defer os.RemoveAll(root)

	reg, router, err := mountPacks(ctx, root)
	if err != nil {
		return err
	}
	// One file, followed for changes: an edit takes effect on the next
	// turn and the next MCP request.
	file, err := policy.Open(policyPath, policy.WithValidate(func(p *policy.Policy) error {
		return p.Check(policy.InventoryOf(reg, router))
	}))
	if err != nil {
		return err
	}
	enf := policy.NewEnforcer(reg, file, policy.WithOwners(router))
	approver := func(_ context.Context, t tool.Tool, _ artifact.ToolCall) error {
		fmt.Fprintf(w, "  (a person approves %s)\n", t.Name)
		return nil
	}
	handler := xtool.NewHandler(reg, append(enf.HandlerOptions(), xtool.WithApprover(approver))...)

	fmt.Fprintln(w, "== in the loop")
	for _, role := range roles {
		if err := os.WriteFile(filepath.Join(root, "notes.txt"), []byte("first draft\n"), 0o644); err != nil {
			return err
		}
		fmt.Fprintf(w, "%s:\n", role)
		step := loop.New(
			loop.WithHandlers(handler),
			loop.WithInvokeOptions(xtool.WithFilteredTools(reg, enf.Filter())),
		)
		st := ledger.NewThread(ledger.WithMetadata(map[string]string{policy.RolesKey: role}))
		_ = st.Append(ledger.RoleUser, artifact.Text{Content: "Read my notes, rewrite them, and work out 6*7."})
		// One call per answer, so that they run in this order.
		var steps []script.Step
		for _, c := range calls {
			steps = append(steps, script.Reply(c))
		}
		if _, err := step.Run(ctx, st, script.Play(append(steps, script.Text("Done."))...)); err != nil {
			return err
		}
		for _, turn := range st.Turns() {
			for _, a := range turn.Artifacts {
				if r, ok := a.(artifact.ToolResult); ok {
					fmt.Fprintf(w, "  %s -> %s\n", r.Name, brief(r))
				}
			}
		}
	}

	// The same registry, policy and handler served over MCP; each caller's
	// bearer token says its role.
	grants := map[string][]string{}
	for _, role := range roles {
		grants["token-"+role] = []string{role}
	}
	srv, err := mcp.NewServer(reg, mcp.WithHandler(handler), mcp.WithFilter(enf.Filter()),
		mcp.WithIdentify(policy.NewTokens(grants).Identify))
	if err != nil {
		return err
	}
	hs := httptest.NewServer(srv)
	defer hs.Close()
	fmt.Fprintln(w, "== over MCP")
	for _, role := range roles {
		if err := os.WriteFile(filepath.Join(root, "notes.txt"), []byte("first draft\n"), 0o644); err != nil {
			return err
		}
		c, err := mcp.NewClient(mcp.WithName("roles"), mcp.WithHTTP(hs.URL), mcp.WithHeader("Authorization", "Bearer token-"+role))
		if err != nil {
			return err
		}
		tools, err := c.Tools(ctx)
		if err != nil {
			_ = c.Close()
			return err
		}
		names := make([]string, len(tools))
		for i, t := range tools {
			names[i] = t.Name
		}
		fmt.Fprintf(w, "%s: tools/list %s\n", role, strings.Join(names, ", "))
		for _, call := range calls {
			var args map[string]any
			_ = jsonUnmarshal(call.Arguments, &args)
			out, err := c.Call(ctx, call.Name, args)
			if err != nil {
				_ = c.Close()
				return err
			}
			res := out.(*tool.Result)
			fmt.Fprintf(w, "  %s -> %s\n", call.Name, brief(artifact.ToolResult{Content: res.Content, IsError: res.IsError}))
		}
		_ = c.Close()
	}
	return nil
}

// mountPacks mounts the calculator and filesystem packs (over root) under
// their names, as lode.yaml's tools: map does.
func mountPacks(ctx context.Context, root string) (tool.Registry, *pack.Router, error) {
	fsOpts := map[string]any{"root": root, "tool_prefix": "filesystem__"}
	calcOpts := map[string]any{"tool_prefix": "calculator__"}
	fsPack, err := filesystem.FromOptions(fsOpts)
	if err != nil {
		return nil, nil, err
	}
	calc, err := calculator.FromOptions(calcOpts)
	if err != nil {
		return nil, nil, err
	}
	catalog, err := pack.NewCatalog(calc, fsPack)
	if err != nil {
		return nil, nil, err
	}
	reg := tool.NewRegistry()
	router, err := catalog.Mount(ctx, reg, pack.Settings{Tools: []pack.PackConfig{
		{Name: "calculator", Options: calcOpts}, {Name: "filesystem", Options: fsOpts},
	}})
	return reg, router, err
}

// brief is one line of a result.
func brief(r artifact.ToolResult) string {
	text, _, _ := strings.Cut(strings.TrimSpace(r.Content), "\n")
	if r.IsError {
		return "refused: " + text
	}
	return text
}
