package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// withoutTaskTools wraps a client transport so that tools/list results
// leave out the tools a server will run only as MCP tasks (execution.
// taskSupport "required"). The go-sdk has no tasks and drops the field when
// it decodes a tool, so such a tool would be mounted, offered to models and
// served on by lode serve, and then fail on every call. Tools that merely
// allow tasks stay: they also answer a plain call.
//
// Streamable HTTP is filtered below the connection instead (see
// taskFilterRoundTripper): the go-sdk tells its HTTP connection of session
// changes through an unexported method that a wrapper would hide.
func withoutTaskTools(t sdk.Transport) sdk.Transport {
	if _, ok := t.(*sdk.StreamableClientTransport); ok {
		return t
	}
	return taskFilterTransport{t}
}

type taskFilterTransport struct{ sdk.Transport }

func (t taskFilterTransport) Connect(ctx context.Context) (sdk.Connection, error) {
	c, err := t.Transport.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return &taskFilterConn{Connection: c}, nil
}

// taskFilterConn remembers the ids of the tools/list requests it sends, so
// that only their answers are read for tools.
type taskFilterConn struct {
	sdk.Connection
	lists sync.Map // jsonrpc.ID -> struct{}
}

func (c *taskFilterConn) Write(ctx context.Context, msg jsonrpc.Message) error {
	r, ok := msg.(*jsonrpc.Request)
	list := ok && r.IsCall() && r.Method == "tools/list"
	if list {
		c.lists.Store(r.ID, struct{}{})
	}
	err := c.Connection.Write(ctx, msg)
	if err != nil && list {
		c.lists.Delete(r.ID)
	}
	return err
}

func (c *taskFilterConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	msg, err := c.Connection.Read(ctx)
	if r, ok := msg.(*jsonrpc.Response); ok && err == nil {
		if _, list := c.lists.LoadAndDelete(r.ID); list {
			r.Result = dropTaskTools(r.Result)
		}
	}
	return msg, err
}

// taskRequired is the part of a listed tool that says it needs tasks.
type taskRequired struct {
	Execution *struct {
		TaskSupport string `json:"taskSupport"`
	} `json:"execution"`
}

// dropTaskTools returns result without the tools that require tasks, or
// result itself when it lists none (or is no tool list at all).
func dropTaskTools(result json.RawMessage) json.RawMessage {
	if !bytes.Contains(result, []byte(`"taskSupport"`)) {
		return result
	}
	var list map[string]json.RawMessage
	if json.Unmarshal(result, &list) != nil {
		return result
	}
	var tools []json.RawMessage
	if json.Unmarshal(list["tools"], &tools) != nil || tools == nil {
		return result
	}
	kept := tools[:0:0]
	for _, raw := range tools {
		var t taskRequired
		if json.Unmarshal(raw, &t) == nil && t.Execution != nil && t.Execution.TaskSupport == "required" {
			continue
		}
		kept = append(kept, raw)
	}
	if len(kept) == len(tools) {
		return result
	}
	b, err := json.Marshal(kept)
	if err != nil {
		return result
	}
	list["tools"] = b
	out, err := json.Marshal(list)
	if err != nil {
		return result
	}
	return out
}
