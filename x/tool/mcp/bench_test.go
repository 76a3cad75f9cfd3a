package mcp_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/lodeworks/lode/tool"
	"github.com/lodeworks/lode/x/tool/mcp"
)

type echoArgs struct {
	Text string `json:"text"`
}

// BenchmarkToolCallHTTP is one tools/call round trip over loopback
// streamable HTTP: lode's client calling lode's server, against a go-sdk
// client calling a go-sdk server with the same tool.
func BenchmarkToolCallHTTP(b *testing.B) {
	args := map[string]any{"text": "hello"}
	serve := func(b *testing.B, h http.Handler) string {
		ts := httptest.NewServer(h)
		b.Cleanup(ts.Close)
		return ts.URL
	}

	b.Run("lode", func(b *testing.B) {
		reg := tool.NewRegistry()
		if err := tool.RegisterFunc(reg, "echo", "Echoes text", func(_ context.Context, in echoArgs) (string, error) { return in.Text, nil }); err != nil {
			b.Fatal(err)
		}
		srv, err := mcp.NewServer(reg)
		if err != nil {
			b.Fatal(err)
		}
		c, err := mcp.NewClient(mcp.WithName("bench"), mcp.WithHTTP(serve(b, srv)))
		if err != nil {
			b.Fatal(err)
		}
		defer c.Close()
		ctx := context.Background()
		if err := c.Connect(ctx); err != nil {
			b.Fatal(err)
		}
		b.ReportAllocs()
		for b.Loop() {
			v, err := c.Call(ctx, "echo", args)
			if err != nil || v.(*tool.Result).Content != "hello" {
				b.Fatal(v, err)
			}
		}
	})

	b.Run("go-sdk", func(b *testing.B) {
		s := sdk.NewServer(&sdk.Implementation{Name: "bench", Version: "1"}, nil)
		sdk.AddTool(s, &sdk.Tool{Name: "echo", Description: "Echoes text"}, func(_ context.Context, _ *sdk.CallToolRequest, in echoArgs) (*sdk.CallToolResult, any, error) {
			return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: in.Text}}}, nil, nil
		})
		url := serve(b, sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return s }, nil))
		ctx := context.Background()
		cs, err := sdk.NewClient(&sdk.Implementation{Name: "bench", Version: "1"}, nil).Connect(ctx, &sdk.StreamableClientTransport{Endpoint: url}, nil)
		if err != nil {
			b.Fatal(err)
		}
		defer cs.Close()
		b.ReportAllocs()
		for b.Loop() {
			res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "echo", Arguments: args})
			if err != nil || res.Content[0].(*sdk.TextContent).Text != "hello" {
				b.Fatal(res, err)
			}
		}
	})
}

// BenchmarkToolCallStdio is one tools/call round trip to lode's server
// over in-process pipes, as over stdin and stdout: through ServeIO's line
// framing, against the go-sdk's IOTransport under the same server.
func BenchmarkToolCallStdio(b *testing.B) {
	for _, name := range []string{"lode", "sdk-io"} {
		b.Run(name, func(b *testing.B) {
			reg := tool.NewRegistry()
			if err := tool.RegisterFunc(reg, "echo", "Echoes text", func(_ context.Context, in echoArgs) (string, error) { return in.Text, nil }); err != nil {
				b.Fatal(err)
			}
			srv, err := mcp.NewServer(reg)
			if err != nil {
				b.Fatal(err)
			}
			inR, inW := io.Pipe()
			outR, outW := io.Pipe()
			done := make(chan error, 1)
			go func() {
				if name == "lode" {
					done <- srv.ServeIO(context.Background(), inR, outW)
				} else {
					done <- srv.Run(context.Background(), &sdk.IOTransport{Reader: inR, Writer: outW})
				}
			}()
			c, err := sdk.NewClient(&sdk.Implementation{Name: "bench", Version: "1"}, nil).
				Connect(context.Background(), &sdk.IOTransport{Reader: outR, Writer: inW}, nil)
			if err != nil {
				b.Fatal(err)
			}
			params := &sdk.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "hello"}}
			b.ReportAllocs()
			for b.Loop() {
				if _, err := c.CallTool(context.Background(), params); err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			_ = c.Close()
			<-done
		})
	}
}
