package mcp_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"

	"github.com/lodeworks/lode/tool"
	"github.com/lodeworks/lode/x/tool/mcp"
)

// taskServer is a hand-fed streamable HTTP MCP server whose tools/list
// offers one plain tool, one that allows tasks and one that requires them;
// it answers in plain JSON or in an event stream, as sse says.
func taskServer(t *testing.T, sse bool) string {
	t.Helper()
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			w.Header().Set("Allow", "POST")
			w.WriteHeader(http.StatusMethodNotAllowed)
			return
		}
		var msg struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
		}
		if err := json.NewDecoder(r.Body).Decode(&msg); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		if msg.ID == nil {
			w.WriteHeader(http.StatusAccepted)
			return
		}
		var result string
		switch msg.Method {
		case "initialize":
			w.Header().Set("Mcp-Session-Id", "s1")
			result = `{"protocolVersion":"2025-06-18","capabilities":{"tools":{}},"serverInfo":{"name":"tasks","version":"1"}}`
		case "tools/list":
			result = `{"tools":[` +
				`{"name":"plain","inputSchema":{"type":"object"}},` +
				`{"name":"maybe_task","inputSchema":{"type":"object"},"execution":{"taskSupport":"optional"}},` +
				`{"name":"needs_task","inputSchema":{"type":"object"},"execution":{"taskSupport":"required"}}]}`
		case "tools/call":
			result = `{"content":[{"type":"text","text":"ok"}]}`
		default:
			result = `{}`
		}
		reply := fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"result":%s}`, msg.ID, result)
		if sse {
			w.Header().Set("Content-Type", "text/event-stream")
			// A notification first, as a server reporting progress would.
			fmt.Fprintf(w, "event: message\ndata: %s\n\n", `{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"listing"}}`)
			fmt.Fprintf(w, "event: message\nid: 1\ndata: %s\n\n", reply)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, reply)
	})
	ts := httptest.NewServer(h)
	t.Cleanup(ts.Close)
	return ts.URL
}

// Over streamable HTTP, a tool that requires MCP tasks is not mounted, not
// offered and not re-served, whether the server answers in JSON or in an
// event stream; tools that merely allow tasks stay.
func TestHTTPTaskRequiredToolsLeftOut(t *testing.T) {
	for _, mode := range []string{"json", "sse"} {
		t.Run(mode, func(t *testing.T) {
			c, err := mcp.NewClient(mcp.WithName("up"), mcp.WithHTTP(taskServer(t, mode == "sse")))
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			ctx := context.Background()
			listed, err := c.Tools(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if got, want := toolNames(listed), []string{"maybe_task", "plain"}; !slices.Equal(got, want) {
				t.Fatalf("client tools = %v, want %v", got, want)
			}
			mounted := tool.NewRegistry(tool.WithMCPServer(c))
			if err := mounted.Err(); err != nil {
				t.Fatal(err)
			}
			if got, want := toolNames(mounted.Tools()), []string{"up__maybe_task", "up__plain"}; !slices.Equal(got, want) {
				t.Fatalf("mounted = %v, want %v", got, want)
			}
			srv, err := mcp.NewServer(mounted)
			if err != nil {
				t.Fatal(err)
			}
			down, err := mcp.NewClient(mcp.WithName("down"), mcp.WithInProcess(srv))
			if err != nil {
				t.Fatal(err)
			}
			defer down.Close()
			reserved, err := down.Tools(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if got, want := toolNames(reserved), []string{"up__maybe_task", "up__plain"}; !slices.Equal(got, want) {
				t.Fatalf("re-served = %v, want %v", got, want)
			}
			if got := callText(t, c, "plain", nil); got != "ok" {
				t.Fatalf("plain = %q", got)
			}
		})
	}
}

func toolNames(ts []tool.Tool) []string {
	var out []string
	for _, tl := range ts {
		out = append(out, tl.Name)
	}
	slices.Sort(out)
	return out
}
