package cassette

import (
	"bytes"
	"net/http"
	"strings"

	vcr "gopkg.in/dnaeon/go-vcr.v4/pkg/cassette"
)

// scrub replaces every secret of an interaction with Redacted: the
// default and configured headers, both ways, and the configured JSON
// fields of the request body and the response body (each event of an
// event stream).
func (r *Recorder) scrub(i *vcr.Interaction) {
	names := append(append([]string(nil), DefaultScrubHeaders...), r.cfg.scrubHeaders...)
	i.Request.Headers = scrubHeaders(i.Request.Headers, names)
	i.Response.Headers = scrubHeaders(i.Response.Headers, names)
	i.Request.Trailer = scrubHeaders(i.Request.Trailer, names)
	i.Response.Trailer = scrubHeaders(i.Response.Trailer, names)
	if len(r.cfg.scrubFields) == 0 {
		return
	}
	if b, ok := scrubJSON([]byte(i.Request.Body), r.cfg.scrubFields); ok {
		i.Request.Body = string(b)
	}
	var b []byte
	var ok bool
	if isEventStream(i.Response.Headers) {
		b, ok = scrubEvents([]byte(i.Response.Body), r.cfg.scrubFields)
	} else {
		b, ok = scrubJSON([]byte(i.Response.Body), r.cfg.scrubFields)
	}
	if ok {
		i.Response.Body = string(b)
		if i.Response.ContentLength >= 0 {
			i.Response.ContentLength = int64(len(b))
		}
	}
}

func scrubHeaders(h http.Header, names []string) http.Header {
	if len(h) == 0 {
		return h
	}
	out := h.Clone()
	for k, vs := range out {
		for _, n := range names {
			if strings.EqualFold(k, n) {
				for j := range vs {
					vs[j] = Redacted
				}
				break
			}
		}
	}
	return out
}

// scrubJSON scrubs fields of a JSON body; ok is false, and the body left
// as it was, when it is not JSON or holds none of them.
func scrubJSON(body []byte, fields [][]string) ([]byte, bool) {
	trimmed := bytes.TrimSpace(body)
	if len(trimmed) == 0 || !(trimmed[0] == '{' || trimmed[0] == '[') {
		return body, false
	}
	v, err := decodeJSON(trimmed)
	if err != nil {
		return body, false
	}
	changed := false
	for _, f := range fields {
		if scrubPath(v, f) {
			changed = true
		}
	}
	if !changed {
		return body, false
	}
	return []byte(encodeJSON(v)), true
}

// scrubEvents scrubs the JSON of each "data:" line of an event stream.
func scrubEvents(body []byte, fields [][]string) ([]byte, bool) {
	lines := bytes.SplitAfter(body, []byte("\n"))
	changed := false
	for i, line := range lines {
		content := bytes.TrimRight(line, "\r\n")
		rest, ok := bytes.CutPrefix(content, []byte("data:"))
		if !ok {
			continue
		}
		b, ok := scrubJSON(bytes.TrimSpace(rest), fields)
		if !ok {
			continue
		}
		changed = true
		out := append([]byte("data: "), b...)
		lines[i] = append(out, line[len(content):]...)
	}
	if !changed {
		return body, false
	}
	return bytes.Join(lines, nil), true
}

// scrubPath replaces the value at path in v; an array along the way has
// the rest of the path applied to each element.
func scrubPath(v any, path []string) bool {
	switch x := v.(type) {
	case map[string]any:
		child, ok := x[path[0]]
		if !ok {
			return false
		}
		if len(path) == 1 {
			x[path[0]] = Redacted
			return true
		}
		return scrubPath(child, path[1:])
	case []any:
		changed := false
		for _, e := range x {
			if scrubPath(e, path) {
				changed = true
			}
		}
		return changed
	}
	return false
}
