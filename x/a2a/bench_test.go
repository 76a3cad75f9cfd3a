package a2a_test

import (
	"context"
	"iter"
	"net/http/httptest"
	"testing"

	"github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/lodeworks/lode/artifact"
	"github.com/lodeworks/lode/ledger"
	"github.com/lodeworks/lode/ledger/file"
	"github.com/lodeworks/lode/provider"
	"github.com/lodeworks/lode/tool"
	"github.com/lodeworks/lode/x/tool/mcp"
)

// oneCall is a model that calls lookup once and then answers, on every
// thread: a fake as cheap as a model can be, so the figures are the
// door's.
type oneCall struct{}

func (oneCall) Invoke(_ context.Context, req *provider.Request) iter.Seq2[artifact.Artifact, error] {
	return func(yield func(artifact.Artifact, error) bool) {
		last := req.Turns[len(req.Turns)-1]
		if last.Role == ledger.RoleUser {
			yield(artifact.ToolCall{ID: "c1", Name: "lookup", Arguments: `{"id":7}`}, nil)
			return
		}
		yield(artifact.Text{Content: "Ticket 7: printer on fire."}, nil)
	}
}

// BenchmarkRoundTrip times one caller's request on loopback HTTP, from
// the client's send to its answer: over A2A, a message/send that runs a
// turn with one tool call (two model turns, the tool, the context's
// thread and the task recorded in a file store); over MCP, a tools/call
// of the same tool through lode's MCP door.
func BenchmarkRoundTrip(b *testing.B) {
	b.Run("a2a_message_send_one_tool_call", func(b *testing.B) { benchA2A(b, agentOpts{}) })
	b.Run("a2a_message_send_one_tool_call_no_fsync", func(b *testing.B) {
		benchA2A(b, agentOpts{file: []file.Option{file.WithSync(file.SyncPolicy{None: true})}})
	})
	b.Run("mcp_tools_call", func(b *testing.B) {
		reg := tool.NewRegistry()
		if err := reg.Register(tool.Tool{Name: "lookup", Description: "Look a ticket up."}, func(context.Context, tool.Sandbox, map[string]any) (any, error) {
			return "ticket 7: printer on fire", nil
		}); err != nil {
			b.Fatal(err)
		}
		srv, err := mcp.NewServer(reg)
		if err != nil {
			b.Fatal(err)
		}
		hs := httptest.NewServer(srv)
		defer hs.Close()
		c, err := mcp.NewClient(mcp.WithName("bench"), mcp.WithHTTP(hs.URL+"/mcp"))
		if err != nil {
			b.Fatal(err)
		}
		defer c.Close()
		if err := c.Connect(b.Context()); err != nil {
			b.Fatal(err)
		}
		b.ReportAllocs()
		b.ResetTimer()
		for b.Loop() {
			if _, err := c.Call(b.Context(), "lookup", map[string]any{"id": 7}); err != nil {
				b.Fatal(err)
			}
		}
	})
}

func benchA2A(b *testing.B, o agentOpts) {
	ag := startAgent(b, oneCall{}, o)
	c := connect(b, ag.url, "")
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		res, err := c.SendMessage(b.Context(), userText("what is ticket 7?"))
		if err != nil {
			b.Fatal(err)
		}
		if task := res.(*a2a.Task); task.Status.State != a2a.TaskStateCompleted {
			b.Fatalf("state %s", task.Status.State)
		}
	}
}
