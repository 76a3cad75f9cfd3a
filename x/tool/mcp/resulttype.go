package mcp

import (
	"bytes"
	"encoding/json"

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

// complete marks a tools/call result the server built itself as complete
// when the session's revision requires it, as the go-sdk marks the results
// of the tools it runs. The SDK keeps the field unexported and sets it only
// on that path and when decoding, so the result is decoded again with the
// field added. A result that cannot be encoded is returned as it is: the
// transport then reports the failure.
func complete(req sdk.Request, res *sdk.CallToolResult) *sdk.CallToolResult {
	if res == nil || negotiated(req) < resultTypeRevision {
		return res
	}
	raw, err := json.Marshal(res)
	if err != nil || !bytes.HasPrefix(raw, []byte("{")) {
		return res
	}
	var probe struct {
		ResultType string `json:"resultType"`
	}
	if json.Unmarshal(raw, &probe) == nil && probe.ResultType != "" {
		return res
	}
	withType := []byte(`{"resultType":"complete"`)
	if rest := bytes.TrimSpace(raw[1:]); !bytes.Equal(rest, []byte("}")) {
		withType = append(withType, ',')
	}
	withType = append(withType, raw[1:]...)
	out := new(sdk.CallToolResult)
	if err := json.Unmarshal(withType, out); err != nil {
		return res
	}
	return out
}
