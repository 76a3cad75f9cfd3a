package anthropic

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"testing"

	sdk "github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/packages/ssestream"

	"github.com/lodeworks/lode/artifact"
)

// decode reads an SSE body the way runStream does: the SDK's decoder and
// event types, this package's assembler.
func decode(body []byte, yield func(artifact.Artifact, error) bool) error {
	r, _ := http.NewRequest(http.MethodPost, "http://127.0.0.1/v1/messages", nil)
	resp := &http.Response{StatusCode: 200, Header: http.Header{"Content-Type": {"text/event-stream"}},
		Body: io.NopCloser(bytes.NewReader(body)), Request: r}
	stream := ssestream.NewStream[sdk.MessageStreamEventUnion](ssestream.NewDecoder(resp), nil)
	defer stream.Close()
	var a assembler
	err := a.read(stream, yield)
	var se *sdk.Error
	if errors.As(err, &se) {
		// As callError does for a stream that had begun.
		return (&Provider{}).callError(context.Background(), &callTransport{streaming: true, p: &Provider{}}, err)
	}
	return err
}

// opaqueCitationsCheck puts citations on a text block as a request would.
func opaqueCitationsCheck(data string) (*sdk.TextBlockParam, error) {
	var tb sdk.TextBlockParam
	return &tb, citeText(&tb, data)
}

func FuzzStream(f *testing.F) {
	for _, r := range []reply{
		textAnswer("hello"),
		sse(msgStart(`{"input_tokens":1,"output_tokens":1}`),
			blockStart(0, `{"type":"thinking","thinking":"","signature":""}`),
			blockDelta(0, `{"type":"thinking_delta","thinking":"x"}`),
			blockDelta(0, `{"type":"signature_delta","signature":"s"}`), blockStop(0),
			blockStart(1, `{"type":"redacted_thinking","data":"d"}`), blockStop(1),
			blockStart(2, `{"type":"tool_use","id":"t","name":"n","input":{}}`),
			blockDelta(2, `{"type":"input_json_delta","partial_json":"{\"a\""}`), blockStop(2),
			msgDelta("tool_use", `{"output_tokens":2}`), msgStop),
		sse(msgStart(`{"input_tokens":1,"output_tokens":1}`), `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`),
		searchStream(),
		execStream(containerObj),
	} {
		f.Add([]byte(r.body))
	}
	f.Add([]byte("event: message_start\ndata: {\n\n"))
	f.Add([]byte(": comment\n\ndata: {\"type\":\"message_stop\"}\n\n"))
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
			// What is kept to go back must go back: each kept block is a
			// JSON object, and citations an array after a text.
			for i, a := range got {
				o, ok := a.(artifact.Opaque)
				if !ok {
					continue
				}
				if o.Type == opaqueContainer {
					if _, _, ok := readContainer(o.Data); !ok || i != len(got)-2 && i != len(got)-3 {
						t.Fatalf("container %q kept at %d of %d", o.Data, i, len(got))
					}
				} else if o.Type == opaqueCitations {
					if _, err := opaqueCitationsCheck(o.Data); err != nil || i == 0 {
						t.Fatalf("citations %q kept: %v", o.Data, err)
					}
					if _, text := got[i-1].(artifact.Text); !text {
						t.Fatalf("citations kept after %#v", got[i-1])
					}
				} else if _, err := opaqueParam(o); err != nil {
					t.Fatalf("a block kept that cannot go back: %v", err)
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
