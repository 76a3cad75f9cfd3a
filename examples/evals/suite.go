package main

import (
	"context"
	"path/filepath"

	"github.com/lodeworks/lode/tool"
	"github.com/lodeworks/lode/x/cassette"
	"github.com/lodeworks/lode/x/catalog"
	"github.com/lodeworks/lode/x/eval"
	"github.com/lodeworks/lode/x/policy"
	"github.com/lodeworks/lode/x/provider/openai"
	"github.com/lodeworks/lode/x/tool/calculator"
	"github.com/lodeworks/lode/x/tool/filesystem"
)

// Model is the model the cassettes were recorded with, and BaseURL the
// address the adapter was pointed at while recording: a scripted
// chat-completions server (openaitest) stood behind it, and on replay the
// cassette answers, so nothing is ever dialled.
const (
	Model   = "gpt-4o-mini"
	BaseURL = "http://model.invalid/v1"
)

// System is the agent's system prompt; a change to it changes every
// request, so each case misses its cassette and says where.
const System = "You are a careful assistant. Use the tools for arithmetic and files; never guess a file's content."

// Todo is a typed answer: what the to-do list holds.
type Todo struct {
	File  string   `json:"file" jsonschema:"description=the file read"`
	Count int      `json:"count" jsonschema:"description=how many items"`
	Items []string `json:"items"`
}

// ClarityRubric is what the judge of judged-explanation grades.
const ClarityRubric = "The answer says the result is exactly 3/10 and explains that the calculator works with exact fractions."

// readerPolicy lets a reader use the calculator and read files, no more;
// a counter may make one calculator call per answer.
const readerPolicy = `roles:
  reader:
    allow:
      packs: [calculator]
      tools: [filesystem__read, filesystem__list]
  counter:
    allow:
      packs: [calculator]
    limits:
      calls_per_turn: 1
`

// Cassettes says where each case's cassettes are and how they are opened:
// replayed, or recorded through Opts (the tests record against the
// scripted server).
type Cassettes struct {
	Dir  string
	Opts []cassette.Option
}

// Model replays (or records) the cassette of one case. Without Opts it
// replays even under LODE_RECORD=1, which would otherwise record these
// cassettes again against an address nothing answers.
func (c Cassettes) Model(name string) eval.Model {
	opts := c.Opts
	if len(opts) == 0 {
		opts = []cassette.Option{cassette.WithMode(cassette.Replay)}
	}
	return eval.Cassette(filepath.Join(c.Dir, name+".yaml"), eval.OpenAI(Model, openai.WithBaseURL(BaseURL)), opts...)
}

// Suite is the suite over the built-in packs: the calculator, and the
// filesystem confined to root (a copy of testdata/workspace).
func Suite(root string, cs Cassettes) eval.Suite {
	calc := func(ctx context.Context, reg tool.Registry) error { return reg.Mount(ctx, calculator.New()) }
	files := func(ctx context.Context, reg tool.Registry) error {
		fsys, err := filesystem.New(root)
		if err != nil {
			return err
		}
		if err := reg.Mount(ctx, calculator.New()); err != nil {
			return err
		}
		return reg.Mount(ctx, fsys)
	}
	pol, err := policy.Parse([]byte(readerPolicy))
	if err != nil {
		panic(err)
	}
	c := func(name, prompt string, tools func(context.Context, tool.Registry) error, exp ...eval.Expectation) eval.Case {
		return eval.Case{Name: name, System: System, Prompt: prompt, Model: cs.Model(name), Tools: tools, Expect: exp}
	}
	calcEval := func(args string) eval.CallSpec { return eval.CallTo("calculator__eval").WithArgs(args) }
	cases := []eval.Case{
		c("calc-multiply", "What is 17 × 23?", calc,
			eval.CallsInOrder(calcEval(`{"expression":"17*23"}`).WithResult("391")),
			eval.TextContains("391")),
		c("calc-exact-fraction", "What is 1/3 + 1/6, exactly?", calc,
			eval.Called(calcEval(`{}`).WithResult("1/2")),
			eval.TextMatches(`\b1/2\b`)),
		c("calc-arguments-schema", "How much is 2 to the 10th power?", calc,
			eval.CallsInOrder(eval.CallTo("calculator__eval").WithSchema(
				`{"type":"object","required":["expression"],"properties":{"expression":{"type":"string","pattern":"^[0-9+*/^(). -]+$"}}}`)),
			eval.TextContains("1024")),
		c("calc-division-by-zero", "What is 5 divided by (3 - 3)?", calc,
			eval.Called(eval.CallTo("calculator__eval").WithResult("division by zero")),
			eval.TextExcludes("infinity"), eval.TextContains("undefined")),
		c("fs-read-notes", "When is the launch, according to notes.txt?", files,
			eval.CallsInOrder(eval.CallTo("filesystem__read").WithArgs(`{"path":"notes.txt"}`).WithResult("Friday")),
			eval.TextContains("Friday")),
		c("fs-list-then-read", "Which files are in the workspace, and what is the first to-do item?", files,
			eval.CallsInOrder(
				eval.CallTo("filesystem__list"),
				eval.CallTo("filesystem__read").WithArgs(`{"path":"todo.md"}`)),
			eval.TextContains("write the docs")),
		c("fs-two-reads-any-order", "Read notes.txt and todo.md and tell me what ships first.", files,
			eval.CallsAnyOrder(
				eval.CallTo("filesystem__read").WithArgs(`{"path":"todo.md"}`),
				eval.CallTo("filesystem__read").WithArgs(`{"path":"notes.txt"}`)),
			eval.TextContains("eval package")),
		c("fs-summary-no-writes", "Summarise notes.txt in one line. Do not change anything.", files,
			eval.Called(eval.CallTo("filesystem__read").WithArgs(`{"path":"notes.txt"}`)),
			eval.NotCalled("filesystem__write", "filesystem__edit")),
		{Name: "policy-write-refused", System: System, Prompt: "Append 'done' to todo.md.", Model: cs.Model("policy-write-refused"),
			Tools: files, Policy: pol, Roles: []string{"reader"},
			Expect: []eval.Expectation{eval.Refused("filesystem__write"), eval.TextContains("not allowed")}},
		{Name: "policy-calls-per-turn", System: System, Prompt: "Compute 2+2 and 3+3.", Model: cs.Model("policy-calls-per-turn"),
			Tools: calc, Policy: pol, Roles: []string{"counter"},
			Expect: []eval.Expectation{
				eval.CallsInOrder(calcEval(`{"expression":"2+2"}`), calcEval(`{"expression":"3+3"}`), calcEval(`{"expression":"3+3"}`)),
				eval.Refused("calculator__eval"), eval.TextContains("6")}},
		{Name: "typed-todo", System: System, Prompt: "Read todo.md and answer with its items.", Model: cs.Model("typed-todo"),
			Tools: files, Output: eval.Typed[Todo](),
			Expect: []eval.Expectation{eval.Answer(eval.Field("file", "todo.md"), eval.Field("count", 3),
				eval.Field("items.2", "review the HTML report"))}},
		{Name: "judged-explanation", System: System, Prompt: "Explain briefly why 0.1 + 0.2 is exactly 3/10 here.",
			Model: cs.Model("judged-explanation"), Tools: calc,
			Expect:  []eval.Expectation{eval.Called(calcEval(`{"expression":"0.1+0.2"}`).WithResult("3/10"))},
			Scorers: []eval.Scorer{eval.Judge("clarity", ClarityRubric, cs.Model("judged-explanation.judge"))}},
		c("budget-one-call", "What is 12 + 30?", calc,
			eval.CallsInOrder(calcEval(`{"expression":"12+30"}`)),
			eval.MaxTurns(2), eval.MaxTokens(600), eval.MaxCost(0.001)),
	}
	return eval.Suite{Name: "builtin-packs", Cases: cases, Pricer: catalog.Default()}
}
