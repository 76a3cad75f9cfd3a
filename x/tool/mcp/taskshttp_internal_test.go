package mcp

import (
	"bytes"
	"io"
	"net/http"
	"strings"
	"testing"
)

// roundTripFunc is a fake transport answering from a function.
type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// Only the answer to a tools/list call loses task-required tools, by its
// id, in JSON and in event streams (data split over lines, an event cut
// off at the end); every other body passes as it came.
func TestTaskFilterRoundTripper(t *testing.T) {
	const (
		listed = `{"tools":[{"name":"a"},{"name":"b","execution":{"taskSupport":"required"}}]}`
		kept   = `{"tools":[{"name":"a"}]}`
	)
	list := func(id string) string { return `{"jsonrpc":"2.0","id":` + id + `,"method":"tools/list","params":{}}` }
	reply := func(id, result string) string { return `{"jsonrpc":"2.0","id":` + id + `,"result":` + result + `}` }
	cases := []struct{ name, req, ctype, body, want string }{
		{"json", list("7"), "application/json", reply("7", listed), reply("7", kept)},
		{"json string id", list(`"x"`), "application/json; charset=utf-8", reply(`"x"`, listed), reply(`"x"`, kept)},
		{"other id", list("7"), "application/json", reply("8", listed), reply("8", listed)},
		{"not a list call", `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"a"}}`, "application/json", reply("7", listed), reply("7", listed)},
		{"sse", list("7"), "text/event-stream",
			"event: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\",\"params\":{\"data\":\"taskSupport\"}}\n\nid: 3\ndata: " + reply("7", listed) + "\n\n",
			"event: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\",\"params\":{\"data\":\"taskSupport\"}}\n\nid: 3\ndata: " + reply("7", kept) + "\n\n"},
		{"sse data over two lines", list("7"), "text/event-stream",
			"data: {\"jsonrpc\":\"2.0\",\"id\":7,\n" + "data: \"result\":" + listed + "}\n\n",
			"data: " + reply("7", kept) + "\n\n"},
		{"sse cut off", list("7"), "text/event-stream", "data: " + reply("7", listed) + "\n", "data: " + reply("7", kept) + "\n"},
		{"other type", list("7"), "text/plain", reply("7", listed), reply("7", listed)},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			rt := &taskFilterRoundTripper{base: roundTripFunc(func(r *http.Request) (*http.Response, error) {
				return &http.Response{StatusCode: 200, Header: http.Header{"Content-Type": {tc.ctype}}, Body: io.NopCloser(strings.NewReader(tc.body))}, nil
			})}
			req, err := http.NewRequest(http.MethodPost, "http://127.0.0.1/mcp", bytes.NewReader([]byte(tc.req)))
			if err != nil {
				t.Fatal(err)
			}
			resp, err := rt.RoundTrip(req)
			if err != nil {
				t.Fatal(err)
			}
			got, err := io.ReadAll(resp.Body)
			resp.Body.Close()
			if err != nil || string(got) != tc.want {
				t.Fatalf("got %q (%v)\nwant %q", got, err, tc.want)
			}
		})
	}
}
