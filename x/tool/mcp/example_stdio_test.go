package mcp_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/lodeworks/lode/tool"
	"github.com/lodeworks/lode/x/tool/mcp"
)

// Serving over a pair of streams, as over stdin and stdout: a line that is
// not JSON gets a parse error and the session goes on, and the end of the
// input still lets every request read be answered.
func ExampleServer_ServeIO() {
	reg := tool.NewRegistry()
	if err := tool.RegisterFunc(reg, "add", "Adds two numbers", add); err != nil {
		fmt.Println(err)
		return
	}
	srv, err := mcp.NewServer(reg)
	if err != nil {
		fmt.Println(err)
		return
	}
	in := strings.NewReader(`hello
{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"example","version":"1"}}}
{"jsonrpc":"2.0","method":"notifications/initialized"}
{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"add","arguments":{"a":2,"b":40}}}
`)
	var out bytes.Buffer
	if err := srv.ServeIO(context.Background(), in, &out); err != nil {
		fmt.Println(err)
		return
	}
	for line := range strings.Lines(out.String()) {
		var r struct {
			ID     any `json:"id"`
			Result struct {
				ServerInfo struct{ Name string } `json:"serverInfo"`
				Content    []struct{ Text string }
			}
			Error *struct {
				Code    int
				Message string
			}
		}
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			fmt.Println(err)
			return
		}
		switch {
		case r.Error != nil:
			fmt.Printf("%v: error %d: %s\n", r.ID, r.Error.Code, r.Error.Message)
		case r.Result.ServerInfo.Name != "":
			fmt.Printf("%v: initialized by %s\n", r.ID, r.Result.ServerInfo.Name)
		default:
			fmt.Printf("%v: %s\n", r.ID, r.Result.Content[0].Text)
		}
	}
	// Output:
	// <nil>: error -32700: parse error: line 1 is not JSON: invalid character 'h' looking for beginning of value
	// 1: initialized by lode
	// 2: 42
}
