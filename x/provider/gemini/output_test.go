package gemini

import (
	"context"
	"strings"
	"testing"

	"github.com/lodeworks/lode/artifact"
	"github.com/lodeworks/lode/ledger"
	"github.com/lodeworks/lode/loop"
	"github.com/lodeworks/lode/x/output"
)

// x/output's default mode sends the answer's schema as Gemini's response
// schema (this adapter supports JSON schemas), and the JSON answer decodes.
func TestTypedAnswer(t *testing.T) {
	type ticket struct {
		Team     string `json:"team"`
		Priority int    `json:"priority"`
	}
	f := newFake(t, reply{sse: true, body: sse(
		`{"candidates":[{"content":{"parts":[{"text":"{\"team\": \"billing\","}],"role":"model"}}]}`,
		`{"candidates":[{"content":{"parts":[{"text":" \"priority\": 2}"}],"role":"model"},"finishReason":"STOP"}]}`,
	)})
	p := newTestProvider(t, f)
	th := ledger.NewThread()
	_ = th.Append(ledger.RoleUser, artifact.Text{Content: "I was charged twice."})
	got, err := output.Run[ticket](context.Background(), loop.New(), th, p)
	if err != nil {
		t.Fatal(err)
	}
	if got != (ticket{Team: "billing", Priority: 2}) {
		t.Fatalf("answer %+v", got)
	}
	gc := mustJSON(t, f.last()["generationConfig"])
	if !strings.Contains(gc, `"responseMimeType":"application/json"`) || !strings.Contains(gc, `"responseJsonSchema":{`) || !strings.Contains(gc, `"priority"`) {
		t.Errorf("generationConfig %s", gc)
	}
	if f.last()["tools"] != nil {
		t.Errorf("a final-answer tool was offered: %v", f.last()["tools"])
	}
}
