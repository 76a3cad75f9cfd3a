package anthropic

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/lodeworks/lode/artifact"
	"github.com/lodeworks/lode/ledger"
	"github.com/lodeworks/lode/loop"
	"github.com/lodeworks/lode/provider"
	"github.com/lodeworks/lode/tool"
	xtool "github.com/lodeworks/lode/x/tool"
	"github.com/lodeworks/lode/x/tool/toolsearch"
)

// rawTools is the "tools" array of request i as it went on the wire.
func rawTools(t *testing.T, f *fakeAPI, i int) string {
	t.Helper()
	var body struct {
		Tools json.RawMessage `json:"tools"`
	}
	if err := json.Unmarshal([]byte(f.raw[i]), &body); err != nil {
		t.Fatal(err)
	}
	return string(body.Tools)
}

// TestDeferLoadingRequest: tools marked Deferred go with defer_loading,
// after the BM25 tool search tool, and the cache breakpoint goes on the
// last tool sent in the prompt.
func TestDeferLoadingRequest(t *testing.T) {
	tools := []tool.Tool{
		{Name: "clock", Description: "Tell the time."},
		{Name: "crm__send_invoice", Description: "Email an invoice.", Schema: json.RawMessage(`{"type":"object","properties":{"id":{"type":"string"}},"required":["id"]}`), Deferred: true},
		{Name: "crm__delete_customer", Description: "Delete a customer.", Deferred: true},
	}
	cases := []struct {
		name  string
		opts  []Option
		tools []tool.Tool
		want  string
	}{
		{"deferred", []Option{WithCache(CacheStable)}, tools,
			`[{"input_schema":{"properties":{},"type":"object"},"name":"clock","description":"Tell the time."},` +
				`{"type":"tool_search_tool_bm25_20251119","cache_control":{"type":"ephemeral"},"name":"tool_search_tool_bm25"},` +
				`{"input_schema":{"properties":{"id":{"type":"string"}},"required":["id"],"type":"object"},"name":"crm__send_invoice","defer_loading":true,"description":"Email an invoice."},` +
				`{"input_schema":{"properties":{},"type":"object"},"name":"crm__delete_customer","defer_loading":true,"description":"Delete a customer."}]`},
		{"none deferred", []Option{WithCache(CacheStable)}, tools[:1],
			`[{"input_schema":{"properties":{},"type":"object"},"name":"clock","description":"Tell the time.","cache_control":{"type":"ephemeral"}}]`},
		{"cache off", []Option{WithCache(CacheOff)}, tools[1:2],
			`[{"type":"tool_search_tool_bm25_20251119","name":"tool_search_tool_bm25"},` +
				`{"input_schema":{"properties":{"id":{"type":"string"}},"required":["id"],"type":"object"},"name":"crm__send_invoice","defer_loading":true,"description":"Email an invoice."}]`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := newFake(t, textAnswer("ok"))
			if _, _, err := collect(f.provider(t, c.opts...), &provider.Request{Turns: []ledger.Turn{userTurn("hi")}, Tools: c.tools}); err != nil {
				t.Fatal(err)
			}
			if got := rawTools(t, f, 0); got != c.want {
				t.Fatalf("tools\n%s\nwant\n%s", got, c.want)
			}
		})
	}
}

// An answer in which the server searched its deferred tools, loaded one,
// and the model called it.
const (
	nativeUse    = `{"type":"server_tool_use","id":"srvtoolu_01","name":"tool_search_tool_bm25","input":{"query":"send an invoice"}}`
	nativeResult = `{"type":"tool_search_tool_result","tool_use_id":"srvtoolu_01","content":{"type":"tool_search_tool_search_result","tool_references":[{"type":"tool_reference","tool_name":"crm__send_invoice"}]}}`
)

// TestNativeToolSearchSession runs toolsearch's Native mode over this
// adapter: the first request defers the crm tools, the server's search
// loads one, the call runs, the server's blocks go back as they came, and
// the activation is recorded in the thread as lode's own search would; a
// call to a deferred tool the server did not load is refused as unknown.
func TestNativeToolSearchSession(t *testing.T) {
	answer := reply{body: `{"id":"msg_1","type":"message","role":"assistant","model":"claude-sonnet-4-5","content":[` +
		nativeUse + `,` + nativeResult + `,` +
		`{"type":"tool_use","id":"toolu_01","name":"crm__send_invoice","input":{"id":"42"}},` +
		`{"type":"tool_use","id":"toolu_02","name":"crm__delete_customer","input":{}}],` +
		`"stop_reason":"tool_use","stop_sequence":null,"usage":{"input_tokens":100,"output_tokens":20}}`}
	done := reply{body: `{"id":"msg_2","type":"message","role":"assistant","model":"claude-sonnet-4-5","content":[{"type":"text","text":"Sent."}],"stop_reason":"end_turn","stop_sequence":null,"usage":{"input_tokens":1,"output_tokens":1}}`}
	f := newFake(t, answer, done)
	p := f.provider(t, WithStreaming(false), WithCache(CacheOff))

	reg := tool.NewRegistry()
	ok := func(context.Context, tool.Sandbox, map[string]any) (any, error) { return "invoice sent", nil }
	_ = reg.Register(tool.Tool{Name: "clock", Description: "Tell the time."}, ok)
	_ = reg.Register(tool.Tool{Name: "crm__send_invoice", Description: "Email an invoice."}, ok)
	_ = reg.Register(tool.Tool{Name: "crm__delete_customer", Description: "Delete a customer."}, ok)
	s, err := toolsearch.New(reg, toolsearch.Defer("crm"), toolsearch.Native())
	if err != nil {
		t.Fatal(err)
	}
	step := loop.New(loop.WithHandlers(s.Recorder(), xtool.NewHandler(reg, xtool.WithGate(s.Gate(nil)))), loop.WithInvokeOptions(xtool.WithFilteredTools(reg, s.Filter())))
	st := ledger.NewThread()
	_ = st.Append(ledger.RoleUser, artifact.Text{Content: "Send invoice 42."})
	if _, err := step.Run(context.Background(), st, p); err != nil {
		t.Fatal(err)
	}
	first := rawTools(t, f, 0)
	for _, want := range []string{`"name":"clock","description"`, `"type":"tool_search_tool_bm25_20251119"`, `"name":"crm__send_invoice","defer_loading":true`, `"name":"crm__delete_customer","defer_loading":true`} {
		if !strings.Contains(first, want) {
			t.Errorf("first request's tools lack %s:\n%s", want, first)
		}
	}
	if strings.Contains(first, `"tool_search"`) {
		t.Errorf("lode's search tool was sent beside the server's: %s", first)
	}
	second := f.raw[1]
	for _, want := range []string{nativeUse, nativeResult} {
		if !strings.Contains(second, want) {
			t.Errorf("the second request does not send back %s:\n%s", want, second)
		}
	}
	if got := s.Active(st); len(got) != 1 || got[0].Tool != "crm__send_invoice" {
		t.Fatalf("activations %+v", got)
	}
	turns := st.Turns()
	results := turns[len(turns)-2].Artifacts
	if r := results[0].(artifact.ToolResult); r.IsError || r.Content != "invoice sent" {
		t.Fatalf("the call: %+v", r)
	}
	// The server's search did not load delete_customer: refused as unknown.
	if r := results[1].(artifact.ToolResult); !r.IsError || !strings.HasPrefix(r.Content, `unknown tool "crm__delete_customer".`) {
		t.Fatalf("the call to a tool the server did not load: %+v", r)
	}
	if names := slices.Collect(func(yield func(string) bool) {
		for _, a := range turns[1].Artifacts {
			if o, ok := a.(artifact.Opaque); ok && !yield(o.Type) {
				return
			}
		}
	}); !slices.Equal(names, []string{"server_tool_use", "tool_search_tool_result"}) {
		t.Fatalf("opaque blocks kept: %v", names)
	}
}
