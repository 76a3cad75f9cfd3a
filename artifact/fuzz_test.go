package artifact_test

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"

	"github.com/lodeworks/lode/artifact"
)

// FuzzUnmarshal feeds Unmarshal arbitrary bytes. It must never panic, and
// whatever it decodes must encode again and decode to the same value.
func FuzzUnmarshal(f *testing.F) {
	for _, s := range []string{
		`{"kind":"text","content":"héllo"}`,
		`{"content":"x","kind":"reasoning","signature":"s"}`,
		`{"kind":"reasoning","content":"x","field":"reasoning_content,reasoning_details","data":"[]"}`,
		`{"kind":"reasoning","field":"a","content_field":"b"}`,
		`{"kind":"tool_call","id":"c1","name":"add","arguments":"{\"a\":1,"}`,
		`{"kind":"tool_result","tool_call_id":"c1","content":"3","is_error":true,"parts":[{"kind":"image","data":"AAEC"}]}`,
		`{"kind":"usage","input_tokens":10,"output_tokens":5}`,
		`{"kind":"resource_link","uri":"file:///b","size":0}`,
		`{"kind":"image","data":""}`,
		`{"kind":"tool_result","parts":[]}`,
		`{"kind":"tool_call_delta","index":2,"arguments":"{"}`,
		`{"kind":"hologram","frames":[1,2,3]}`,
		`{"kind":"te\u0078t","content":"x"}`,
		`{"kind":`,
		`[1]`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		v1, err := artifact.Unmarshal(data)
		if err != nil {
			if v1 != nil {
				t.Fatalf("Unmarshal returned %#v with error %v", v1, err)
			}
			return
		}
		b1, err := artifact.Marshal(v1)
		if err != nil {
			t.Fatalf("decoded %#v from %q but cannot encode it: %v", v1, data, err)
		}
		v2, err := artifact.Unmarshal(b1)
		if err != nil {
			t.Fatalf("re-encoded %q does not decode: %v", b1, err)
		}
		if !reflect.DeepEqual(canon(v1), canon(v2)) {
			t.Fatalf("round trip changed the value:\n first %#v\nsecond %#v\n  via %q", v1, v2, b1)
		}
		b2, err := artifact.Marshal(v2)
		if err != nil || !bytes.Equal(b1, b2) {
			t.Fatalf("encoding is not stable: %q then %q (%v)", b1, b2, err)
		}
	})
}

// canon rewrites the raw bytes of Unknown artifacts the way encoding/json
// writes them when they are nested in a List (compact, with <, > and &
// escaped), which changes no value.
func canon(a artifact.Artifact) artifact.Artifact {
	switch a := a.(type) {
	case artifact.Unknown:
		var c, e bytes.Buffer
		if err := json.Compact(&c, a.Raw); err != nil {
			return a
		}
		json.HTMLEscape(&e, c.Bytes())
		return artifact.Unknown{Type: a.Type, Raw: e.Bytes()}
	case artifact.ToolResult:
		if a.Parts != nil {
			parts := make(artifact.List, len(a.Parts))
			for i, p := range a.Parts {
				parts[i] = canon(p)
			}
			a.Parts = parts
		}
		return a
	}
	return a
}
