package a2a_test

import (
	"context"
	"iter"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2aclient"
	"github.com/a2aproject/a2a-go/v2/a2asrv"

	"github.com/lodeworks/lode/tool"
	lodea2a "github.com/lodeworks/lode/x/a2a"
	"github.com/lodeworks/lode/x/tool/mcp"
)

// echoAgent answers a task with its own text, as a message.
type echoAgent struct{}

func (echoAgent) Execute(_ context.Context, ec *a2asrv.ExecutorContext) iter.Seq2[a2a.Event, error] {
	return func(yield func(a2a.Event, error) bool) {
		yield(a2a.NewMessage(a2a.MessageRoleAgent, a2a.NewTextPart(textOf(ec.Message))), nil)
	}
}

func (echoAgent) Cancel(_ context.Context, ec *a2asrv.ExecutorContext) iter.Seq2[a2a.Event, error] {
	return func(yield func(a2a.Event, error) bool) {
		yield(a2a.NewStatusUpdateEvent(ec, a2a.TaskStateCanceled, nil), nil)
	}
}

type echoArgs struct {
	Text string `json:"text"`
}

// BenchmarkCallRoundTrip is one call to a remote agent over loopback HTTP:
// lode's Remote calling an a2a-go v2 server (blocking, and streamed),
// beside the a2a-go client alone against the same server, and beside one
// MCP tool call of lode's client to lode's server.
func BenchmarkCallRoundTrip(b *testing.B) {
	ctx := context.Background()
	a2aServer := func(b *testing.B, streaming bool) string {
		mux := http.NewServeMux()
		srv := httptest.NewServer(mux)
		b.Cleanup(srv.Close)
		mux.Handle(a2asrv.WellKnownAgentCardPath, a2asrv.NewStaticAgentCardHandler(&a2a.AgentCard{
			Name:                "Echo",
			SupportedInterfaces: []*a2a.AgentInterface{a2a.NewAgentInterface(srv.URL+"/rpc", a2a.TransportProtocolJSONRPC)},
			Capabilities:        a2a.AgentCapabilities{Streaming: streaming},
			Skills:              []a2a.AgentSkill{{ID: "echo", Name: "Echo", Description: "Echoes text"}},
		}))
		mux.Handle("/rpc", a2asrv.NewJSONRPCHandler(a2asrv.NewHandler(echoAgent{})))
		return srv.URL
	}
	for _, streaming := range []bool{false, true} {
		name := map[bool]string{true: "a2a-lode-streamed", false: "a2a-lode"}[streaming]
		b.Run(name, func(b *testing.B) {
			r, err := lodea2a.NewRemote(ctx, a2aServer(b, streaming))
			if err != nil {
				b.Fatal(err)
			}
			defer r.Close()
			args := map[string]any{"task": "hello"}
			b.ReportAllocs()
			for b.Loop() {
				v, err := r.Call(ctx, "echo", args)
				if err != nil || v.(tool.Result).Content != "hello" {
					b.Fatal(v, err)
				}
			}
		})
	}
	b.Run("a2a-go-client", func(b *testing.B) {
		url := a2aServer(b, false)
		c, err := a2aclient.NewFromEndpoints(ctx, []*a2a.AgentInterface{a2a.NewAgentInterface(url+"/rpc", a2a.TransportProtocolJSONRPC)})
		if err != nil {
			b.Fatal(err)
		}
		b.ReportAllocs()
		for b.Loop() {
			res, err := c.SendMessage(ctx, &a2a.SendMessageRequest{Message: a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart("hello"))})
			if err != nil || textOf(res.(*a2a.Message)) != "hello" {
				b.Fatal(res, err)
			}
		}
	})
	b.Run("mcp-lode", func(b *testing.B) {
		reg := tool.NewRegistry()
		if err := tool.RegisterFunc(reg, "echo", "Echoes text", func(_ context.Context, in echoArgs) (string, error) { return in.Text, nil }); err != nil {
			b.Fatal(err)
		}
		srv, err := mcp.NewServer(reg)
		if err != nil {
			b.Fatal(err)
		}
		ts := httptest.NewServer(srv)
		b.Cleanup(ts.Close)
		c, err := mcp.NewClient(mcp.WithName("bench"), mcp.WithHTTP(ts.URL))
		if err != nil {
			b.Fatal(err)
		}
		defer c.Close()
		if err := c.Connect(ctx); err != nil {
			b.Fatal(err)
		}
		args := map[string]any{"text": "hello"}
		b.ReportAllocs()
		for b.Loop() {
			v, err := c.Call(ctx, "echo", args)
			if err != nil || v.(*tool.Result).Content != "hello" {
				b.Fatal(v, err)
			}
		}
	})
}
