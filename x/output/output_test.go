package output_test

import (
	"context"
	"encoding/json"
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

type ticket struct {
	Category string   `json:"category" jsonschema:"enum=bug,enum=billing,enum=other"`
	Priority int      `json:"priority" jsonschema:"minimum=1,maximum=3"`
	Tags     []string `json:"tags"`
}

// formatProvider is a script that says it can send response formats.
type formatProvider struct {
	*script.Provider
	types []string
}

func (p formatProvider) SupportsResponseFormat(typ string) bool {
	for _, t := range p.types {
		if t == typ {
			return true
		}
	}
	return false
}

// untimed drops the times, which no test can predict.
func untimed(turns []ledger.Turn) []ledger.Turn {
	out := make([]ledger.Turn, len(turns))
	for i, t := range turns {
		out[i] = ledger.Turn{Role: t.Role, Artifacts: t.Artifacts}
	}
	return out
}

func newThread(t *testing.T) ledger.State {
	t.Helper()
	th := ledger.NewThread()
	if err := th.Append(ledger.RoleUser, artifact.Text{Content: "The app crashes on login."}); err != nil {
		t.Fatal(err)
	}
	return th
}

const validTicket = `{"category":"bug","priority":1,"tags":["login"]}`

var wantTicket = ticket{Category: "bug", Priority: 1, Tags: []string{"login"}}

// answerStep is how the model answers in each mode.
func answerStep(mode output.Mode, raw string) script.Step {
	if mode == output.ModeTool {
		return script.Call("fa", output.DefaultToolName, raw)
	}
	return script.Text(raw)
}

func modeProvider(mode output.Mode, steps ...script.Step) (provider.Provider, *script.Provider) {
	sp := script.Play(steps...)
	if mode == output.ModeResponseFormat {
		return formatProvider{sp, []string{provider.ResponseFormatJSONSchema}}, sp
	}
	return sp, sp
}

var modes = []output.Mode{output.ModeResponseFormat, output.ModeTool}

func TestValidFirstTime(t *testing.T) {
	for _, mode := range modes {
		t.Run(string(mode), func(t *testing.T) {
			prov, sp := modeProvider(mode, answerStep(mode, validTicket))
			th := newThread(t)
			got, err := output.Run[ticket](t.Context(), loop.New(), th, prov)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, wantTicket) {
				t.Fatalf("got %+v, want %+v", got, wantTicket)
			}
			reqs := sp.Requests()
			if len(reqs) != 1 {
				t.Fatalf("%d requests, want 1", len(reqs))
			}
			checkRequest(t, mode, reqs[0], nil)
			// Stored: the question and the answer as text, nothing of the
			// machinery.
			turns := untimed(th.Turns())
			want := []ledger.Turn{
				{Role: ledger.RoleUser, Artifacts: []artifact.Artifact{artifact.Text{Content: "The app crashes on login."}}},
				{Role: ledger.RoleAssistant, Artifacts: []artifact.Artifact{artifact.Text{Content: validTicket}}},
			}
			if !reflect.DeepEqual(turns, want) {
				t.Fatalf("stored turns:\n%#v\nwant\n%#v", turns, want)
			}
		})
	}
}

// checkRequest checks what mode adds to a request that offered others.
func checkRequest(t *testing.T, mode output.Mode, req provider.Request, others []string) {
	t.Helper()
	schema, err := tool.SchemaFor[ticket]()
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tl := range req.Tools {
		names = append(names, tl.Name)
	}
	switch mode {
	case output.ModeResponseFormat:
		want := &provider.ResponseFormat{Type: provider.ResponseFormatJSONSchema, Name: "ticket", Schema: schema}
		if !reflect.DeepEqual(req.ResponseFormat, want) {
			t.Fatalf("response format %+v, want %+v", req.ResponseFormat, want)
		}
		if !reflect.DeepEqual(names, others) {
			t.Fatalf("tools %v, want %v", names, others)
		}
		if req.ToolChoice != (provider.ToolChoice{}) {
			t.Fatalf("tool choice %+v, want none set", req.ToolChoice)
		}
	case output.ModeTool:
		if req.ResponseFormat != nil {
			t.Fatalf("response format %+v in tool mode", req.ResponseFormat)
		}
		want := append(append([]string(nil), others...), output.DefaultToolName)
		if !reflect.DeepEqual(names, want) {
			t.Fatalf("tools %v, want %v", names, want)
		}
		if string(req.Tools[len(req.Tools)-1].Schema) != string(schema) {
			t.Fatalf("final tool schema %s, want %s", req.Tools[len(req.Tools)-1].Schema, schema)
		}
		wantChoice := provider.ToolChoice{Mode: provider.ToolChoiceTool, Name: output.DefaultToolName}
		if len(others) > 0 {
			wantChoice = provider.ToolChoice{Mode: provider.ToolChoiceRequired}
		}
		if req.ToolChoice != wantChoice {
			t.Fatalf("tool choice %+v, want %+v", req.ToolChoice, wantChoice)
		}
	}
}

func TestInvalidThenValid(t *testing.T) {
	bad := []struct {
		name, raw, reason string
	}{
		{"not json", `{"category":`, `the answer is not valid JSON: unexpected end of JSON input`},
		{"not an object", `["bug"]`, `the answer must be a JSON object`},
		{"empty", "  ", `the answer is empty`},
		{"enum", `{"category":"feature","priority":1,"tags":[]}`, `the answer does not match the schema: `},
		{"missing", `{"category":"bug","tags":[]}`, `the answer does not match the schema: `},
		{"extra", `{"category":"bug","priority":2,"tags":[],"x":1}`, `the answer does not match the schema: `},
	}
	for _, mode := range modes {
		for _, tc := range bad {
			t.Run(string(mode)+"/"+tc.name, func(t *testing.T) {
				prov, sp := modeProvider(mode, answerStep(mode, tc.raw), answerStep(mode, validTicket))
				th := newThread(t)
				got, err := output.Run[ticket](t.Context(), nil, th, prov)
				if err != nil {
					t.Fatal(err)
				}
				if !reflect.DeepEqual(got, wantTicket) {
					t.Fatalf("got %+v", got)
				}
				turns := th.Turns()
				if len(turns) != 4 {
					t.Fatalf("%d turns stored, want 4: %#v", len(turns), turns)
				}
				if a := turns[1].Artifacts; len(a) != 1 || a[0] != (artifact.Text{Content: tc.raw}) {
					t.Fatalf("stored answer %#v, want the text %q", a, tc.raw)
				}
				fb := turns[2]
				if fb.Role != ledger.RoleUser || len(fb.Artifacts) != 1 {
					t.Fatalf("feedback turn %#v", fb)
				}
				text := fb.Artifacts[0].(artifact.Text).Content
				wantStart := "Your answer was not accepted: " + tc.reason
				if !strings.HasPrefix(text, wantStart) {
					t.Fatalf("feedback %q\nwant it to start %q", text, wantStart)
				}
				quoted, _ := json.Marshal(tc.raw)
				if !strings.Contains(text, "Your answer was: "+string(quoted)) {
					t.Fatalf("feedback %q does not quote the answer", text)
				}
				// The model is shown exactly the stored turns: a reload
				// builds the same request.
				reqs := sp.Requests()
				if len(reqs) != 2 {
					t.Fatalf("%d requests", len(reqs))
				}
				if !reflect.DeepEqual(reqs[1].Turns, turns[:3]) {
					t.Fatalf("second request turns\n%#v\nwant the stored\n%#v", reqs[1].Turns, turns[:3])
				}
				checkRequest(t, mode, reqs[1], nil)
			})
		}
	}
}

func TestNeverValid(t *testing.T) {
	for _, mode := range modes {
		t.Run(string(mode), func(t *testing.T) {
			answers := []string{`{}`, `{"category":"x"}`, `nope`}
			var steps []script.Step
			for _, a := range answers {
				steps = append(steps, answerStep(mode, a))
			}
			prov, sp := modeProvider(mode, steps...)
			th := newThread(t)
			_, err := output.Run[ticket](t.Context(), nil, th, prov, output.WithMaxAttempts(3))
			var ie *output.InvalidError
			if !errors.As(err, &ie) {
				t.Fatalf("error %v (%T), want *InvalidError", err, err)
			}
			if !errors.Is(err, output.ErrInvalid) {
				t.Fatal("not ErrInvalid")
			}
			if ie.Attempts != 3 || ie.Last != "nope" {
				t.Fatalf("Attempts %d Last %q, want 3 and %q", ie.Attempts, ie.Last, "nope")
			}
			const wantErr = "output: no valid answer after 3 attempt(s): the answer is not valid JSON: invalid character 'o' in literal null (expecting 'u'); the last answer is in InvalidError.Last (WithMaxAttempts allows more tries)"
			if err.Error() != wantErr {
				t.Fatalf("error %q\nwant %q", err, wantErr)
			}
			if sp.Remaining() != 0 {
				t.Fatalf("%d steps left", sp.Remaining())
			}
			// Two feedback turns: none after the last answer.
			if n := len(th.Turns()); n != 6 {
				t.Fatalf("%d turns stored, want 6", n)
			}
		})
	}
}

type lookupIn struct {
	User string `json:"user"`
}

func TestToolsThenAnswer(t *testing.T) {
	for _, mode := range modes {
		t.Run(string(mode), func(t *testing.T) {
			reg := tool.NewRegistry()
			err := tool.RegisterFunc(reg, "lookup", "Look a user up", func(_ context.Context, in lookupIn) (string, error) {
				return in.User + " is on the free plan", nil
			})
			if err != nil {
				t.Fatal(err)
			}
			prov, sp := modeProvider(mode,
				script.Call("c1", "lookup", `{"user":"ann"}`),
				answerStep(mode, `{"category":"billing","priority":2,"tags":["plan"]}`),
			)
			step := loop.New(
				loop.WithHandlers(xtool.NewHandler(reg)),
				loop.WithInvokeOptions(xtool.WithFilteredTools(reg, nil)),
			)
			th := newThread(t)
			got, err := output.Run[ticket](t.Context(), step, th, prov)
			if err != nil {
				t.Fatal(err)
			}
			want := ticket{Category: "billing", Priority: 2, Tags: []string{"plan"}}
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("got %+v", got)
			}
			reqs := sp.Requests()
			if len(reqs) != 2 {
				t.Fatalf("%d requests", len(reqs))
			}
			for _, r := range reqs {
				checkRequest(t, mode, r, []string{"lookup"})
			}
			turns := th.Turns()
			if len(turns) != 4 || turns[2].Role != ledger.RoleTool {
				t.Fatalf("turns %#v", turns)
			}
			res := turns[2].Artifacts[0].(artifact.ToolResult)
			if res.IsError || res.Content != "ann is on the free plan" {
				t.Fatalf("tool result %+v", res)
			}
		})
	}
}
