package eval_test

import (
	"context"
	"os"

	"github.com/lodeworks/lode/x/eval"
	"github.com/lodeworks/lode/x/provider/script"
)

// Two versions of an agent (here two scripts; in a real suite, two
// prompts or two models' cassettes) on the same case: Diff says what got
// worse, Compare shows them side by side.
func ExampleCompare() {
	suite := func(answer string) *eval.Report {
		return eval.RunSuite(context.Background(), &eval.Suite{Name: "greeting", Cases: []eval.Case{{
			Name: "greets", Prompt: "Say hello.", Model: eval.Scripted("", script.Text(answer)),
			Expect: []eval.Expectation{eval.TextContains("Hello")},
		}}})
	}
	before, after := suite("Hello!"), suite("Hi.")
	_ = eval.WriteDiff(os.Stdout, eval.Diff(before, after))
	_ = eval.Compare(os.Stdout, eval.Labelled{Label: "v1", Report: before}, eval.Labelled{Label: "v2", Report: after})
	// Output:
	// CASE    BEFORE     AFTER      CHANGE  WHY
	// greets  pass 1.00  fail 0.00  worse   pass → fail
	// 0 better, 1 worse, 1 case
	// CASE    v1                 v2
	// greets  pass 1.00 1t 0tok  fail 0.00 1t 0tok
	// passed  1/1                0/1
}
