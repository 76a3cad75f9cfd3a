package mcp_test

import (
	"context"
	"strings"
	"testing"

	"github.com/lodeworks/lode/artifact"
	"github.com/lodeworks/lode/tool"
	xtool "github.com/lodeworks/lode/x/tool"
	"github.com/lodeworks/lode/x/tool/mcp"
	"github.com/lodeworks/lode/x/tool/mcp/internal/fixture"
)

// The fixture's tools carry no annotations, so MCP's defaults make them
// destructive; WithTrusted and WithReadOnly put the application's word
// over that, in the hints a Handler's approvals read and in the
// annotations a Server passes on.
func TestVouchedTools(t *testing.T) {
	for _, tc := range []struct {
		name     string
		opts     []mcp.Option
		tool     string
		hints    tool.Hints
		annots   string
		approval bool
	}{
		{"spec defaults", nil, "test_simple_text", tool.Hints{Destructive: true, OpenWorld: true, Untrusted: true}, "", true},
		{"trusted", []mcp.Option{mcp.WithTrusted("test_simple_text")}, "test_simple_text",
			tool.Hints{OpenWorld: true, Untrusted: true}, `{"destructiveHint":false,"idempotentHint":false,"readOnlyHint":false}`, false},
		{"another tool than the trusted one", []mcp.Option{mcp.WithTrusted("test_simple_text")}, "test_error_handling",
			tool.Hints{Destructive: true, OpenWorld: true, Untrusted: true}, "", true},
		{"read-only server", []mcp.Option{mcp.WithReadOnly()}, "test_error_handling",
			tool.Hints{ReadOnly: true, OpenWorld: true, Untrusted: true}, `{"destructiveHint":false,"idempotentHint":false,"readOnlyHint":true}`, false},
		// Flow labels are lode's alone: MCP's annotations never carry them.
		{"labels for the server", []mcp.Option{mcp.WithLabels(mcp.Labels{TrustOutput: true, Private: true})}, "test_simple_text",
			tool.Hints{Destructive: true, OpenWorld: true, Private: true}, "", true},
		{"labels for a tool", []mcp.Option{mcp.WithLabels(mcp.Labels{Private: true}), mcp.WithLabels(mcp.Labels{SendsOut: true}, "test_simple_text")}, "test_simple_text",
			tool.Hints{Destructive: true, OpenWorld: true, Untrusted: true, SendsOut: true}, "", true},
		{"another tool than the labelled one", []mcp.Option{mcp.WithLabels(mcp.Labels{SendsOut: true}, "test_simple_text")}, "test_error_handling",
			tool.Hints{Destructive: true, OpenWorld: true, Untrusted: true}, "", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv, err := fixture.NewServer()
			if err != nil {
				t.Fatal(err)
			}
			c, err := mcp.NewClient(append([]mcp.Option{mcp.WithName("fx"), mcp.WithInProcess(srv)}, tc.opts...)...)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			reg := tool.NewRegistry(tool.WithMCPServer(c))
			if err := reg.Err(); err != nil {
				t.Fatal(err)
			}
			b, ok := reg.Lookup("fx__" + tc.tool)
			if !ok {
				t.Fatalf("fx__%s is not mounted", tc.tool)
			}
			if b.Tool.Hints != tc.hints || string(b.Tool.Annotations) != tc.annots {
				t.Errorf("hints %+v, annotations %s\nwant %+v, %s", b.Tool.Hints, b.Tool.Annotations, tc.hints, tc.annots)
			}
			asked := false
			h := xtool.NewHandler(reg, xtool.WithApprover(func(context.Context, tool.Tool, artifact.ToolCall) error {
				asked = true
				return xtool.ErrDenied
			}))
			h.Execute(context.Background(), artifact.ToolCall{ID: "1", Name: "fx__" + tc.tool, Arguments: `{}`})
			if asked != tc.approval {
				t.Errorf("the approver was asked: %v, want %v", asked, tc.approval)
			}
		})
	}
}

func TestWithLabelsRefusesAnEmptyName(t *testing.T) {
	_, err := mcp.NewClient(mcp.WithName("fx"), mcp.WithStdio("x"), mcp.WithLabels(mcp.Labels{}, "a", ""))
	if err == nil || !strings.Contains(err.Error(), "WithLabels: an empty tool name") {
		t.Fatalf("got %v", err)
	}
}

func TestWithTrustedRefusesAnEmptyName(t *testing.T) {
	_, err := mcp.NewClient(mcp.WithName("fx"), mcp.WithStdio("x"), mcp.WithTrusted("a", ""))
	if want := "mcp: invalid option: WithTrusted: an empty tool name"; err == nil || err.Error() != want {
		t.Fatalf("err %v, want %q", err, want)
	}
}
