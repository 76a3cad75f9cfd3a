package toolsearch_test

import (
	"context"
	"slices"
	"testing"

	"github.com/lodeworks/lode/artifact"
	"github.com/lodeworks/lode/ledger"
	toolpkg "github.com/lodeworks/lode/tool"
	xtool "github.com/lodeworks/lode/x/tool"
	"github.com/lodeworks/lode/x/tool/toolsearch"
)

// TestRecorderReadsServerResults: Recorder loads what a provider's own
// search says it loaded, in Anthropic's block and in the Responses API's
// output item, and nothing the Search does not defer or the base hides.
func TestRecorderReadsServerResults(t *testing.T) {
	reg := toolpkg.NewRegistry()
	ok := func(context.Context, toolpkg.Sandbox, map[string]any) (any, error) { return "ok", nil }
	for _, n := range []string{"clock", "crm__send_invoice", "crm__delete_customer", "crm__secret"} {
		_ = reg.Register(toolpkg.Tool{Name: n}, ok)
	}
	hide := func(_ context.Context, _ ledger.State, tools []toolpkg.Tool) []toolpkg.Tool {
		return slices.DeleteFunc(tools, func(t toolpkg.Tool) bool { return t.Name == "crm__secret" })
	}
	cases := []struct {
		name string
		art  artifact.Artifact
		want []string
	}{
		{"anthropic", artifact.Opaque{Provider: "anthropic", Type: toolsearch.NativeResultType,
			Data: `{"type":"tool_search_tool_result","tool_use_id":"srvtoolu_01","content":{"type":"tool_search_tool_search_result","tool_references":[{"type":"tool_reference","tool_name":"crm__send_invoice"}]}}`},
			[]string{"crm__send_invoice"}},
		{"responses", artifact.Opaque{Provider: "openai.responses", Type: toolsearch.NativeOutputType,
			Data: `{"id":"tso_1","type":"tool_search_output","execution":"server","call_id":null,"status":"completed","tools":[` +
				`{"type":"function","name":"crm__send_invoice"},{"type":"function","name":"crm__delete_customer"}]}`},
			[]string{"crm__send_invoice", "crm__delete_customer"}},
		{"responses: not deferred, never offered, hidden, not a function", artifact.Opaque{Provider: "openai.responses", Type: toolsearch.NativeOutputType,
			Data: `{"type":"tool_search_output","tools":[{"type":"function","name":"clock"},{"type":"function","name":"crm__wipe_all"},` +
				`{"type":"function","name":"crm__secret"},{"type":"namespace","name":"crm__delete_customer"}]}`},
			nil},
		{"responses: not JSON", artifact.Opaque{Provider: "openai.responses", Type: toolsearch.NativeOutputType, Data: `{"tools":`}, nil},
		{"responses: tools not a list", artifact.Opaque{Provider: "openai.responses", Type: toolsearch.NativeOutputType, Data: `{"tools":{"name":"crm__send_invoice"}}`}, nil},
		{"another type", artifact.Opaque{Provider: "openai.responses", Type: "tool_search_call", Data: `{"tools":[{"type":"function","name":"crm__send_invoice"}]}`}, nil},
		{"not opaque", artifact.Text{Content: "crm__send_invoice"}, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := newSearch(t, reg, toolsearch.Native(), toolsearch.WithBase(hide))
			st := ledger.NewThread()
			_ = st.Append(ledger.RoleUser, artifact.Text{Content: "hi"})
			if err := s.Recorder().Handle(xtool.WithCaller(t.Context(), st), c.art, nil); err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, a := range s.Active(st) {
				got = append(got, a.Tool)
			}
			slices.Sort(got)
			want := slices.Sorted(slices.Values(c.want))
			if !slices.Equal(got, want) {
				t.Fatalf("loaded %v, want %v", got, want)
			}
		})
	}
}
