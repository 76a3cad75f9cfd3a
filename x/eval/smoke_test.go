package eval_test

import (
	"context"
	"os"
	"testing"

	"github.com/lodeworks/lode/tool"
	"github.com/lodeworks/lode/x/eval"
	"github.com/lodeworks/lode/x/provider/script"
	"github.com/lodeworks/lode/x/tool/calculator"
)

func TestSmoke(t *testing.T) {
	r := eval.RunSuite(t.Context(), &eval.Suite{Name: "smoke", Cases: []eval.Case{{
		Name: "calc", Prompt: "what is 2+3?",
		Model: eval.Scripted("", script.Call("c1", "calculator__eval", `{"expression":"2+3"}`), script.Text("It is 5. <script>alert(1)</script>")),
		Tools: func(ctx context.Context, reg tool.Registry) error { return reg.Mount(ctx, calculator.New()) },
		Expect: []eval.Expectation{eval.CallsInOrder(eval.CallTo("calculator__eval").WithArgs(`{"expression":"2+4"}`)), eval.TextContains("6")},
	}}})
	r.WriteTable(os.Stdout)
	r.WriteJSON(os.Stdout)
}
