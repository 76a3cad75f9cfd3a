package a2a

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/lodeworks/lode/tool"
)

// A response past the bound is refused, streamed or not, and the call is
// an error result; maxBody stands in for DefaultMaxResponse.
func TestResponseTooLarge(t *testing.T) {
	for _, streaming := range []bool{false, true} {
		t.Run(fmt.Sprint("streaming=", streaming), func(t *testing.T) {
			big := strings.Repeat("x", 4000)
			mux := http.NewServeMux()
			srv := httptest.NewServer(mux)
			t.Cleanup(srv.Close)
			mux.HandleFunc("/.well-known/agent-card.json", func(w http.ResponseWriter, r *http.Request) {
				fmt.Fprintf(w, `{"name":"Big","capabilities":{"streaming":%v},"skills":[{"id":"ask","name":"a","description":"d","tags":[]}],`+
					`"supportedInterfaces":[{"url":"%s/rpc","protocolBinding":"JSONRPC","protocolVersion":"1.0"}]}`, streaming, srv.URL)
			})
			mux.HandleFunc("/rpc", func(w http.ResponseWriter, r *http.Request) {
				msg := `{"message":{"messageId":"m","role":"ROLE_AGENT","parts":[{"text":"` + big + `"}]}}`
				if streaming {
					w.Header().Set("Content-Type", "text/event-stream")
					fmt.Fprintf(w, "data: {\"jsonrpc\":\"2.0\",\"id\":\"lode-1\",\"result\":%s}\n\n", msg)
					return
				}
				fmt.Fprintf(w, `{"jsonrpc":"2.0","id":"lode-1","result":%s}`, msg)
			})
			r, err := NewRemote(context.Background(), srv.URL)
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			r.transpt.maxBody = 1000
			v, err := r.Call(context.Background(), "ask", map[string]any{"task": "x"})
			if err != nil {
				t.Fatal(err)
			}
			res := v.(tool.Result)
			if !res.IsError || res.Content != fmt.Sprintf("The agent big sent more than %d bytes; its answer was refused. Ask it for a shorter answer.", 1000) {
				t.Fatalf("result %+v", res)
			}
		})
	}
}
