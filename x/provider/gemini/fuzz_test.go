package gemini

import (
	"bytes"
	"errors"
	"testing"

	"github.com/lodeworks/lode/artifact"
)

// decode reads a stream body the way Invoke does.
func decode(body []byte, yield func(artifact.Artifact, error) bool) error {
	a := assembler{newID: callIDs(), maxEvent: 1 << 20}
	return a.readStream(bytes.NewReader(body), yield)
}

func FuzzStream(f *testing.F) {
	f.Add([]byte(sse(okText)))
	f.Add([]byte(sse(
		`{"candidates":[{"content":{"parts":[{"text":"t","thought":true,"thoughtSignature":"U0k="}]}}]}`,
		`{"candidates":[{"content":{"parts":[{"functionCall":{"name":"f","args":{"a":1}},"thoughtSignature":"QUJD"},{"functionCall":{"id":"x","name":"g"}},{"executableCode":{"code":"1"}}]},"finishReason":"STOP"}],"usageMetadata":{"promptTokenCount":1}}`,
	)))
	f.Add([]byte(sse(`{"promptFeedback":{"blockReason":"SAFETY"}}`)))
	f.Add([]byte(sse(`{"candidates":[{"finishReason":"MALFORMED_FUNCTION_CALL","finishMessage":"bad"}]}`)))
	f.Add([]byte(sse(`{"error":{"code":429,"message":"quota","status":"RESOURCE_EXHAUSTED"}}`)))
	f.Add([]byte(`[{"candidates":[{"content":{"parts":[{"text":"A"}]},"finishReason":1}]}]`))
	f.Add([]byte("data: {\"candidates\":[{\"content\":\ndata: {\"parts\":[]},\"finishReason\":\"STOP\"}]}\n\n"))
	f.Add([]byte(": ping\r\n\r\ndata: {\r\n\r\n"))
	f.Fuzz(func(t *testing.T, body []byte) {
		var got []artifact.Artifact
		err := decode(body, func(a artifact.Artifact, _ error) bool { got = append(got, a); return true })
		if err == nil {
			if len(got) == 0 {
				t.Fatal("a whole answer without a Finish")
			}
			if _, ok := got[len(got)-1].(artifact.Finish); !ok {
				t.Fatalf("a whole answer that does not end in Finish: %#v", got)
			}
			for _, a := range got {
				if c, ok := a.(artifact.ToolCall); ok && (c.ID == "" || c.Name == "") {
					t.Fatalf("a call without an ID or a name: %#v", c)
				}
			}
			return
		}
		var re *ResponseError
		var ae *APIError
		if !errors.As(err, &re) && !errors.As(err, &ae) {
			t.Fatalf("untyped error %T: %v", err, err)
		}
	})
}
