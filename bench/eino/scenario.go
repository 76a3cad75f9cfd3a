package main

import (
	"context"
	"errors"
	"fmt"
	"iter"

	"github.com/cloudwego/eino/components/model"
	einotool "github.com/cloudwego/eino/components/tool"
	"github.com/cloudwego/eino/components/tool/utils"
	"github.com/cloudwego/eino/compose"
	"github.com/cloudwego/eino/flow/agent/react"
	"github.com/cloudwego/eino/schema"

	"github.com/lodeworks/lode/artifact"
	"github.com/lodeworks/lode/ledger"
	"github.com/lodeworks/lode/ledger/file"
	"github.com/lodeworks/lode/loop"
	"github.com/lodeworks/lode/provider"
	"github.com/lodeworks/lode/tool"
	xtool "github.com/lodeworks/lode/x/tool"
)

// The scenario: one user message, a model turn that calls the typed add
// tool, the tool, and a final answer that quotes the tool's result.
const (
	question = "What is 40 + 2? Label it answer."
	addArgs  = `{"a":40,"b":2,"label":"answer"}`
	// wantAnswer is the final answer both sides must give.
	wantAnswer = `sum: {"sum":42,"label":"answer"}`
)

type addIn struct {
	A     int    `json:"a"`
	B     int    `json:"b"`
	Label string `json:"label"`
}

type addOut struct {
	Sum   int    `json:"sum"`
	Label string `json:"label"`
}

func add(_ context.Context, in addIn) (addOut, error) {
	return addOut{Sum: in.A + in.B, Label: in.Label}, nil
}

// frameworks are the sides a process can run, by name; a side that keeps
// files keeps them in dir.
var frameworks = map[string]func(prior int, dir string) (func(context.Context) (string, error), error){
	"lode": func(prior int, _ string) (func(context.Context) (string, error), error) {
		return lodeScenario(prior, false)
	},
	"lode-inline": func(prior int, _ string) (func(context.Context) (string, error), error) {
		return lodeScenario(prior, true)
	},
	"eino": func(prior int, _ string) (func(context.Context) (string, error), error) { return einoScenario(prior) },
	// The sides as users run lode: a ledger.Thread made by NewThread for
	// each conversation, and a thread of the file store.
	"thread": func(prior int, _ string) (func(context.Context) (string, error), error) {
		return threadScenario(prior, false)
	},
	"thread-inline": func(prior int, _ string) (func(context.Context) (string, error), error) {
		return threadScenario(prior, true)
	},
	"file": fileScenario,
}

// userStep is the loop as users build it: the add tool registered with
// tool.RegisterFunc (inline when inline is set) behind xtool's Handler.
func userStep(inline bool) (*loop.Step, error) {
	reg := tool.NewRegistry()
	var opts []tool.FuncOption
	if inline {
		opts = append(opts, tool.WithInline())
	}
	if err := tool.RegisterFunc(reg, "add", "Add a and b", add, opts...); err != nil {
		return nil, err
	}
	return loop.New(loop.WithHandlers(xtool.NewHandler(reg)), loop.WithInvokeOptions(xtool.WithFilteredTools(reg, nil))), nil
}

// threadScenario runs the scenario on threads made by ledger.NewThread,
// the way fileScenario runs it on the file store's: with no prior turns
// each run has a new thread of its own; with prior turns every run appends
// its four turns to one thread that starts with them, as a conversation
// kept in memory grows (the history grows as the runs go on, which is
// what "flat with history" asks of the loop). A thread made anew per run
// from a copy of a long history costs that copy (about 90 µs for 1,000
// turns here, mostly the copy's write barriers and the GC it brings).
func threadScenario(prior int, inline bool) (func(context.Context) (string, error), error) {
	step, err := userStep(inline)
	if err != nil {
		return nil, err
	}
	var shared *ledger.Thread
	if prior > 0 {
		shared = ledger.NewThread(ledger.WithTurns(priorTurns(prior)...))
	}
	return func(ctx context.Context) (string, error) {
		th := shared
		if th == nil {
			th = ledger.NewThread()
		}
		if err := th.Append(ledger.RoleUser, artifact.Text{Content: question}); err != nil {
			return "", err
		}
		return answer(step.Run(ctx, th, lodeModel{}))
	}, nil
}

// fileScenario runs the scenario on threads of a file store in dir, with
// the store's defaults (every record fsynced), new or shared as
// threadScenario's are.
func fileScenario(prior int, dir string) (func(context.Context) (string, error), error) {
	step, err := userStep(false)
	if err != nil {
		return nil, err
	}
	st, err := file.Open(dir)
	if err != nil {
		return nil, err
	}
	var shared *ledger.StoredThread
	if prior > 0 {
		if shared, err = st.Create(context.Background(), ledger.WithTurns(priorTurns(prior)...)); err != nil {
			return nil, err
		}
	}
	return func(ctx context.Context) (string, error) {
		th := shared
		if th == nil {
			if th, err = st.Create(ctx); err != nil {
				return "", err
			}
		}
		if err := th.Append(ledger.RoleUser, artifact.Text{Content: question}); err != nil {
			return "", err
		}
		return answer(step.Run(ctx, th, lodeModel{}))
	}, nil
}

// answer is the text of a run's last turn.
func answer(st ledger.State, err error) (string, error) {
	if err != nil {
		return "", err
	}
	turns := st.Turns()
	last := turns[len(turns)-1]
	if len(last.Artifacts) != 1 {
		return "", fmt.Errorf("lode: last turn %+v", last)
	}
	text, _ := last.Artifacts[0].(artifact.Text)
	return text.Content, nil
}

// lodeScenario returns one run of the scenario through lode's loop, the
// add tool through xtool's Handler (inline when inline is set), on a thread
// that holds prior turns before the question.
func lodeScenario(prior int, inline bool) (func(context.Context) (string, error), error) {
	reg := tool.NewRegistry()
	var opts []tool.FuncOption
	if inline {
		opts = append(opts, tool.WithInline())
	}
	if err := tool.RegisterFunc(reg, "add", "Add a and b", add, opts...); err != nil {
		return nil, err
	}
	step := loop.New(loop.WithHandlers(xtool.NewHandler(reg)), loop.WithInvokeOptions(xtool.WithFilteredTools(reg, nil)))
	th := newSession(priorTurns(prior))
	return func(ctx context.Context) (string, error) {
		th.rewind()
		if err := th.Append(ledger.RoleUser, artifact.Text{Content: question}); err != nil {
			return "", err
		}
		st, err := step.Run(ctx, th, lodeModel{})
		if err != nil {
			return "", err
		}
		turns := st.Turns()
		last := turns[len(turns)-1]
		if len(last.Artifacts) != 1 {
			return "", fmt.Errorf("lode: last turn %+v", last)
		}
		text, _ := last.Artifacts[0].(artifact.Text)
		return text.Content, nil
	}, nil
}

// lodeModel answers the question with a call of add, and the tool's result
// with a final answer quoting it.
type lodeModel struct{}

func (lodeModel) Invoke(_ context.Context, req *provider.Request) iter.Seq2[artifact.Artifact, error] {
	return func(yield func(artifact.Artifact, error) bool) {
		last := req.Turns[len(req.Turns)-1]
		if last.Role == ledger.RoleTool {
			r, _ := last.Artifacts[0].(artifact.ToolResult)
			yield(artifact.Text{Content: "sum: " + r.Content}, nil)
			return
		}
		yield(artifact.ToolCall{ID: "call_1", Name: "add", Arguments: addArgs}, nil)
	}
}

// priorTurns is a flat history of n turns, questions and answers in turn.
func priorTurns(n int) []ledger.Turn {
	turns := make([]ledger.Turn, n)
	for i := range turns {
		if i%2 == 0 {
			turns[i] = ledger.Turn{Role: ledger.RoleUser, Artifacts: []artifact.Artifact{artifact.Text{Content: fmt.Sprintf("question %d", i/2)}}}
		} else {
			turns[i] = ledger.Turn{Role: ledger.RoleAssistant, Artifacts: []artifact.Artifact{artifact.Text{Content: fmt.Sprintf("answer %d", i/2)}}}
		}
	}
	return turns
}

// session is an in-memory ledger.State that keeps a conversation between
// runs, as an application keeps a session, and that the benchmark rewinds
// to its prior turns after each run, so that every run sees the same
// history without copying it. It tracks its open calls (ledger.CallTracker,
// ledger.LateTracker) as ledger.Thread does.
type session struct {
	turns []ledger.Turn
	prior int
	open  []ledger.OpenCall
}

func newSession(prior []ledger.Turn) *session {
	turns := make([]ledger.Turn, len(prior), len(prior)+16)
	copy(turns, prior)
	return &session{turns: turns, prior: len(prior)}
}

func (s *session) rewind() {
	clear(s.turns[s.prior:])
	s.turns, s.open = s.turns[:s.prior], s.open[:0]
}

func (s *session) ID() string                       { return "bench" }
func (s *session) Turns() []ledger.Turn             { return s.turns[:len(s.turns):len(s.turns)] }
func (s *session) Metadata(string) (string, bool)   { return "", false }
func (s *session) SetMetadata(string, string) error { return errors.New("session: no metadata") }
func (s *session) OpenCalls() []ledger.OpenCall     { return append([]ledger.OpenCall(nil), s.open...) }
func (s *session) LateResults() []ledger.LateResult { return nil }
func (s *session) Append(role ledger.Role, arts ...artifact.Artifact) error {
	for _, a := range arts {
		switch a := a.(type) {
		case artifact.ToolCall:
			if role == ledger.RoleAssistant {
				s.open = append(s.open, ledger.OpenCall{Turn: len(s.turns), Call: a})
			}
		case artifact.ToolResult:
			for i, c := range s.open {
				if c.Call.ID == a.ToolCallID {
					s.open = append(s.open[:i], s.open[i+1:]...)
					break
				}
			}
		}
	}
	s.turns = append(s.turns, ledger.Turn{Role: role, Artifacts: arts})
	return nil
}

// einoScenario returns one run of the scenario through Eino's react agent,
// the add tool inferred from the same function (utils.InferTool), on a
// history of prior messages before the question.
func einoScenario(prior int) (func(context.Context) (string, error), error) {
	ctx := context.Background()
	addTool, err := utils.InferTool("add", "Add a and b", add)
	if err != nil {
		return nil, err
	}
	agent, err := react.NewAgent(ctx, &react.AgentConfig{
		ToolCallingModel: einoModel{},
		ToolsConfig:      compose.ToolsNodeConfig{Tools: []einotool.BaseTool{addTool}},
	})
	if err != nil {
		return nil, err
	}
	msgs := make([]*schema.Message, 0, prior+1)
	for _, t := range priorTurns(prior) {
		text := t.Artifacts[0].(artifact.Text).Content
		if t.Role == ledger.RoleUser {
			msgs = append(msgs, schema.UserMessage(text))
		} else {
			msgs = append(msgs, schema.AssistantMessage(text, nil))
		}
	}
	msgs = append(msgs, schema.UserMessage(question))
	return func(ctx context.Context) (string, error) {
		out, err := agent.Generate(ctx, msgs)
		if err != nil {
			return "", err
		}
		return out.Content, nil
	}, nil
}

// einoModel is lodeModel in Eino's terms.
type einoModel struct{}

func (einoModel) Generate(_ context.Context, input []*schema.Message, _ ...model.Option) (*schema.Message, error) {
	if last := input[len(input)-1]; last.Role == schema.Tool {
		return schema.AssistantMessage("sum: "+last.Content, nil), nil
	}
	return schema.AssistantMessage("", []schema.ToolCall{{ID: "call_1", Type: "function", Function: schema.FunctionCall{Name: "add", Arguments: addArgs}}}), nil
}

func (einoModel) Stream(context.Context, []*schema.Message, ...model.Option) (*schema.StreamReader[*schema.Message], error) {
	return nil, errors.New("einoModel: the scenario does not stream")
}

func (m einoModel) WithTools([]*schema.ToolInfo) (model.ToolCallingChatModel, error) { return m, nil }
