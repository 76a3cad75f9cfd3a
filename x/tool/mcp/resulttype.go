package mcp

import (
	"encoding/json"
	"reflect"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// resultTypeRevision is the first MCP revision whose tools/call results
// must carry resultType ("complete", or "input_required" for a server that
// needs more input); clients of earlier revisions read a missing one as
// complete, and some of them reject a field they do not know.
const resultTypeRevision = "2026-07-28"

// negotiated returns the protocol revision req was sent under: the one its
// _meta names (2026-07-28 clients name it on every request and may skip the
// handshake), else the one its session negotiated. A session that made no
// handshake is taken to speak the newest revision, as the go-sdk takes it.
func negotiated(req sdk.Request) string {
	if p := req.GetParams(); p != nil {
		if v, ok := p.GetMeta()[sdk.MetaKeyProtocolVersion].(string); ok && v != "" {
			return v
		}
	}
	if ss, ok := req.GetSession().(*sdk.ServerSession); ok && ss != nil {
		if p := ss.InitializeParams(); p != nil && p.ProtocolVersion != "" {
			return p.ProtocolVersion
		}
	}
	if v := sdk.SupportedProtocolVersions(); len(v) > 0 {
		return v[0]
	}
	return ""
}

// completeTemplate is an empty result marked complete. The go-sdk keeps
// the mark in an unexported field that it sets only on results of tools it
// runs itself and when it decodes one, so it is decoded once here, and
// copied with the struct.
var completeTemplate = resultTemplate("complete")

// inputRequiredTemplate is completeTemplate for a result that asks the
// client for input before the call can go on.
var inputRequiredTemplate = resultTemplate("input_required")

func resultTemplate(kind string) sdk.CallToolResult {
	var r sdk.CallToolResult
	_ = json.Unmarshal([]byte(`{"resultType":"`+kind+`","content":[]}`), &r)
	return r
}

// inputRequired is the result that asks the client to answer q (an
// elicitation) and call again with the answer and state.
func inputRequired(q *sdk.ElicitParams, state string) *sdk.CallToolResult {
	out := inputRequiredTemplate
	out.InputRequests = sdk.InputRequestMap{approvalInput: q}
	out.RequestState = state
	return &out
}

// complete marks a tools/call result the server built itself as complete
// when the request's revision requires it, as the go-sdk marks the results
// of the tools it runs: a copy of completeTemplate given every exported
// field of res.
func complete(req sdk.Request, res *sdk.CallToolResult) *sdk.CallToolResult {
	if res == nil || negotiated(req) < resultTypeRevision {
		return res
	}
	if res.InputRequests != nil {
		return res
	}
	out := completeTemplate
	dst, src := reflect.ValueOf(&out).Elem(), reflect.ValueOf(res).Elem()
	for i := range dst.NumField() {
		if dst.Type().Field(i).IsExported() {
			dst.Field(i).Set(src.Field(i))
		}
	}
	return &out
}
