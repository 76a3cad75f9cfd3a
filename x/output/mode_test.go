package output_test

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/lodeworks/lode/artifact"
	"github.com/lodeworks/lode/ledger"
	"github.com/lodeworks/lode/loop"
	"github.com/lodeworks/lode/provider"
	"github.com/lodeworks/lode/tool"
	"github.com/lodeworks/lode/x/output"
	"github.com/lodeworks/lode/x/provider/script"
	xtool "github.com/lodeworks/lode/x/tool"
)

func TestAutoMode(t *testing.T) {
	cases := []struct {
		name  string
		types []string // nil: the provider does not say
		want  output.Mode
	}{
		{"silent provider", nil, output.ModeTool},
		{"json_object only", []string{provider.ResponseFormatJSONObject}, output.ModeTool},
		{"json_schema", []string{provider.ResponseFormatJSONSchema}, output.ModeResponseFormat},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			sp := script.Play(answerStep(tc.want, validTicket))
			var prov provider.Provider = sp
			if tc.types != nil {
				prov = formatProvider{sp, tc.types}
			}
			got, err := output.Run[ticket](t.Context(), nil, newThread(t), prov)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, wantTicket) {
				t.Fatalf("got %+v", got)
			}
			checkRequest(t, tc.want, sp.Requests()[0], nil)
		})
	}
}

// An explicit mode is kept whatever the provider says.
func TestExplicitMode(t *testing.T) {
	sp := script.Play(script.Call("fa", "final_answer", validTicket))
	prov := formatProvider{sp, []string{provider.ResponseFormatJSONSchema}}
	if _, err := output.Run[ticket](t.Context(), nil, newThread(t), prov, output.WithMode(output.ModeTool)); err != nil {
		t.Fatal(err)
	}
	checkRequest(t, output.ModeTool, sp.Requests()[0], nil)
}

// A tool of the turn under the final-answer tool's name is never hidden
// or replaced: the turn fails, naming the option that fixes it.
func TestToolNameTaken(t *testing.T) {
	reg := tool.NewRegistry()
	if err := tool.RegisterFunc(reg, "final_answer", "mine", func(_ context.Context, in lookupIn) (string, error) { return "", nil }); err != nil {
		t.Fatal(err)
	}
	step := loop.New(loop.WithInvokeOptions(xtool.WithFilteredTools(reg, nil)))
	sp := script.Play(script.Text("unused"))
	_, err := output.Run[ticket](t.Context(), step, newThread(t), sp, output.WithMode(output.ModeTool))
	if !errors.Is(err, output.ErrToolName) {
		t.Fatalf("error %v, want ErrToolName", err)
	}
	const want = `output: the final-answer tool's name is taken: a tool of this turn is called "final_answer"; choose another name with WithToolName`
	if !strings.Contains(err.Error(), want) {
		t.Fatalf("error %q\nwant it to hold %q", err, want)
	}
	if sp.Remaining() != 1 {
		t.Fatal("the model was called")
	}

	// Another name works beside the registry's tool.
	sp = script.Play(script.Call("fa", "answer_ticket", validTicket))
	got, err := output.Run[ticket](t.Context(), step, newThread(t), sp, output.WithMode(output.ModeTool), output.WithToolName("answer_ticket"))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, wantTicket) {
		t.Fatalf("got %+v", got)
	}
}

// A call to the final-answer tool on a turn that did not offer it is
// refused at execution like any unoffered tool, and the run goes on.
func TestFinalToolRefusedWhenNotOffered(t *testing.T) {
	reg := tool.NewRegistry()
	if err := tool.RegisterFunc(reg, "lookup", "Look a user up", func(_ context.Context, in lookupIn) (string, error) { return "ok", nil }); err != nil {
		t.Fatal(err)
	}
	step := loop.New(
		loop.WithHandlers(xtool.NewHandler(reg)),
		loop.WithInvokeOptions(xtool.WithFilteredTools(reg, nil)),
	)
	sp := script.Play(script.Call("c1", "final_answer", validTicket), script.Text(validTicket))
	prov := formatProvider{sp, []string{provider.ResponseFormatJSONSchema}}
	th := newThread(t)
	got, err := output.Run[ticket](t.Context(), step, th, prov)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, wantTicket) {
		t.Fatalf("got %+v", got)
	}
	turns := untimed(th.Turns())
	want := []ledger.Turn{
		turns[0],
		{Role: ledger.RoleAssistant, Artifacts: []artifact.Artifact{artifact.ToolCall{ID: "c1", Name: "final_answer", Arguments: validTicket}}},
		{Role: ledger.RoleTool, Artifacts: []artifact.Artifact{artifact.ToolResult{ToolCallID: "c1", Name: "final_answer", IsError: true,
			Content: `unknown tool "final_answer". Tools available in this turn: lookup.`}}},
		{Role: ledger.RoleAssistant, Artifacts: []artifact.Artifact{artifact.Text{Content: validTicket}}},
	}
	if !reflect.DeepEqual(turns, want) {
		t.Fatalf("turns\n%#v\nwant\n%#v", turns, want)
	}
}

type notStruct []string

type badType struct {
	C chan int `json:"c"`
}

func TestNewOptions(t *testing.T) {
	cases := []struct {
		name string
		err  func() error
		want string
	}{
		{"mode", func() error { _, err := output.New[ticket](output.WithMode("xml")); return err },
			`output: invalid option: WithMode("xml"): use ModeAuto, ModeResponseFormat or ModeTool`},
		{"tool name", func() error { _, err := output.New[ticket](output.WithToolName("final answer")); return err },
			`output: invalid option: WithToolName: `},
		{"schema name", func() error { _, err := output.New[ticket](output.WithName("a.b")); return err },
			`output: invalid option: WithName: `},
		{"not a struct", func() error { _, err := output.New[notStruct](); return err },
			`output: invalid option: answer type output_test.notStruct: registering "final_answer": tool: arguments type output_test.notStruct is not a struct`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.err()
			if !errors.Is(err, output.ErrOption) {
				t.Fatalf("error %v, want ErrOption", err)
			}
			if !strings.HasPrefix(err.Error(), tc.want) {
				t.Fatalf("error %q\nwant it to start %q", err, tc.want)
			}
		})
	}
	// Every bad option is reported at once.
	_, err := output.New[ticket](output.WithMode("xml"), output.WithToolName(""), output.WithName("a b"))
	if n := strings.Count(err.Error(), "invalid option"); n != 2 {
		t.Fatalf("%d problems reported in %q, want 2 (an empty tool name means the default)", n, err)
	}
}

func TestDefaultsAndDecode(t *testing.T) {
	a, err := output.New[*ticket](output.WithMaxAttempts(-1))
	if err != nil {
		t.Fatal(err)
	}
	got, err := a.Decode(validTicket)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(*got, wantTicket) {
		t.Fatalf("got %+v", got)
	}
	_, err = a.Decode(`{"category":"bug"}`)
	var ie *output.InvalidError
	if !errors.As(err, &ie) || ie.Attempts != 1 || ie.Last != `{"category":"bug"}` {
		t.Fatalf("error %#v", err)
	}
	// A negative WithMaxAttempts means the default: three answers.
	steps := []script.Step{script.Text("{}"), script.Text("{}"), script.Text("{}")}
	sp := script.Play(steps...)
	_, err = a.Run(t.Context(), nil, newThread(t), formatProvider{sp, []string{provider.ResponseFormatJSONSchema}})
	if !errors.As(err, &ie) || ie.Attempts != output.DefaultMaxAttempts {
		t.Fatalf("error %v", err)
	}
}

// A run that fails for another reason returns that error as it is.
func TestRunErrors(t *testing.T) {
	boom := errors.New("boom")
	_, err := output.Run[ticket](t.Context(), nil, newThread(t), script.Play(script.Fail(boom)))
	var pe *loop.ProviderError
	if !errors.As(err, &pe) || !errors.Is(err, boom) {
		t.Fatalf("error %v", err)
	}
	_, err = output.Run[ticket](t.Context(), nil, newThread(t), nil)
	if !errors.As(err, &pe) {
		t.Fatalf("nil provider: error %v", err)
	}
	_, err = output.Run[ticket](t.Context(), nil, nil, script.Play())
	var le *loop.LedgerError
	if !errors.As(err, &le) {
		t.Fatalf("nil state: error %v", err)
	}
}

// A final answer given beside other tool calls is not taken: the tools
// run and the model answers again, as loop.Step.Run goes on while there
// are calls.
func TestAnswerBesideToolCalls(t *testing.T) {
	reg := tool.NewRegistry()
	if err := tool.RegisterFunc(reg, "lookup", "Look a user up", func(_ context.Context, in lookupIn) (string, error) { return "free plan", nil }); err != nil {
		t.Fatal(err)
	}
	step := loop.New(
		loop.WithHandlers(xtool.NewHandler(reg)),
		loop.WithInvokeOptions(xtool.WithFilteredTools(reg, nil)),
	)
	early := `{"category":"other","priority":3,"tags":[]}`
	sp := script.Play(
		script.Reply(
			artifact.ToolCall{ID: "c1", Name: "lookup", Arguments: `{"user":"ann"}`},
			artifact.ToolCall{ID: "c2", Name: "final_answer", Arguments: early},
		),
		script.Call("c3", "final_answer", validTicket),
	)
	th := newThread(t)
	got, err := output.Run[ticket](t.Context(), step, th, sp)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, wantTicket) {
		t.Fatalf("got %+v", got)
	}
	turns := untimed(th.Turns())
	want := []ledger.Turn{
		turns[0],
		{Role: ledger.RoleAssistant, Artifacts: []artifact.Artifact{
			artifact.ToolCall{ID: "c1", Name: "lookup", Arguments: `{"user":"ann"}`},
			artifact.Text{Content: early},
		}},
		{Role: ledger.RoleTool, Artifacts: []artifact.Artifact{artifact.ToolResult{ToolCallID: "c1", Name: "lookup", Content: "free plan", Value: "free plan"}}},
		{Role: ledger.RoleAssistant, Artifacts: []artifact.Artifact{artifact.Text{Content: validTicket}}},
	}
	if !reflect.DeepEqual(turns, want) {
		t.Fatalf("turns\n%#v\nwant\n%#v", turns, want)
	}
}
