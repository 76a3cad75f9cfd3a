package eval_test

import (
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/lodeworks/lode/artifact"
	"github.com/lodeworks/lode/x/eval"
)

// outcome is a run that made three calls, the second refused, and
// answered with text and a typed answer.
func outcome() *eval.Outcome {
	return &eval.Outcome{
		Calls: []eval.Call{
			{ID: "c1", Name: "calculator__eval", Arguments: `{"expression":"2+3"}`, Result: "5"},
			{ID: "c2", Name: "filesystem__write", Arguments: `{"path":"a.txt","content":"x"}`, Result: "unknown tool", IsError: true, Refused: true, Rule: "reader allow"},
			{ID: "c3", Name: "filesystem__read", Arguments: `{"path":"notes.txt","limit":10}`, Result: "launch on Friday"},
		},
		Text:     "The sum is 5 and the launch is on Friday.",
		Answer:   []byte(`{"file":"notes.txt","count":3,"items":["a","b",{"sku":"X1"}],"ok":true}`),
		Turns:    3,
		Usage:    artifact.Usage{InputTokens: 900, OutputTokens: 100, CostUSD: 0.0125},
		Duration: 1500 * time.Millisecond,
	}
}

func TestExpectations(t *testing.T) {
	calc := eval.CallTo("calculator__eval")
	write := eval.CallTo("filesystem__write")
	read := eval.CallTo("filesystem__read")
	cases := []struct {
		name string
		exp  eval.Expectation
		want []string
	}{
		// Calls in order.
		{"in order: pass", eval.CallsInOrder(calc.WithArgs(`{"expression":"2+3"}`), write, read.WithArgs(`{"path":"notes.txt"}`)), nil},
		{"in order: wrong tool", eval.CallsInOrder(calc, read, write),
			[]string{`call 2 (filesystem__write): tool "filesystem__write", want "filesystem__read"`,
				`call 3 (filesystem__read): tool "filesystem__read", want "filesystem__write"`}},
		{"in order: wrong argument", eval.CallsInOrder(calc.WithArgs(`{"expression":"2+4"}`), write, read),
			[]string{`call 1 (calculator__eval): arguments at $.expression: "2+3", want "2+4"`}},
		{"in order: missing key", eval.CallsInOrder(calc, write, read.WithArgs(`{"offset":2}`)),
			[]string{`call 3 (filesystem__read): arguments at $.offset: missing, want 2`}},
		{"in order: number by value", eval.CallsInOrder(calc, write, read.WithArgs(`{"limit":10.0}`)), nil},
		{"in order: missing call", eval.CallsInOrder(calc, write, read, calc),
			[]string{`call 4 (calculator__eval): missing; 3 calls made`}},
		{"in order: extra call", eval.CallsInOrder(calc, write),
			[]string{`call 3 (filesystem__read): not expected`}},
		{"in order: none expected", eval.CallsInOrder(),
			[]string{`call 1 (calculator__eval): not expected`, `call 2 (filesystem__write): not expected`, `call 3 (filesystem__read): not expected`}},
		{"in order: result", eval.CallsInOrder(calc.WithResult("6"), write, read),
			[]string{`call 1 (calculator__eval): result "5" does not contain "6"`}},
		{"in order: schema pass", eval.CallsInOrder(calc.WithSchema(`{"type":"object","required":["expression"]}`), write, read), nil},
		{"in order: schema fails", eval.CallsInOrder(calc, write, read.WithSchema(`{"type":"object","properties":{"limit":{"maximum":5}}}`)),
			[]string{`call 3 (filesystem__read): arguments break the schema: validating root: validating /properties/limit: maximum: 10/1 is greater than 5.000000`}},
		{"bad pattern", eval.CallsInOrder(calc.WithArgs(`{"expression":`), write, read),
			[]string{`call 1 (calculator__eval): the expected arguments {"expression": are not JSON: unexpected EOF`}},
		{"bad schema", eval.CallsInOrder(calc.WithSchema(`{"type":3}`), write, read),
			[]string{`call 1 (calculator__eval): eval: schema: invalid value for "type": "3"`}},

		// Calls as a set.
		{"any order: pass", eval.CallsAnyOrder(read, calc, write), nil},
		{"any order: argument differs", eval.CallsAnyOrder(read.WithArgs(`{"path":"todo.md"}`), calc, write),
			[]string{`expected call 1 (filesystem__read): no call matches; closest call 3 (filesystem__read): arguments at $.path: "notes.txt", want "todo.md"`}},
		{"any order: missing and extra", eval.CallsAnyOrder(calc, write, eval.CallTo("filesystem__list")),
			[]string{`expected call 3 (filesystem__list): no call matches`, `call 3 (filesystem__read): not expected`}},
		{"any order: twice", eval.CallsAnyOrder(calc, calc, write, read),
			[]string{`expected call 2 (calculator__eval): no call matches`}},

		// At least one call.
		{"called: pass", eval.Called(read.WithArgs(`{"path":"notes.txt"}`)), nil},
		{"called: closest", eval.Called(calc.WithArgs(`{"expression":"1+1"}`)),
			[]string{`no call matches calculator__eval {"expression":"1+1"} among 3 calls; closest call 1 (calculator__eval): arguments at $.expression: "2+3", want "1+1"`}},

		// Calls that must not happen.
		{"not called: pass", eval.NotCalled("bash__*", "filesystem__edit"), nil},
		{"not called: glob", eval.NotCalled("filesystem__w*"),
			[]string{`call 2 (filesystem__write): must not happen (matches "filesystem__w*")`}},

		// Policy refusals.
		{"refused: pass", eval.Refused("filesystem__write"), nil},
		{"refused: ran", eval.Refused("filesystem__read"),
			[]string{`call 3 (filesystem__read): ran, want it refused by the policy`}},
		{"refused: never called", eval.Refused("bash__run"),
			[]string{`no call to "bash__run" was made, want one refused by the policy`}},
		{"allowed: refused call", eval.Allowed(),
			[]string{`call 2 (filesystem__write): refused by the policy (reader allow)`}},

		// Typed answer fields.
		{"answer: pass", eval.Answer(eval.Field("file", "notes.txt"), eval.Field("count", 3), eval.Field("items.2.sku", "X1"), eval.Field("ok", true)), nil},
		{"answer: wrong value", eval.Answer(eval.Field("count", 4)),
			[]string{`answer field count: 3, want 4`}},
		{"answer: wrong type", eval.Answer(eval.Field("count", "3")),
			[]string{`answer field count: 3, want "3"`}},
		{"answer: nested", eval.Answer(eval.Field("items", []any{"a", "b", map[string]any{"sku": "X2"}})),
			[]string{`answer field items[2].sku: "X1", want "X2"`}},
		{"answer: missing field", eval.Answer(eval.Field("owner", "me")),
			[]string{`answer field owner: no field "owner"`}},
		{"answer: no element", eval.Answer(eval.Field("items.5", "a")),
			[]string{`answer field items.5: no element 5 (3 elements)`}},
		{"answer: through a scalar", eval.Answer(eval.Field("file.name", "a")),
			[]string{`answer field file.name: "notes.txt" has no field "name"`}},

		// Text.
		{"text contains: pass", eval.TextContains("Friday"), nil},
		{"text contains: fail", eval.TextContains("Monday"),
			[]string{`text "The sum is 5 and the launch is on Friday." does not contain "Monday"`}},
		{"text excludes: fail", eval.TextExcludes("sum"),
			[]string{`text "The sum is 5 and the launch is on Friday." contains "sum"`}},
		{"text matches: pass", eval.TextMatches(`sum is \d+`), nil},
		{"text matches: fail", eval.TextMatches(`^Monday`),
			[]string{`text "The sum is 5 and the launch is on Friday." does not match /^Monday/`}},
		{"text matches: bad pattern", eval.TextMatches(`(`),
			[]string{"text pattern /(/ does not compile: error parsing regexp: missing closing ): `(`"}},

		// Budgets.
		{"turns: within", eval.MaxTurns(3), nil},
		{"turns: over", eval.MaxTurns(2), []string{`turns: 3, budget 2`}},
		{"tokens: over", eval.MaxTokens(999), []string{`tokens: 1000, budget 999`}},
		{"cost: over", eval.MaxCost(0.01), []string{`cost: $0.0125, budget $0.0100`}},
		{"time: over", eval.MaxTime(time.Second), []string{`time: 1.5s, budget 1s`}},
		{"time: within", eval.MaxTime(2 * time.Second), nil},

		// The run's error.
		{"fails: but succeeded", eval.Fails("limit"), []string{`the run succeeded, want it to fail with "limit"`}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := c.exp.Check(outcome())
			if !reflect.DeepEqual(got, c.want) {
				t.Errorf("%s:\n got %#v\nwant %#v", c.exp, got, c.want)
			}
		})
	}
}

func TestExpectationsOnAFailedRun(t *testing.T) {
	o := &eval.Outcome{Err: errors.New("loop: stopped at the turn limit (3 turns)")}
	cases := []struct {
		name string
		exp  eval.Expectation
		want []string
	}{
		{"fails: pass", eval.Fails("turn limit"), nil},
		{"fails: other error", eval.Fails("cost"), []string{`the run failed with "loop: stopped at the turn limit (3 turns)", want "cost"`}},
		{"answer: none", eval.Answer(eval.Field("a", 1)), []string{`no typed answer: loop: stopped at the turn limit (3 turns)`}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := c.exp.Check(o); !reflect.DeepEqual(got, c.want) {
				t.Errorf("got %#v\nwant %#v", got, c.want)
			}
		})
	}
	if got := eval.Answer(eval.Field("a", 1)).Check(&eval.Outcome{}); !reflect.DeepEqual(got, []string{"no typed answer (the case has no Output?)"}) {
		t.Errorf("no answer, no error: %#v", got)
	}
	if got := eval.Answer(eval.Field("a", 1)).Check(&eval.Outcome{Answer: []byte(`{"a":`)}); !reflect.DeepEqual(got, []string{"the typed answer is not JSON: unexpected EOF"}) {
		t.Errorf("broken answer: %#v", got)
	}
}

func TestExpectationNames(t *testing.T) {
	cases := []struct {
		exp  eval.Expectation
		want string
	}{
		{eval.CallsInOrder(eval.CallTo("a").WithArgs(`{"x":1}`), eval.CallTo("b").WithResult("ok")), `calls in order: a {"x":1}, b → "ok"`},
		{eval.CallsAnyOrder(eval.CallTo("a").WithSchema(`{}`)), `calls in any order: a (schema)`},
		{eval.Called(eval.CallTo("a")), `called: a`},
		{eval.NotCalled("a", "b*"), `not called: a, b*`},
		{eval.Refused("w"), `refused by policy: w`},
		{eval.Allowed(), `no call refused by policy`},
		{eval.Answer(eval.Field("n", 3)), `answer: n = 3`},
		{eval.TextContains("x"), `text contains "x"`},
		{eval.TextExcludes("x"), `text excludes "x"`},
		{eval.TextMatches("x+"), `text matches /x+/`},
		{eval.MaxTurns(2), `turns ≤ 2`},
		{eval.MaxTokens(100), `tokens ≤ 100`},
		{eval.MaxCost(0.5), `cost ≤ $0.5000`},
		{eval.MaxTime(time.Minute), `time ≤ 1m0s`},
		{eval.Fails("x"), `run fails with "x"`},
	}
	for _, c := range cases {
		if got := c.exp.String(); got != c.want {
			t.Errorf("String() = %q, want %q", got, c.want)
		}
	}
}
