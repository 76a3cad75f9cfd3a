package responses

import (
	"testing"

	"github.com/lodeworks/lode/artifact"
	"github.com/lodeworks/lode/ledger"
	"github.com/lodeworks/lode/loop"
	"github.com/lodeworks/lode/x/output"
)

// TestTypedAnswer: x/output picks the response format for this adapter,
// which sends it as text.format json_schema, strict, and reads the answer
// from the message.
func TestTypedAnswer(t *testing.T) {
	type city struct {
		Name       string `json:"name"`
		Population int    `json:"population"`
	}
	f := newFake(t, sse(textAnswer(`{"name":"Pa`, `ris","population":2100000}`)...))
	th := ledger.NewThread()
	_ = th.Append(ledger.RoleUser, artifact.Text{Content: "The biggest city of France?"})
	got, err := output.Run[city](t.Context(), loop.New(), th, f.provider(t), output.WithName("city"))
	if err != nil {
		t.Fatal(err)
	}
	if got != (city{Name: "Paris", Population: 2100000}) {
		t.Errorf("answer = %#v", got)
	}
	format := f.requests()[0].Body["text"].(map[string]any)["format"].(map[string]any)
	if format["type"] != "json_schema" || format["name"] != "city" || format["strict"] != true || format["schema"] == nil {
		t.Errorf("text.format = %s", mustJSON(format))
	}
	if _, ok := f.requests()[0].Body["tools"]; ok {
		t.Error("a final-answer tool was offered")
	}
}
