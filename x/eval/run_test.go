package eval_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lodeworks/lode/artifact"
	"github.com/lodeworks/lode/ledger"
	"github.com/lodeworks/lode/provider"
	"github.com/lodeworks/lode/tool"
	"github.com/lodeworks/lode/x/eval"
	"github.com/lodeworks/lode/x/output"
	"github.com/lodeworks/lode/x/policy"
	"github.com/lodeworks/lode/x/provider/anthropic"
	"github.com/lodeworks/lode/x/provider/script"
	"github.com/lodeworks/lode/x/tool/calculator"
)

// tick is a clock that moves one second each time it is read.
func tick() func() time.Time {
	var mu sync.Mutex
	t := time.Date(2026, 12, 2, 0, 0, 0, 0, time.UTC)
	return func() time.Time {
		mu.Lock()
		defer mu.Unlock()
		t = t.Add(time.Second)
		return t
	}
}

func calcTools(ctx context.Context, reg tool.Registry) error { return reg.Mount(ctx, calculator.New()) }

type price struct{}

func (price) Cost(model string, u artifact.Usage) (float64, bool) {
	return float64(u.InputTokens+u.OutputTokens) / 1e4, model == "m1"
}

type ticket struct {
	Priority string   `json:"priority"`
	Tags     []string `json:"tags"`
}

func TestRunSuite(t *testing.T) {
	t.Setenv(eval.EnvLive, "")
	pol, err := policy.Parse([]byte("roles:\n  viewer:\n    allow:\n      packs: [calculator]\n"))
	if err != nil {
		t.Fatal(err)
	}
	usage := artifact.Usage{InputTokens: 100, OutputTokens: 20}
	s := &eval.Suite{Name: "unit", Clock: tick(), Pricer: price{}, Cases: []eval.Case{
		{Name: "calc", Prompt: "2+3?", Tools: calcTools,
			Model: eval.Scripted("m1",
				script.Reply(artifact.ToolCall{ID: "c1", Name: "calculator__eval", Arguments: `{"expression":"2+3"}`}, usage),
				script.Reply(artifact.Text{Content: "It is 5."}, usage)),
			Expect: []eval.Expectation{eval.CallsInOrder(eval.CallTo("calculator__eval").WithResult("5")),
				eval.TextContains("5"), eval.MaxTokens(240), eval.MaxCost(0.024), eval.MaxTime(time.Second)}},
		{Name: "refused", Prompt: "write it", Tools: calcTools, Policy: pol, Roles: []string{"nobody"},
			Model:  eval.Scripted("", script.Call("c1", "calculator__eval", `{"expression":"1"}`), script.Text("I may not.")),
			Expect: []eval.Expectation{eval.Refused("calculator__eval"), eval.Allowed()}},
		{Name: "typed", Prompt: "classify", Output: eval.Typed[ticket](output.WithMode(output.ModeResponseFormat)),
			Model:  eval.Scripted("", script.Text(`{"priority":"high","tags":["billing"]}`)),
			Expect: []eval.Expectation{eval.Answer(eval.Field("priority", "low"), eval.Field("tags.0", "billing"))}},
		{Name: "broken model", Prompt: "hi", Model: eval.Scripted("", script.Fail(errors.New("boom")))},
		{Name: "expected failure", Prompt: "hi", Model: eval.Scripted("", script.Fail(errors.New("boom"))),
			Expect: []eval.Expectation{eval.Fails("boom")}},
		{Name: "no model", Prompt: "hi"},
		{Name: "bad tools", Prompt: "hi", Model: eval.Scripted(""),
			Tools: func(context.Context, tool.Registry) error { return errors.New("no root") }},
		{Name: "live", Prompt: "hi", Model: eval.Live(func(context.Context) (provider.Provider, error) {
			t.Error("a live model was opened without LODE_EVAL_LIVE=1")
			return nil, nil
		})},
		{Name: "thread", Thread: func() ledger.State {
			th := ledger.NewThread()
			_ = th.Append(ledger.RoleUser, artifact.Text{Content: "earlier"})
			_ = th.Append(ledger.RoleAssistant, artifact.Text{Content: "noted"})
			return th
		}, Prompt: "and now?", Model: eval.Scripted("", script.Text("now")),
			Expect: []eval.Expectation{eval.MaxTurns(1)}},
	}}
	r := eval.RunSuite(t.Context(), s)
	type row struct {
		Status   eval.Status
		Failures []string
		Skip     string
	}
	want := map[string]row{
		"calc":    {Status: eval.Passed},
		"refused": {eval.Failed, []string{"call 1 (calculator__eval): refused by the policy (no rule allows it)"}, ""},
		"typed":   {eval.Failed, []string{`answer field priority: "high", want "low"`}, ""},
		"broken model": {eval.Failed, []string{
			"run failed: loop: provider: boom"}, ""},
		"expected failure": {Status: eval.Passed},
		"no model":         {eval.Failed, []string{"run failed: eval: the case has no Model"}, ""},
		"bad tools":        {eval.Failed, []string{"run failed: eval: tools: no root"}, ""},
		"live":             {Status: eval.Skipped, Skip: "eval: case skipped: a live model runs only with LODE_EVAL_LIVE=1"},
		"thread":           {Status: eval.Passed},
	}
	for _, c := range r.Cases {
		got := row{c.Status, c.Failures, c.Skip}
		if w := want[c.Name]; !reflect.DeepEqual(got, w) {
			t.Errorf("%s: got %+v\nwant %+v", c.Name, got, w)
		}
	}
	calc := r.Cases[0]
	if calc.Model != "m1" || calc.Turns != 2 || calc.Tokens() != 240 || calc.CostUSD != 0.024 || calc.DurationMS != 1000 ||
		len(calc.Calls) != 1 || calc.Calls[0].Result != "5" || calc.Text != "It is 5." {
		t.Errorf("calc: %+v", calc)
	}
	if got := r.Cases[1].Calls; len(got) != 1 || !got[0].Refused || !got[0].IsError {
		t.Errorf("refused: calls %+v", got)
	}
	if got := string(r.Cases[2].Answer); got != `{"priority":"high","tags":["billing"]}` {
		t.Errorf("typed: answer %s", got)
	}
	if got := r.Cases[8].Transcript; len(got) != 4 || got[0].Text != "earlier" || got[3].Text != "now" {
		t.Errorf("thread: transcript %+v", got)
	}
}

func TestModelSources(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	oneAnswer := write("one.yaml", `version: 2
interactions:
  - request: {method: POST, url: "https://api.example/v1/chat/completions", body: "{}"}
    response:
      code: 200
      headers: {Content-Type: [application/json]}
      body: '{"id":"x","object":"chat.completion","model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"","tool_calls":[{"id":"c1","type":"function","function":{"name":"calculator__eval","arguments":"{\"expression\":\"1+1\"}"}}]},"finish_reason":"tool_calls"}]}'
`)
	twoAnswers := write("two.yaml", `version: 2
interactions:
  - response:
      code: 200
      headers: {Content-Type: [application/json]}
      body: '{"id":"x","object":"chat.completion","model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"2"},"finish_reason":"stop"}]}'
  - response: {code: 200, body: '{}'}
`)
	empty := write("empty.yaml", "version: 2\ninteractions: []\n")
	notYAML := write("bad.yaml", "interactions: [\n")
	connect := eval.OpenAI("m")
	cases := []struct {
		name  string
		model eval.Model
		want  string
	}{
		{"recorded: past the last answer", eval.Recorded(oneAnswer, eval.OpenAI("m", openaiNoStream())),
			"run failed: loop: provider: openai: cannot reach the server at https://api.openai.com/v1: Post \"https://api.openai.com/v1/chat/completions\": eval: recording " + oneAnswer + " holds 1 responses; request 2 has none"},
		{"recorded: a response left", eval.Recorded(twoAnswers, eval.OpenAI("m", openaiNoStream())),
			"run failed: eval: recording " + twoAnswers + " holds 2 responses; the run asked for 1"},
		{"recorded: no file", eval.Recorded(filepath.Join(dir, "none.yaml"), connect),
			"run failed: eval: recording: open " + filepath.Join(dir, "none.yaml") + ": no such file or directory"},
		{"recorded: no interaction", eval.Recorded(empty, connect),
			"run failed: eval: recording " + empty + " holds no interaction"},
		{"recorded: not YAML", eval.Recorded(notYAML, connect),
			"run failed: eval: recording " + notYAML + ": yaml: line 1: did not find expected node content"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := eval.RunSuite(t.Context(), &eval.Suite{Cases: []eval.Case{{Name: c.name, Prompt: "1+1?", Tools: calcTools, Model: c.model}}})
			got := strings.Join(r.Cases[0].Failures, "\n")
			if got != c.want {
				t.Errorf("failures:\n got %s\nwant %s", got, c.want)
			}
		})
	}
	// A cassette that is not there says so, naming the file.
	r := eval.RunSuite(t.Context(), &eval.Suite{Cases: []eval.Case{{Name: "c", Prompt: "hi",
		Model: eval.Cassette(filepath.Join(dir, "missing.yaml"), connect)}}})
	if got := r.Cases[0].Failures; len(got) != 1 || !strings.HasPrefix(got[0], "run failed: eval: cassette: ") ||
		!strings.Contains(got[0], filepath.Join(dir, "missing.yaml")) {
		t.Errorf("missing cassette: %q", got)
	}
}

func TestScorers(t *testing.T) {
	verdict := func(text string) eval.Model { return eval.Scripted("", script.Text(text)) }
	cases := []struct {
		name   string
		scorer eval.Scorer
		status eval.Status
		score  float64
		fails  []string
	}{
		{"func passes", eval.ScorerFunc(func(_ context.Context, o *eval.Outcome) (eval.Score, error) {
			return eval.Score{Name: "short", Value: 0.8, Pass: len(o.Text) < 20}, nil
		}), eval.Passed, 0.8, nil},
		{"func fails", eval.ScorerFunc(func(context.Context, *eval.Outcome) (eval.Score, error) {
			return eval.Score{Name: "tone", Value: 0.25, Reason: "too curt"}, nil
		}), eval.Failed, 0.25, []string{"tone: score 0.25, not a pass: too curt"}},
		{"func errs", eval.ScorerFunc(func(context.Context, *eval.Outcome) (eval.Score, error) {
			return eval.Score{}, errors.New("no network")
		}), eval.Failed, 0, []string{"scorer 1: no network"}},
		{"judge passes", eval.Judge("clarity", "Says hello.", verdict(`{"pass":true,"score":0.9,"reason":"It greets."}`)),
			eval.Passed, 0.9, nil},
		{"judge fails", eval.Judge("clarity", "Says goodbye.", verdict(`{"pass":false,"score":0.1,"reason":"No goodbye."}`)),
			eval.Failed, 0.1, []string{"clarity: score 0.10, not a pass: No goodbye."}},
		{"judge answers nonsense", eval.Judge("clarity", "Says hello.", eval.Scripted("",
			script.Text("yes"), script.Text("yes"), script.Text("yes"))),
			eval.Failed, 0, []string{"scorer 1: eval: judge clarity: output: no valid answer after 3 attempt(s): the answer is not valid JSON: invalid character 'y' looking for beginning of value; the last answer is in InvalidError.Last (WithMaxAttempts allows more tries)"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := eval.RunSuite(t.Context(), &eval.Suite{Cases: []eval.Case{{Name: "c", Prompt: "greet me",
				Model: eval.Scripted("", script.Text("Hello!")), Scorers: []eval.Scorer{c.scorer}}}})
			got := r.Cases[0]
			if got.Status != c.status || got.Score != c.score || !reflect.DeepEqual(got.Failures, c.fails) {
				t.Errorf("got %s %.2f %#v\nwant %s %.2f %#v", got.Status, got.Score, got.Failures, c.status, c.score, c.fails)
			}
		})
	}
}

// TestJudgeReadsTheConversation: the judge is sent the rubric and the
// transcript, and nothing of the case's system prompt.
func TestJudgeReadsTheConversation(t *testing.T) {
	judge := script.Play(script.Text(`{"pass":true,"score":1,"reason":"ok"}`))
	r := eval.RunSuite(t.Context(), &eval.Suite{Cases: []eval.Case{{Name: "c", System: "secret system prompt", Prompt: "2+3?", Tools: calcTools,
		Model: eval.Scripted("", script.Call("c1", "calculator__eval", `{"expression":"2+3"}`), script.Text("5")),
		Scorers: []eval.Scorer{eval.Judge("j", "Gives the sum.", eval.ModelFunc(func(context.Context) (provider.Provider, func() error, error) {
			return judge, nil, nil
		}))}}}})
	if r.Cases[0].Status != eval.Passed {
		t.Fatalf("%+v", r.Cases[0])
	}
	reqs := judge.Requests()
	if len(reqs) != 1 {
		t.Fatalf("%d judge requests", len(reqs))
	}
	var texts []string
	for _, turn := range reqs[0].Turns {
		for _, a := range turn.Artifacts {
			if x, ok := a.(artifact.Text); ok {
				texts = append(texts, x.Content)
			}
		}
	}
	got := strings.Join(texts, "\n---\n")
	want := "You grade the work of an AI assistant against a rubric. Read the conversation and the assistant's final answer, " +
		"then answer with a verdict: pass (true when the rubric is met), score (0 to 1) and a short reason.\n\nRubric:\nGives the sum." +
		"\n---\nConversation:\n[user text] 2+3?\n[assistant call] calculator__eval {\"expression\":\"2+3\"}\n[tool result] calculator__eval: 5\n[assistant text] 5\n\nFinal answer:\n5"
	if got != want {
		t.Errorf("judge was sent:\n%s\nwant:\n%s", got, want)
	}
}

func ExampleRunSuite() {
	s := &eval.Suite{Name: "calculator", Cases: []eval.Case{{
		Name:   "adds",
		Prompt: "What is 2 + 3?",
		Tools:  func(ctx context.Context, reg tool.Registry) error { return reg.Mount(ctx, calculator.New()) },
		Model: eval.Scripted("",
			script.Call("c1", "calculator__eval", `{"expression":"2 + 3"}`),
			script.Text("2 + 3 = 5.")),
		Expect: []eval.Expectation{
			eval.CallsInOrder(eval.CallTo("calculator__eval").WithArgs(`{"expression":"2 + 3"}`).WithResult("5")),
			eval.TextContains("= 5"),
			eval.MaxTurns(2),
		},
	}, {
		Name:   "never writes",
		Prompt: "What is 2 + 3?",
		Tools:  func(ctx context.Context, reg tool.Registry) error { return reg.Mount(ctx, calculator.New()) },
		Model:  eval.Scripted("", script.Call("c1", "calculator__eval", `{"expression":"2 + 4"}`), script.Text("6")),
		Expect: []eval.Expectation{eval.CallsInOrder(eval.CallTo("calculator__eval").WithArgs(`{"expression":"2 + 3"}`))},
	}}}
	r := eval.RunSuite(context.Background(), s)
	for _, c := range r.Cases {
		fmt.Println(c.Name, c.Status, c.Failures)
	}
	// Output:
	// adds pass []
	// never writes fail [call 1 (calculator__eval): arguments at $.expression: "2 + 4", want "2 + 3"]
}

// TestAnthropicConnect runs a case on a recorded Messages API answer
// through eval.Anthropic: no key, no environment, the answer as recorded.
func TestAnthropicConnect(t *testing.T) {
	path := filepath.Join(t.TempDir(), "claude.yaml")
	if err := os.WriteFile(path, []byte(`version: 2
interactions:
  - response:
      code: 200
      headers: {Content-Type: [application/json], Date: ["Fri, 23 May 2025 20:13:31 GMT"]}
      body: '{"id":"msg_1","type":"message","role":"assistant","model":"claude-sonnet-4-5","content":[{"type":"text","text":"2"}],"stop_reason":"end_turn","stop_sequence":null,"usage":{"input_tokens":12,"output_tokens":1}}'
`), 0o644); err != nil {
		t.Fatal(err)
	}
	connect := eval.Anthropic("claude-sonnet-4-5", anthropic.WithStreaming(false))
	r := eval.RunSuite(t.Context(), &eval.Suite{Cases: []eval.Case{{Name: "c", Prompt: "1+1?", Model: eval.Recorded(path, connect),
		Expect: []eval.Expectation{eval.TextContains("2")}}}})
	if c := r.Cases[0]; c.Status != eval.Passed || c.Text != "2" || c.Tokens() != 13 {
		t.Errorf("case %+v", c)
	}
}
