package mcp

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"mime"
	"net/http"
	"strings"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// taskFilterRoundTripper does for streamable HTTP what taskFilterConn does
// for the other transports, one layer lower: it notes the ids of the
// tools/list requests it posts and rewrites their answers, whether they come
// back as one JSON body or inside an event stream (on the POST itself or on
// a GET that resumes it), so that tools requiring MCP tasks never reach the
// go-sdk's decoder.
type taskFilterRoundTripper struct {
	base  http.RoundTripper
	lists sync.Map // the id's JSON text -> struct{}
}

// withoutTaskToolsHTTP returns hc with its transport wrapped by a
// taskFilterRoundTripper; hc itself is left alone.
func withoutTaskToolsHTTP(hc *http.Client) *http.Client {
	cp := *hc
	base := cp.Transport
	if base == nil {
		base = http.DefaultTransport
	}
	cp.Transport = &taskFilterRoundTripper{base: base}
	return &cp
}

// maxListRequest bounds the request bodies read to find a tools/list call;
// the go-sdk's are a few hundred bytes, larger ones are other calls.
const maxListRequest = 64 << 10

func (t *taskFilterRoundTripper) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Method == http.MethodPost && r.GetBody != nil && r.ContentLength >= 0 && r.ContentLength <= maxListRequest {
		if id, ok := t.listID(r); ok {
			t.lists.Store(id, struct{}{})
		}
	}
	resp, err := t.base.RoundTrip(r)
	if err != nil || resp.Body == nil {
		return resp, err
	}
	ct, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	switch ct {
	case "application/json":
		body, err := io.ReadAll(resp.Body)
		_ = resp.Body.Close()
		if err != nil {
			return nil, err
		}
		body = t.rewrite(bytes.TrimSpace(body))
		resp.Body = io.NopCloser(bytes.NewReader(body))
		resp.ContentLength = int64(len(body))
		resp.Header.Del("Content-Length")
	case "text/event-stream":
		resp.Body = t.eventStream(resp.Body)
	}
	return resp, nil
}

// listID reads a copy of the request body and reports the id of the
// tools/list call it carries, if it carries one.
func (t *taskFilterRoundTripper) listID(r *http.Request) (string, bool) {
	body, err := r.GetBody()
	if err != nil {
		return "", false
	}
	defer body.Close()
	b, err := io.ReadAll(io.LimitReader(body, maxListRequest+1))
	if err != nil || !bytes.Contains(b, []byte(`"tools/list"`)) {
		return "", false
	}
	var call struct {
		Method string          `json:"method"`
		ID     json.RawMessage `json:"id"`
	}
	if json.Unmarshal(b, &call) != nil || call.Method != "tools/list" || len(call.ID) == 0 {
		return "", false
	}
	return idKey(call.ID), true
}

// idKey gives a JSON-RPC id one spelling whether it was read from a
// request or a response.
func idKey(raw json.RawMessage) string {
	var v any
	if json.Unmarshal(raw, &v) != nil {
		return string(raw)
	}
	if f, ok := v.(float64); ok {
		b, _ := json.Marshal(int64(f))
		return string(b)
	}
	b, _ := json.Marshal(v)
	return string(b)
}

// rewrite returns msg without task-required tools when it answers a noted
// tools/list call, and msg itself otherwise.
func (t *taskFilterRoundTripper) rewrite(msg []byte) []byte {
	if !bytes.Contains(msg, []byte(`"taskSupport"`)) {
		return msg
	}
	m, err := jsonrpc.DecodeMessage(msg)
	if err != nil {
		return msg
	}
	r, ok := m.(*jsonrpc.Response)
	if !ok || !r.ID.IsValid() {
		return msg
	}
	raw, err := json.Marshal(r.ID.Raw())
	if err != nil {
		return msg
	}
	if _, list := t.lists.LoadAndDelete(idKey(raw)); !list {
		return msg
	}
	r.Result = dropTaskTools(r.Result)
	out, err := jsonrpc.EncodeMessage(r)
	if err != nil {
		return msg
	}
	return out
}

// eventStream rewrites the data of each event as it arrives, so a long
// stream is never held back: an event is passed on at its blank line.
func (t *taskFilterRoundTripper) eventStream(body io.ReadCloser) io.ReadCloser {
	pr, pw := io.Pipe()
	go func() {
		sc := bufio.NewScanner(body)
		sc.Buffer(make([]byte, 0, 64<<10), 64<<20)
		var data []string
		var out bytes.Buffer
		for sc.Scan() {
			line := sc.Text()
			if v, ok := strings.CutPrefix(line, "data:"); ok {
				data = append(data, strings.TrimPrefix(v, " "))
				continue
			}
			if line == "" && data != nil {
				msg := t.rewrite([]byte(strings.Join(data, "\n")))
				data = nil
				for l := range strings.SplitSeq(string(msg), "\n") {
					out.WriteString("data: ")
					out.WriteString(l)
					out.WriteByte('\n')
				}
			}
			out.WriteString(line)
			out.WriteByte('\n')
			if line == "" {
				if _, err := pw.Write(out.Bytes()); err != nil {
					_ = body.Close()
					return
				}
				out.Reset()
			}
		}
		if data != nil {
			out.WriteString("data: " + string(t.rewrite([]byte(strings.Join(data, "\n")))) + "\n")
		}
		if out.Len() > 0 {
			_, _ = pw.Write(out.Bytes())
		}
		_ = body.Close()
		pw.CloseWithError(sc.Err())
	}()
	return &pipeBody{PipeReader: pr, src: body}
}

// pipeBody closes the network body as well as the pipe, so closing a
// response ends the goroutine copying it.
type pipeBody struct {
	*io.PipeReader
	src io.Closer
}

func (b *pipeBody) Close() error {
	err := b.src.Close()
	_ = b.PipeReader.Close()
	return err
}
