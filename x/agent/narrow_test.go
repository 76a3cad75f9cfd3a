package agent_test

import (
	"context"
	"strings"
	"testing"

	"github.com/lodeworks/lode/artifact"
	"github.com/lodeworks/lode/ledger"
	"github.com/lodeworks/lode/provider"
	"github.com/lodeworks/lode/tool"
	"github.com/lodeworks/lode/x/agent"
	"github.com/lodeworks/lode/x/provider/script"
	xtool "github.com/lodeworks/lode/x/tool"
)

// registryOf registers tools that answer with their own name.
func registryOf(t *testing.T, names ...string) tool.Registry {
	t.Helper()
	reg := tool.NewRegistry()
	for _, n := range names {
		if err := reg.Register(tool.Tool{Name: n}, func(context.Context, tool.Sandbox, map[string]any) (any, error) {
			return "ran " + n, nil
		}); err != nil {
			t.Fatal(err)
		}
	}
	return reg
}

func denyDelete(_ context.Context, _ ledger.State, tools []tool.Tool) []tool.Tool {
	var out []tool.Tool
	for _, t := range tools {
		if t.Name != "delete_file" {
			out = append(out, t)
		}
	}
	return out
}

func toolNames(tools []tool.Tool) string {
	var n []string
	for _, t := range tools {
		n = append(n, t.Name)
	}
	return strings.Join(n, ",")
}

// A child never uses a tool its caller was denied, at any depth, unless
// the application mounts it WithWidening; its own tools come with it.
func TestChildNeverWidens(t *testing.T) {
	refused := `unknown tool "delete_file". Tools available in this turn: own_tool, read_file.`
	for _, tc := range []struct {
		name      string
		widening  bool
		wantTools string
		want      string
	}{
		{"narrowed", false, "own_tool,read_file", refused},
		{"widening", true, "delete_file,own_tool,read_file", "ran delete_file"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			child := script.Play(script.Call("d", "delete_file", `{}`), echoResult(""))
			opts := []agent.Option{agent.WithProvider(child), agent.WithRegistry(registryOf(t, "read_file", "delete_file", "own_tool"))}
			if tc.widening {
				opts = append(opts, agent.WithWidening())
			}
			parent := registryOf(t, "read_file", "delete_file")
			mustRegister(t, parent, mustNew(t, "helper", opts...))
			_, res := parentRun(t, context.Background(), parent, denyDelete, script.Play(
				script.Call("c", "helper", `{"task":"clean up"}`), echoResult("")), nil, "clean up")
			if got := toolNames(child.Requests()[0].Tools); got != tc.wantTools {
				t.Errorf("child offered %s, want %s", got, tc.wantTools)
			}
			if len(res) != 1 || res[0].Content != tc.want {
				t.Errorf("parent result %+v, want %q", res, tc.want)
			}
		})
	}
}

// A denial made at the top holds two levels down, through an agent whose
// registry does not hold the denied tool.
func TestDenialCarriesDown(t *testing.T) {
	grand := script.Play(script.Text("done"))
	g := mustNew(t, "grand", agent.WithProvider(grand), agent.WithRegistry(registryOf(t, "delete_file", "read_file")))
	midReg := tool.NewRegistry()
	mustRegister(t, midReg, g)
	mid := mustNew(t, "mid", agent.WithRegistry(midReg), agent.WithProvider(script.Play(
		script.Call("m", "grand", `{"task":"go on"}`), echoResult(""))))
	top := registryOf(t, "delete_file")
	mustRegister(t, top, mid)
	_, res := parentRun(t, context.Background(), top, denyDelete, script.Play(
		script.Call("c", "mid", `{"task":"go"}`), echoResult("")), nil, "go")
	if len(res) != 1 || res[0].Content != "done" {
		t.Fatalf("results %+v", res)
	}
	if got := toolNames(grand.Requests()[0].Tools); got != "read_file" {
		t.Errorf("grandchild offered %s, want read_file", got)
	}
}

// Outside a loop (an MCP server serving a registry), the caller's tools
// come from xtool.WithOffered: what they exclude is denied to the child,
// and the child's own tools still run.
func TestOfferedOutsideALoop(t *testing.T) {
	child := script.Play(
		script.Reply(artifact.ToolCall{ID: "1", Name: "own_tool", Arguments: `{}`}, artifact.ToolCall{ID: "2", Name: "delete_file", Arguments: `{}`}),
		script.Func(func(req *provider.Request) ([]artifact.Artifact, error) {
			turn := req.Turns[len(req.Turns)-1]
			var parts []string
			for _, a := range turn.Artifacts {
				parts = append(parts, a.(artifact.ToolResult).Content)
			}
			return []artifact.Artifact{artifact.Text{Content: strings.Join(parts, " | ")}}, nil
		}),
	)
	parent := registryOf(t, "read_file", "delete_file")
	mustRegister(t, parent, mustNew(t, "helper", agent.WithProvider(child),
		agent.WithRegistry(registryOf(t, "read_file", "delete_file", "own_tool"))))
	allowed := []tool.Tool{{Name: "helper"}, {Name: "read_file"}}
	ctx := xtool.WithOffered(context.Background(), allowed)
	res := xtool.NewHandler(parent).Execute(ctx, artifact.ToolCall{ID: "c", Name: "helper", Arguments: `{"task":"x"}`})
	want := `ran own_tool | unknown tool "delete_file". Tools available in this turn: own_tool, read_file.`
	if res.IsError || res.Content != want {
		t.Errorf("result %q\nwant %q", res.Content, want)
	}
	if got := toolNames(child.Requests()[0].Tools); got != "own_tool,read_file" {
		t.Errorf("child offered %s", got)
	}
}
