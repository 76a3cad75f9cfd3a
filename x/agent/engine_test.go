package agent_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/lodeworks/lode/artifact"
	"github.com/lodeworks/lode/ledger"
	"github.com/lodeworks/lode/loop"
	"github.com/lodeworks/lode/provider"
	"github.com/lodeworks/lode/tool"
	"github.com/lodeworks/lode/x/agent"
	"github.com/lodeworks/lode/x/provider/script"
)

func TestSpecTask(t *testing.T) {
	a, err := agent.New("helper", "Helps.", agent.WithProvider(script.Play()))
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		args, task, err string
	}{
		{`{"task":"look"}`, "look", ""},
		{`{"task":"  "}`, "", `"task" is empty; say what the agent should do`},
		{`{}`, "", "task"},
		{`not json`, "", "JSON"},
	}
	for _, c := range cases {
		t.Run(c.args, func(t *testing.T) {
			task, err := a.Task(c.args)
			if task != c.task || (c.err == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), c.err)) {
				t.Fatalf("task %q, err %v; want %q, %q", task, err, c.task, c.err)
			}
		})
	}
}

// TestSpecFilterReadsTheThread: a child run apart offers its tools minus
// those its thread's MetaDenied lists.
func TestSpecFilterReadsTheThread(t *testing.T) {
	reg := tool.NewRegistry()
	for _, n := range []string{"read", "secret"} {
		if err := reg.Register(tool.Tool{Name: n}, func(context.Context, tool.Sandbox, map[string]any) (any, error) { return nil, nil }); err != nil {
			t.Fatal(err)
		}
	}
	a, err := agent.New("helper", "Helps.", agent.WithProvider(script.Play()), agent.WithRegistry(reg), agent.WithSystemPrompt("Be brief."), agent.WithMaxTurns(4))
	if err != nil {
		t.Fatal(err)
	}
	spec := a.Spec()
	if spec.Name != "helper" || spec.System != "Be brief." || spec.MaxTurns != 4 || spec.MaxDepth != agent.DefaultMaxDepth || spec.Tool.Name != "helper" || spec.Handler == nil {
		t.Fatalf("spec %+v", spec)
	}
	for _, c := range []struct{ denied, want string }{{"", "read,secret"}, {`["secret"]`, "read"}, {`not a list`, "read,secret"}} {
		th := ledger.NewThread(ledger.WithMetadata(map[string]string{agent.MetaDenied: c.denied}))
		req := &provider.Request{}
		if err := provider.Resolve(context.Background(), th, req, spec.InvokeOptions...); err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, tl := range req.Tools {
			names = append(names, tl.Name)
		}
		if strings.Join(names, ",") != c.want {
			t.Fatalf("denied %q: offered %v, want %s", c.denied, names, c.want)
		}
	}
}

func TestSpecAnswer(t *testing.T) {
	a, err := agent.New("helper", "Helps.", agent.WithProvider(script.Play()))
	if err != nil {
		t.Fatal(err)
	}
	answered := ledger.NewThread(ledger.WithTurns(ledger.Turn{Role: ledger.RoleAssistant, Artifacts: []artifact.Artifact{artifact.Text{Content: "found it"}}}))
	silent := ledger.NewThread()
	cases := []struct {
		name    string
		st      ledger.State
		err     error
		content string
		isError bool
	}{
		{"an answer", answered, nil, "found it", false},
		{"no answer", silent, nil, "the agent helper finished without a text answer. Ask it again more precisely, or do this part yourself.", true},
		{"out of turns", answered, &loop.LimitError{Limit: loop.LimitTurns, Max: 2}, "the agent helper stopped before finishing: it used all 2 of its turns. Give it a smaller task, or do the rest yourself.", true},
		{"a failure", answered, errors.New("boom"), "the agent helper failed: boom. Try again later, or do this part yourself.", true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			content, isError := a.Answer(context.Background(), c.st, c.err)
			if content != c.content || isError != c.isError {
				t.Fatalf("%q, %v; want %q, %v", content, isError, c.content, c.isError)
			}
		})
	}
}
