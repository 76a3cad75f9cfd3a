package anthropic

import (
	"testing"

	"github.com/lodeworks/lode/artifact"
	"github.com/lodeworks/lode/x/provider/internal/providertest"
)

// A server that sends the start of an answer and then holds the stream
// open: a cancelled context and a consumer that stops both end the
// invocation at once.
func TestStopMidStream(t *testing.T) {
	f := newFake(t)
	f.srv.Config.Handler = providertest.Holding(t, sse(msgStart(`{"input_tokens":1,"output_tokens":1}`), blockStart(0, `{"type":"text","text":""}`), blockDelta(0, textDelta("a"))).body)
	providertest.StopMidStream(t, f.provider(t), req(userTurn("x")), artifact.TextDelta{Content: "a"})
}
