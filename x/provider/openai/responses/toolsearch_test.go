package responses

import (
	"bytes"
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
	xtool "github.com/lodeworks/lode/x/tool"
	"github.com/lodeworks/lode/x/tool/toolsearch"

	"github.com/lodeworks/lode/x/provider/internal/providertest"
)

// rawTools is the "tools" array of request i as it went on the wire.
func rawTools(t *testing.T, f *fakeServer, i int) string {
	t.Helper()
	var body struct {
		Tools json.RawMessage `json:"tools"`
	}
	if err := json.Unmarshal(f.requests()[i].Raw, &body); err != nil {
		t.Fatal(err)
	}
	return string(body.Tools)
}

// TestToolSearchRequest: on a model with tool_search, Deferred tools go
// with defer_loading and the hosted tool_search tool goes last; on one
// without, or with WithToolSearch(false), they go as any other function.
func TestToolSearchRequest(t *testing.T) {
	tools := []tool.Tool{
		{Name: "clock", Description: "Tell the time."},
		{Name: "crm__send_invoice", Description: "Email an invoice.", Schema: json.RawMessage(`{"type":"object","properties":{"id":{"type":"string"}},"required":["id"],"additionalProperties":false}`), Deferred: true},
		{Name: "crm__delete_customer", Description: "Delete a customer.", Deferred: true},
	}
	const (
		clock    = `{"description":"Tell the time.","name":"clock","parameters":{"type":"object","properties":{}},"strict":false,"type":"function"}`
		invoiceD = `{"defer_loading":true,"description":"Email an invoice.","name":"crm__send_invoice","parameters":{"type":"object","properties":{"id":{"type":"string"}},"required":["id"],"additionalProperties":false},"strict":true,"type":"function"}`
		deleteD  = `{"defer_loading":true,"description":"Delete a customer.","name":"crm__delete_customer","parameters":{"type":"object","properties":{}},"strict":false,"type":"function"}`
		invoice  = `{"description":"Email an invoice.","name":"crm__send_invoice","parameters":{"type":"object","properties":{"id":{"type":"string"}},"required":["id"],"additionalProperties":false},"strict":true,"type":"function"}`
		deleteU  = `{"description":"Delete a customer.","name":"crm__delete_customer","parameters":{"type":"object","properties":{}},"strict":false,"type":"function"}`
		search   = `{"type":"tool_search"}`
	)
	cases := []struct {
		name  string
		opts  []Option
		tools []tool.Tool
		want  string
	}{
		{"gpt-5.4 defers", []Option{WithModel("gpt-5.4")}, tools, `[` + clock + `,` + invoiceD + `,` + deleteD + `,` + search + `]`},
		{"a later model through a gateway", []Option{WithModel("openai/gpt-5.5-mini")}, tools[1:2], `[` + invoiceD + `,` + search + `]`},
		{"none deferred", []Option{WithModel("gpt-5.4")}, tools[:1], `[` + clock + `]`},
		{"a model without tool_search", []Option{WithModel("gpt-5")}, tools, `[` + clock + `,` + invoice + `,` + deleteU + `]`},
		{"forced on for a deployment name", []Option{WithModel("my-deployment"), WithToolSearch(true)}, tools[2:], `[` + deleteD + `,` + search + `]`},
		{"forced off", []Option{WithModel("gpt-5.4"), WithToolSearch(false)}, tools[1:], `[` + invoice + `,` + deleteU + `]`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := newFake(t, sse(textAnswer("ok")...))
			req := userReq("hi")
			req.Tools = c.tools
			if _, _, err := providertest.CollectContext(t.Context(), f.provider(t, c.opts...), req); err != nil {
				t.Fatal(err)
			}
			if got := rawTools(t, f, 0); got != c.want {
				t.Fatalf("tools\n%s\nwant\n%s", got, c.want)
			}
		})
	}
}

func TestSupportsToolSearch(t *testing.T) {
	cases := map[string]bool{
		"gpt-5.4": true, "gpt-5.4-mini": true, "gpt-5.4-2026-03-05": true, "GPT-5.5": true, "gpt-5.10": true,
		"gpt-6": true, "gpt-6.1-pro": true, "openai/gpt-5.4": true, " gpt-5.4 ": true,
		"gpt-5": false, "gpt-5.3-codex": false, "gpt-5-mini": false, "gpt-4.1": false, "gpt-4o": false,
		"gpt-5o": false, "gpt-5.4o": false, "o3": false, "gpt-oss-120b": false, "": false, "gpt-": false, "gpt-5.": false,
		"my-gpt-5.4-deployment": false,
	}
	for model, want := range cases {
		if got := SupportsToolSearch(model); got != want {
			t.Errorf("SupportsToolSearch(%q) = %v, want %v", model, got, want)
		}
	}
}

// What the hosted search adds to an answer, as the Responses API's guide
// shows it: the search the model ran, and the functions it loaded.
const (
	searchCall   = `{"id":"tsc_1","type":"tool_search_call","execution":"server","call_id":null,"status":"completed","arguments":{"query":"send an invoice"}}`
	searchOutput = `{"id":"tso_1","type":"tool_search_output","execution":"server","call_id":null,"status":"completed","tools":[{"type":"function","name":"crm__send_invoice","description":"Email an invoice.","defer_loading":true,"parameters":{"type":"object","properties":{"id":{"type":"string"}},"required":["id"],"additionalProperties":false},"strict":true}]}`
)

// searchedCalls streams an answer with a tool search, its output, and the
// calls given, each a function_call item's JSON.
func searchedCalls(search, output string, calls ...string) []string {
	evs := []string{
		created(),
		added(0, `{"id":"tsc_1","type":"tool_search_call","execution":"server","call_id":null,"status":"in_progress","arguments":{}}`),
		done(0, search),
		added(1, `{"id":"tso_1","type":"tool_search_output","execution":"server","call_id":null,"status":"in_progress","tools":[]}`),
		done(1, output),
	}
	for i, c := range calls {
		evs = append(evs, added(2+i, c), done(2+i, c))
	}
	return append(evs, completed("completed", ""))
}

// wholeSearched is the same answer as one response, indented as the API
// writes a whole body.
func wholeSearched(t *testing.T, search, output string, calls ...string) string {
	t.Helper()
	body := `{` + respHead + `,"status":"completed","output":[` + strings.Join(append([]string{search, output}, calls...), ",") +
		`],"usage":` + usageJSON(10, 5) + `}`
	var b bytes.Buffer
	if err := json.Indent(&b, []byte(body), "", "  "); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// nativeSession is toolsearch's Native over this adapter: a registry with
// clock and two deferred crm tools, and a Step whose handlers record the
// server's loads and refuse what it did not load.
func nativeSession(t *testing.T) (*toolsearch.Search, *loop.Step) {
	t.Helper()
	reg := tool.NewRegistry()
	ok := func(_ context.Context, _ tool.Sandbox, args map[string]any) (any, error) {
		return "invoice " + str(args["id"]) + " sent", nil
	}
	_ = reg.Register(tool.Tool{Name: "clock", Description: "Tell the time."}, ok)
	_ = reg.Register(tool.Tool{Name: "crm__send_invoice", Description: "Email an invoice.",
		Schema: json.RawMessage(`{"type":"object","properties":{"id":{"type":"string"}},"required":["id"],"additionalProperties":false}`)}, ok)
	_ = reg.Register(tool.Tool{Name: "crm__delete_customer", Description: "Delete a customer."}, ok)
	s, err := toolsearch.New(reg, toolsearch.Defer("crm"), toolsearch.Native())
	if err != nil {
		t.Fatal(err)
	}
	return s, loop.New(loop.WithHandlers(s.Recorder(), xtool.NewHandler(reg, xtool.WithGate(s.Gate(nil)))),
		loop.WithInvokeOptions(xtool.WithFilteredTools(reg, s.Filter())))
}

// inputs is request i's input items as they went on the wire.
func inputs(t *testing.T, f *fakeServer, i int) []string {
	t.Helper()
	var body struct {
		Input []json.RawMessage `json:"input"`
	}
	if err := json.Unmarshal(f.requests()[i].Raw, &body); err != nil {
		t.Fatal(err)
	}
	out := make([]string, len(body.Input))
	for j, in := range body.Input {
		out[j] = string(in)
	}
	return out
}

// TestNativeToolSearchSession runs toolsearch's Native mode over this
// adapter through loop.Run, streamed and whole: the first request defers
// the crm tools beside the hosted tool_search, the server's search loads
// one and the model calls it, the call runs as an ordinary ToolCall, the
// activation is recorded in the thread, and the second request sends the
// search's items back as they came, in their place.
func TestNativeToolSearchSession(t *testing.T) {
	call := callItem(2, "call_inv", "crm__send_invoice", `{"id":"42"}`)
	for _, stream := range []bool{true, false} {
		name := map[bool]string{true: "streamed", false: "whole"}[stream]
		t.Run(name, func(t *testing.T) {
			first := sse(searchedCalls(searchCall, searchOutput, call)...)
			if !stream {
				first = jsonReply(200, wholeSearched(t, searchCall, searchOutput, call))
			}
			next := sse(textAnswer("Sent.")...)
			if !stream {
				next = jsonReply(200, `{`+respHead+`,"status":"completed","output":[`+messageItem(0, "Sent.")+`],"usage":`+usageJSON(1, 1)+`}`)
			}
			f := newFake(t, first, next)
			s, step := nativeSession(t)
			st := ledger.NewThread()
			_ = st.Append(ledger.RoleUser, artifact.Text{Content: "Send invoice 42."})
			if _, err := step.Run(t.Context(), st, f.provider(t, WithModel("gpt-5.4"), WithStreaming(stream))); err != nil {
				t.Fatal(err)
			}

			tools := rawTools(t, f, 0)
			for _, want := range []string{`"name":"clock","parameters"`, `{"defer_loading":true,"description":"Email an invoice.","name":"crm__send_invoice"`,
				`{"defer_loading":true,"description":"Delete a customer.","name":"crm__delete_customer"`} {
				if !strings.Contains(tools, want) {
					t.Errorf("first request's tools lack %s:\n%s", want, tools)
				}
			}
			if !strings.HasSuffix(tools, `,{"type":"tool_search"}]`) || strings.Count(tools, "tool_search") != 1 {
				t.Errorf("first request's tools do not end with the hosted search alone: %s", tools)
			}

			turns := st.Turns()
			answer := turns[1].Artifacts
			if len(answer) < 3 {
				t.Fatalf("answer %#v", answer)
			}
			for j, want := range []struct{ typ, data string }{{TypeToolSearchCall, searchCall}, {TypeToolSearchOutput, searchOutput}} {
				o, ok := answer[j].(artifact.Opaque)
				if !ok || o.Provider != OpaqueProvider || o.Type != want.typ {
					t.Fatalf("answer item %d = %#v", j, answer[j])
				}
				var compact bytes.Buffer
				if err := json.Compact(&compact, []byte(o.Data)); err != nil || compact.String() != want.data {
					t.Errorf("item %d kept as %s", j, o.Data)
				}
				if stream && o.Data != want.data {
					t.Errorf("streamed item %d not kept byte for byte: %s", j, o.Data)
				}
				// The ledger's JSON keeps it as it is.
				b, err := artifact.Marshal(o)
				if err != nil {
					t.Fatal(err)
				}
				if back, err := artifact.Unmarshal(b); err != nil || back != o {
					t.Errorf("Opaque through its JSON: %#v, %v", back, err)
				}
			}
			if c, ok := answer[2].(artifact.ToolCall); !ok || c != (artifact.ToolCall{ID: "call_inv", Name: "crm__send_invoice", Arguments: `{"id":"42"}`}) {
				t.Fatalf("the call = %#v", answer[2])
			}
			if got := s.Active(st); len(got) != 1 || got[0].Tool != "crm__send_invoice" {
				t.Fatalf("activations %+v", got)
			}
			if r := turns[2].Artifacts[0].(artifact.ToolResult); r.IsError || r.Content != "invoice 42 sent" {
				t.Fatalf("the call's result: %+v", r)
			}

			want := []string{
				`{"type":"message","role":"user","content":"Send invoice 42."}`,
				searchCall,
				searchOutput,
				`{"type":"function_call","call_id":"call_inv","name":"crm__send_invoice","arguments":"{\"id\":\"42\"}"}`,
				`{"type":"function_call_output","call_id":"call_inv","output":"invoice 42 sent"}`,
			}
			if got := inputs(t, f, 1); !reflect.DeepEqual(got, want) {
				t.Errorf("second input =\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
			}
		})
	}
}

// TestToolSearchLoadsToolNeverOffered: a tool_search_output naming a tool
// the request never offered. The answer is kept as the server sent it,
// and goes back so; the record loads only what the Search defers; the
// model's call to the stranger is refused as an unknown tool, beside the
// call to the tool it did load, which runs.
func TestToolSearchLoadsToolNeverOffered(t *testing.T) {
	output := `{"id":"tso_1","type":"tool_search_output","execution":"server","call_id":null,"status":"completed","tools":[` +
		`{"type":"function","name":"crm__wipe_all","description":"Wipe every record.","defer_loading":true,"parameters":{"type":"object","properties":{}},"strict":true},` +
		`{"type":"function","name":"crm__send_invoice","description":"Email an invoice.","defer_loading":true,"parameters":{"type":"object","properties":{"id":{"type":"string"}},"required":["id"],"additionalProperties":false},"strict":true}]}`
	f := newFake(t, sse(searchedCalls(searchCall, output,
		callItem(2, "call_wipe", "crm__wipe_all", `{}`),
		callItem(3, "call_inv", "crm__send_invoice", `{"id":"7"}`))...), sse(textAnswer("Done.")...))
	s, step := nativeSession(t)
	st := ledger.NewThread()
	_ = st.Append(ledger.RoleUser, artifact.Text{Content: "Wipe the CRM, then send invoice 7."})
	if _, err := step.Run(t.Context(), st, f.provider(t, WithModel("gpt-5.4"))); err != nil {
		t.Fatal(err)
	}
	if got := s.Active(st); len(got) != 1 || got[0].Tool != "crm__send_invoice" {
		t.Fatalf("activations %+v", got)
	}
	results := st.Turns()[2].Artifacts
	if r := results[0].(artifact.ToolResult); !r.IsError || !strings.HasPrefix(r.Content, `unknown tool "crm__wipe_all".`) {
		t.Fatalf("the call to a tool never offered: %+v", r)
	}
	if r := results[1].(artifact.ToolResult); r.IsError || r.Content != "invoice 7 sent" {
		t.Fatalf("the call to the tool loaded: %+v", r)
	}
	if got := inputs(t, f, 1); len(got) < 3 || got[2] != output {
		t.Fatalf("the output item did not go back as it came: %v", got)
	}
}

// TestToolSearchMalformed: tool search items this adapter cannot send
// back as they came fail the answer as ErrMalformed, streamed and whole.
func TestToolSearchMalformed(t *testing.T) {
	out := func(tools string) string {
		return `{"id":"tso_1","type":"tool_search_output","execution":"server","call_id":null,"status":"completed"` + tools + `}`
	}
	cases := []struct {
		name, search, output, detail string
	}{
		{"tools not a list", searchCall, out(`,"tools":{"name":"x"}`), "without a list of tools"},
		{"tools null", searchCall, out(`,"tools":null`), "without a list of tools"},
		{"no tools", searchCall, out(``), "without a list of tools"},
		{"a tool not an object", searchCall, out(`,"tools":["crm__send_invoice"]`), "whose tools are not objects"},
		{"a tool without a type", searchCall, out(`,"tools":[{"name":"crm__send_invoice"}]`), "whose tool 0 has no type"},
		{"a search the client must run", `{"id":"tsc_1","type":"tool_search_call","execution":"client","call_id":"call_s","status":"completed","arguments":{"paths":["crm"]}}`,
			searchOutput, `tool_search_call with execution "client"`},
		{"an output the client ran", searchCall, strings.Replace(searchOutput, `"execution":"server"`, `"execution":"client"`, 1), `tool_search_output with execution "client"`},
	}
	for _, c := range cases {
		for _, stream := range []bool{true, false} {
			t.Run(c.name+map[bool]string{true: "/streamed", false: "/whole"}[stream], func(t *testing.T) {
				reply := sse(searchedCalls(c.search, c.output)...)
				if !stream {
					reply = jsonReply(200, `{`+respHead+`,"status":"completed","output":[`+c.search+`,`+c.output+`]}`)
				}
				f := newFake(t, reply)
				_, _, err := providertest.CollectContext(t.Context(), f.provider(t, WithModel("gpt-5.4"), WithStreaming(stream)), userReq("x"))
				kind(ErrMalformed, c.detail)(t, err)
			})
		}
	}
	t.Run("function call arguments not a string", func(t *testing.T) {
		f := newFake(t, sse(created(), added(0, `{"type":"function_call","call_id":"c1","name":"n"}`),
			done(0, `{"type":"function_call","call_id":"c1","name":"n","arguments":{"id":"42"}}`), completed("completed", "")))
		_, _, err := providertest.CollectContext(t.Context(), f.provider(t), userReq("x"))
		kind(ErrMalformed, "arguments are not a string")(t, err)
	})
}

// TestOpaqueInRequests: this adapter's own Opaque goes back as its JSON
// and must be JSON; another adapter's is left out of every turn.
func TestOpaqueInRequests(t *testing.T) {
	claude := artifact.Opaque{Provider: "anthropic", Type: "server_tool_use", Data: `{"type":"server_tool_use"}`}
	turns := []ledger.Turn{
		{Role: ledger.RoleSystem, Artifacts: []artifact.Artifact{artifact.Text{Content: "Be brief."}, claude}},
		{Role: ledger.RoleUser, Artifacts: []artifact.Artifact{artifact.Text{Content: "hi"}, claude}},
		{Role: ledger.RoleAssistant, Artifacts: []artifact.Artifact{
			claude,
			artifact.Opaque{Provider: OpaqueProvider, Type: TypeToolSearchCall, Data: searchCall},
			artifact.ToolCall{ID: "c1", Name: "clock", Arguments: "{}"},
		}},
		{Role: ledger.RoleTool, Artifacts: []artifact.Artifact{artifact.ToolResult{ToolCallID: "c1", Name: "clock", Content: "noon"}, claude}},
	}
	f := newFake(t, sse(textAnswer("ok")...))
	if _, _, err := providertest.CollectContext(t.Context(), f.provider(t), &provider.Request{Turns: turns}); err != nil {
		t.Fatal(err)
	}
	want := []string{
		`{"type":"message","role":"system","content":"Be brief."}`,
		`{"type":"message","role":"user","content":"hi"}`,
		searchCall,
		`{"type":"function_call","call_id":"c1","name":"clock","arguments":"{}"}`,
		`{"type":"function_call_output","call_id":"c1","output":"noon"}`,
	}
	if got := inputs(t, f, 0); !reflect.DeepEqual(got, want) {
		t.Errorf("input =\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}

	bad := []ledger.Turn{turns[1], {Role: ledger.RoleAssistant, Artifacts: []artifact.Artifact{
		artifact.Opaque{Provider: OpaqueProvider, Type: TypeToolSearchOutput, Data: `{"type":`}}}}
	_, _, err := providertest.CollectContext(t.Context(), newFake(t).provider(t), &provider.Request{Turns: bad})
	var re *RequestError
	if !errors.As(err, &re) || re.Turn != 1 || !strings.Contains(err.Error(), "a stored tool_search_output item is not JSON") {
		t.Fatalf("err = %v", err)
	}
}
