package agent_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/lodeworks/lode/artifact"
	"github.com/lodeworks/lode/ledger"
	"github.com/lodeworks/lode/tool"
	"github.com/lodeworks/lode/x/agent"
	"github.com/lodeworks/lode/x/output"
	"github.com/lodeworks/lode/x/provider/script"
	xtool "github.com/lodeworks/lode/x/tool"
)

type brief struct {
	Title  string `json:"title"`
	Points int    `json:"points"`
}

type topicIn struct {
	Topic string `json:"topic"`
	Words int    `json:"words"`
}

// A typed input is checked against its schema and turned into the child's
// task; a typed answer comes back as JSON, and as a T in the Outcome.
func TestTypedInputAndAnswer(t *testing.T) {
	ans, err := output.New[brief](output.WithMode(output.ModeTool), output.WithMaxAttempts(2))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name    string
		steps   []script.Step
		want    string
		isError bool
		output  any
	}{{
		name:   "valid",
		steps:  []script.Step{script.Call("f", output.DefaultToolName, `{"title":"Go","points":3}`)},
		want:   `{"title":"Go","points":3}`,
		output: brief{Title: "Go", Points: 3},
	}, {
		name: "invalid twice",
		steps: []script.Step{
			script.Call("f", output.DefaultToolName, `{"title":"Go"}`),
			script.Call("g", output.DefaultToolName, `{"title":"Go","points":"three"}`),
		},
		want:    `the agent brief gave no valid answer in 2 attempt(s): the answer does not match the schema: validating root: validating /properties/points: type: three has type "string", want "integer". Give it a clearer task, or do this part yourself.`,
		isError: true,
	}} {
		t.Run(tc.name, func(t *testing.T) {
			prov := script.Play(tc.steps...)
			a := mustNew(t, "brief", agent.WithProvider(prov), agent.WithOutput(ans),
				agent.WithInput(func(in topicIn) (string, error) {
					return fmt.Sprintf("Brief on %s in %d words.", in.Topic, in.Words), nil
				}))
			parent := tool.NewRegistry()
			mustRegister(t, parent, a)
			res := xtool.NewHandler(parent).Execute(context.Background(),
				artifact.ToolCall{ID: "c", Name: "brief", Arguments: `{"topic":"go","words":50}`})
			if res.IsError != tc.isError || res.Content != tc.want {
				t.Errorf("result IsError=%v %q\nwant %q", res.IsError, res.Content, tc.want)
			}
			o, _ := agent.OutcomeOf(res)
			if o == nil || o.Output != tc.output || (o.Err != nil) != tc.isError {
				t.Fatalf("outcome %+v", o)
			}
			if tc.isError && !errors.Is(o.Err, output.ErrInvalid) {
				t.Errorf("outcome error %v", o.Err)
			}
			user := o.State.Turns()[0]
			if user.Role != ledger.RoleUser || user.Artifacts[0].(artifact.Text).Content != "Brief on go in 50 words." {
				t.Errorf("child task %+v", user)
			}
		})
	}
}

func TestTypedInputRefusals(t *testing.T) {
	refuse := errors.New("topic too broad")
	for _, tc := range []struct {
		name, args, want string
		prompt           func(topicIn) (string, error)
	}{
		{"prompt error", `{"topic":"all","words":1}`, "the agent w was not started: topic too broad",
			func(topicIn) (string, error) { return "", refuse }},
		{"schema", `{"topic":"go"}`, `invalid arguments for w: arguments do not match the schema: validating root: required: missing properties: ["words"]. The arguments you sent were: "{\"topic\":\"go\"}"`, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			prov := script.Play()
			parent := tool.NewRegistry()
			mustRegister(t, parent, mustNew(t, "w", agent.WithProvider(prov), agent.WithInput(tc.prompt)))
			res := xtool.NewHandler(parent).Execute(context.Background(), artifact.ToolCall{ID: "c", Name: "w", Arguments: tc.args})
			if !res.IsError || res.Content != tc.want {
				t.Errorf("got IsError=%v %q\nwant %q", res.IsError, res.Content, tc.want)
			}
			if n := len(prov.Requests()); n != 0 {
				t.Errorf("child invoked %d times", n)
			}
		})
	}
	// Without a prompt the task is the arguments' JSON.
	prov := script.Play(script.Text("ok"))
	parent := tool.NewRegistry()
	mustRegister(t, parent, mustNew(t, "w", agent.WithProvider(prov), agent.WithInput[topicIn](nil)))
	res := xtool.NewHandler(parent).Execute(context.Background(), artifact.ToolCall{ID: "c", Name: "w", Arguments: `{"words":2,"topic":"go"}`})
	o, _ := agent.OutcomeOf(res)
	if res.IsError || o == nil || o.State.Turns()[0].Artifacts[0].(artifact.Text).Content != `{"topic":"go","words":2}` {
		t.Errorf("result %+v", res)
	}
}
