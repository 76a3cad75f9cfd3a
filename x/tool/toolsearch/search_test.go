package toolsearch_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/lodeworks/lode/artifact"
	"github.com/lodeworks/lode/ledger"
	"github.com/lodeworks/lode/loop"
	"github.com/lodeworks/lode/provider"
	toolpkg "github.com/lodeworks/lode/tool"
	"github.com/lodeworks/lode/x/policy"
	"github.com/lodeworks/lode/x/provider/script"
	xtool "github.com/lodeworks/lode/x/tool"
	"github.com/lodeworks/lode/x/tool/toolsearch"
)

func names(tools []toolpkg.Tool) []string {
	out := make([]string, len(tools))
	for i, t := range tools {
		out[i] = t.Name
	}
	return out
}

func newSearch(t testing.TB, reg toolpkg.Registry, opts ...toolsearch.Option) *toolsearch.Search {
	t.Helper()
	s, err := toolsearch.New(reg, append([]toolsearch.Option{toolsearch.Defer("crm", "notes")}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// offer is what a turn on st would be offered.
func offer(t testing.TB, reg toolpkg.Registry, s *toolsearch.Search, st ledger.State) []string {
	t.Helper()
	var req provider.Request
	if err := xtool.WithFilteredTools(reg, s.Filter()).ApplyInvoke(context.Background(), st, &req); err != nil {
		t.Fatal(err)
	}
	return names(req.Tools)
}

// TestFirstRequestCarriesCoreTools mounts 1,000 tools of an MCP server
// and a pack, all deferred: the first request carries the core tool and
// the search tool only.
func TestFirstRequestCarriesCoreTools(t *testing.T) {
	reg := mounted(t, 1000)
	if n := len(reg.Tools()); n != 1000+2+2+1 {
		t.Fatalf("the registry holds %d tools", n)
	}
	s := newSearch(t, reg)
	prov := script.Play(script.Text("hello"))
	step := loop.New(loop.WithHandlers(xtool.NewHandler(reg)), loop.WithInvokeOptions(xtool.WithFilteredTools(reg, s.Filter())))
	st := ledger.NewThread()
	_ = st.Append(ledger.RoleUser, artifact.Text{Content: "hi"})
	if _, err := step.Run(context.Background(), st, prov); err != nil {
		t.Fatal(err)
	}
	got := names(prov.Requests()[0].Tools)
	if want := []string{"clock", toolsearch.DefaultName}; !slices.Equal(got, want) {
		t.Fatalf("first request offers %v, want %v", got, want)
	}
}

func TestSearchFindsByDescription(t *testing.T) {
	reg := mounted(t, 1000)
	s := newSearch(t, reg)
	_, desc := generated(537)
	cases := []struct {
		query string
		want  string
	}{
		{"email an invoice to a customer", invoiceTool},
		{"send invoices", invoiceTool},
		{"billing PDF", invoiceTool},
		{"remove customer records", deleteTool},
		{"notebook words", "notes_find"},
		{strings.Fields(desc)[0] + " " + strings.Fields(desc)[2] + " batch 537", "crm__op_0537"},
	}
	for _, tc := range cases {
		t.Run(tc.query, func(t *testing.T) {
			m := s.Query(context.Background(), nil, tc.query, 3)
			if len(m) == 0 || m[0].Name != tc.want {
				t.Fatalf("Query(%q) = %+v, want %s first", tc.query, m, tc.want)
			}
			if !m[0].Deferred || strings.Contains(m[0].Description, "\n") {
				t.Fatalf("match %+v: want deferred, one line", m[0])
			}
		})
	}
	if m := s.Query(context.Background(), nil, "zebra xylophone", 3); len(m) != 0 {
		t.Fatalf("a query matching nothing found %+v", m)
	}
	if m := s.Query(context.Background(), nil, "search tools", 20); slices.ContainsFunc(m, func(m toolsearch.Match) bool { return m.Name == toolsearch.DefaultName }) {
		t.Fatalf("the search found itself: %+v", m)
	}
}

// call runs one call through a Handler inside a turn that offered what
// the search's filter offers on st.
func call(t testing.TB, reg toolpkg.Registry, s *toolsearch.Search, st ledger.State, c artifact.ToolCall, opts ...xtool.HandlerOption) artifact.ToolResult {
	t.Helper()
	var res artifact.ToolResult
	prov := script.Play(script.Reply(c), script.Text("done"))
	h := xtool.NewHandler(reg, opts...)
	grab := loop.HandlerFunc(func(_ context.Context, a artifact.Artifact, _ loop.Emitter) error {
		if r, ok := a.(artifact.ToolResult); ok && r.ToolCallID == c.ID {
			res = r
		}
		return nil
	})
	step := loop.New(loop.WithHandlers(h), loop.WithInvokeOptions(xtool.WithFilteredTools(reg, s.Filter())))
	_ = st.Append(ledger.RoleUser, artifact.Text{Content: "go"})
	if _, err := step.Run(context.Background(), st, prov); err != nil {
		t.Fatal(err)
	}
	for _, turn := range st.Turns() {
		for _, a := range turn.Artifacts {
			_ = grab.Handle(context.Background(), a, nil)
		}
	}
	return res
}

// TestCallBeforeActivationIsUnknown: a deferred tool not loaded is
// refused in the very words of a tool that does not exist.
func TestCallBeforeActivationIsUnknown(t *testing.T) {
	reg := mounted(t, 1000)
	s := newSearch(t, reg)
	deferred := call(t, reg, s, ledger.NewThread(), artifact.ToolCall{ID: "1", Name: invoiceTool, Arguments: `{}`})
	const missing = "crm__send_invoicx"
	unknown := call(t, reg, s, ledger.NewThread(), artifact.ToolCall{ID: "1", Name: missing, Arguments: `{}`})
	if !deferred.IsError || !unknown.IsError {
		t.Fatalf("results %+v, %+v: want errors", deferred, unknown)
	}
	if want := strings.ReplaceAll(unknown.Content, missing, invoiceTool); deferred.Content != want {
		t.Fatalf("deferred call refused with\n%s\nwant\n%s", deferred.Content, want)
	}
	if want := `unknown tool "crm__send_invoice". Tools available in this turn: clock, tool_search.`; deferred.Content != want {
		t.Fatalf("refusal %q, want %q", deferred.Content, want)
	}
}

// TestScriptedSession: the model searches, calls what it found, and
// answers; a call to a tool it did not load, made beside the search,
// is refused.
func TestScriptedSession(t *testing.T) {
	reg := mounted(t, 1000)
	s := newSearch(t, reg)
	prov := script.Play(
		script.Reply(
			artifact.ToolCall{ID: "s1", Name: toolsearch.DefaultName, Arguments: `{"query":"email invoice to customer","limit":2}`},
			artifact.ToolCall{ID: "d1", Name: deleteTool, Arguments: `{}`},
		),
		script.Call("c1", invoiceTool, `{"id":"42"}`),
		script.Text("The invoice is on its way."),
	)
	step := loop.New(loop.WithHandlers(xtool.NewHandler(reg)), loop.WithInvokeOptions(xtool.WithFilteredTools(reg, s.Filter())))
	st := ledger.NewThread()
	_ = st.Append(ledger.RoleUser, artifact.Text{Content: "Send the invoice to customer 42."})
	if _, err := step.Run(context.Background(), st, prov); err != nil {
		t.Fatal(err)
	}
	reqs := prov.Requests()
	if len(reqs) != 3 {
		t.Fatalf("%d requests", len(reqs))
	}
	// The search's two matches are loaded: the invoice tool and the other
	// tool that speaks of customers.
	if got, want := names(reqs[1].Tools), []string{"clock", deleteTool, invoiceTool, toolsearch.DefaultName}; !slices.Equal(got, want) {
		t.Fatalf("second request offers %v, want %v", got, want)
	}
	results := map[string]artifact.ToolResult{}
	for _, turn := range st.Turns() {
		for _, a := range turn.Artifacts {
			if r, ok := a.(artifact.ToolResult); ok {
				results[r.ToolCallID] = r
			}
		}
	}
	if r := results["s1"]; r.IsError || !strings.Contains(r.Content, "- "+invoiceTool+": Email an invoice as a PDF to a customer's billing address.") {
		t.Fatalf("search result %+v", r)
	}
	if r := results["d1"]; !r.IsError || !strings.HasPrefix(r.Content, `unknown tool "crm__delete_customer".`) {
		t.Fatalf("call before loading: %+v", r)
	}
	if r := results["c1"]; r.IsError || r.Content != "invoice sent" {
		t.Fatalf("call after loading: %+v", r)
	}
	if got := s.Active(st); len(got) != 2 || got[0].Tool != invoiceTool || got[0].At != 2 {
		t.Fatalf("activations %+v", got)
	}
}

// roleFilter hides the delete tool from every caller whose role is not
// admin, as a policy would.
func roleFilter(_ context.Context, st ledger.State, tools []toolpkg.Tool) []toolpkg.Tool {
	if st != nil {
		if r, _ := st.Metadata("role"); r == "admin" {
			return tools
		}
	}
	return slices.DeleteFunc(slices.Clone(tools), func(t toolpkg.Tool) bool { return t.Name == deleteTool })
}

// TestRoleNeverFinds: a tool the caller's role may not use is never
// found, never loaded, and refused like an unknown tool.
func TestRoleNeverFinds(t *testing.T) {
	reg := mounted(t, 1000)
	s := newSearch(t, reg, toolsearch.WithBase(roleFilter))
	ctx := context.Background()
	viewer := ledger.NewThread(ledger.WithMetadata(map[string]string{"role": "viewer"}))
	admin := ledger.NewThread(ledger.WithMetadata(map[string]string{"role": "admin"}))
	found := func(st ledger.State) bool {
		return slices.ContainsFunc(s.Query(ctx, st, "delete customer records", 20), func(m toolsearch.Match) bool { return m.Name == deleteTool })
	}
	if found(viewer) || found(nil) {
		t.Fatal("a viewer found the delete tool")
	}
	if !found(admin) {
		t.Fatal("an admin did not find the delete tool")
	}
	got, err := s.Activate(ctx, viewer, deleteTool, invoiceTool)
	if err != nil || !slices.Equal(got, []string{invoiceTool}) {
		t.Fatalf("Activate = %v, %v; want only %s", got, err, invoiceTool)
	}
	// A record written by hand (or by an admin's search on a thread whose
	// role changed since) does not widen the role either.
	_ = viewer.SetMetadata(toolsearch.MetaKey, `[{"tool":"crm__delete_customer","at":0}]`)
	if o := offer(t, reg, s, viewer); slices.Contains(o, deleteTool) {
		t.Fatalf("the viewer is offered %v", o)
	}
	res := call(t, reg, s, viewer, artifact.ToolCall{ID: "x", Name: deleteTool, Arguments: `{}`})
	if !res.IsError || !strings.HasPrefix(res.Content, `unknown tool "crm__delete_customer".`) {
		t.Fatalf("viewer's call: %+v", res)
	}
	// Through the search tool, in a session.
	res = call(t, reg, s, viewer, artifact.ToolCall{ID: "y", Name: toolsearch.DefaultName, Arguments: `{"query":"delete customer"}`})
	if res.IsError || strings.Contains(res.Content, deleteTool) {
		t.Fatalf("viewer's search: %+v", res)
	}
}

func TestExpiry(t *testing.T) {
	reg := mounted(t, 10)
	s := newSearch(t, reg, toolsearch.WithExpiry(2))
	st := ledger.NewThread()
	_ = st.Append(ledger.RoleUser, artifact.Text{Content: "go"})
	_ = st.Append(ledger.RoleAssistant, artifact.ToolCall{ID: "1", Name: toolsearch.DefaultName, Arguments: `{"query":"x"}`})
	if _, err := s.Activate(context.Background(), st, invoiceTool); err != nil {
		t.Fatal(err)
	}
	_ = st.Append(ledger.RoleTool, artifact.ToolResult{ToolCallID: "1", Name: toolsearch.DefaultName, Content: "loaded"})
	for i, want := range []bool{true, true, false} {
		if got := slices.Contains(offer(t, reg, s, st), invoiceTool); got != want {
			t.Fatalf("after %d model turns: offered=%v, want %v", i, got, want)
		}
		_ = st.Append(ledger.RoleAssistant, artifact.Text{Content: "a turn"})
		_ = st.Append(ledger.RoleUser, artifact.Text{Content: "more"})
	}
	// Loading it again starts its count again.
	if _, err := s.Activate(context.Background(), st, invoiceTool); err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(offer(t, reg, s, st), invoiceTool) {
		t.Fatal("a tool loaded again is not offered")
	}
}

func TestCompactionDrops(t *testing.T) {
	for _, keep := range []bool{false, true} {
		reg := mounted(t, 10)
		var opts []toolsearch.Option
		if keep {
			opts = append(opts, toolsearch.KeepOnCompaction())
		}
		s := newSearch(t, reg, opts...)
		st := ledger.NewThread()
		_ = st.Append(ledger.RoleUser, artifact.Text{Content: "go"})
		_ = st.Append(ledger.RoleAssistant, artifact.ToolCall{ID: "1", Name: toolsearch.DefaultName, Arguments: `{"query":"x"}`})
		if _, err := s.Activate(context.Background(), st, invoiceTool); err != nil {
			t.Fatal(err)
		}
		_ = st.Append(ledger.RoleTool, artifact.ToolResult{ToolCallID: "1", Name: toolsearch.DefaultName, Content: "loaded"})
		_ = st.Append(ledger.RoleAssistant, artifact.Text{Content: "ok"})
		// A summary of turns 0-1 covers neither the search's result nor the load.
		_ = st.Append(ledger.RoleSystem, artifact.Summary{Content: "they began", First: 0, Last: 1})
		if !slices.Contains(offer(t, reg, s, st), invoiceTool) {
			t.Fatalf("keep=%v: a summary before the load dropped it", keep)
		}
		_ = st.Append(ledger.RoleSystem, artifact.Summary{Content: "they loaded a tool", First: 0, Last: 3})
		if got := slices.Contains(offer(t, reg, s, st), invoiceTool); got != keep {
			t.Fatalf("keep=%v: after a summary covering the load, offered=%v", keep, got)
		}
	}
}

// TestDamagedRecord: a record that is not JSON activates nothing, and the
// next load replaces it.
func TestDamagedRecord(t *testing.T) {
	reg := mounted(t, 10)
	s := newSearch(t, reg)
	for _, raw := range []string{`{`, `"x"`, `[{"tool":7}]`, `[{"tool":"clock","at":0}]`, `[{"tool":"no_such","at":-4}]`} {
		st := ledger.NewThread(ledger.WithMetadata(map[string]string{toolsearch.MetaKey: raw}))
		if got, want := offer(t, reg, s, st), []string{"clock", toolsearch.DefaultName}; !slices.Equal(got, want) {
			t.Fatalf("record %s: offered %v, want %v", raw, got, want)
		}
		if _, err := s.Activate(context.Background(), st, invoiceTool); err != nil {
			t.Fatal(err)
		}
		if !slices.Contains(offer(t, reg, s, st), invoiceTool) {
			t.Fatalf("record %s: a load after it is not offered", raw)
		}
	}
}

func TestBadInput(t *testing.T) {
	reg := mounted(t, 10)
	s := newSearch(t, reg)
	cases := []struct {
		args, want string
	}{
		{`{"query":""}`, "the query is empty: say in a few words what the tool you need does"},
		{`{"query":"   "}`, "the query is empty: say in a few words what the tool you need does"},
		{`{"query":"` + strings.Repeat("a", toolsearch.MaxQuery+1) + `"}`, "the query is 1001 bytes long; the limit is 1000: say in a few words what the tool you need does"},
		{`{"query":"zebra"}`, `No tools match "zebra". Try other words for what the tool does.`},
		{`{"query":"the of and"}`, `No tools match "the of and". Try other words for what the tool does.`},
	}
	for _, tc := range cases {
		res := call(t, reg, s, ledger.NewThread(), artifact.ToolCall{ID: "1", Name: toolsearch.DefaultName, Arguments: tc.args})
		if res.Content != tc.want {
			t.Errorf("args %.40s: %q, want %q", tc.args, res.Content, tc.want)
		}
	}
	for _, args := range []string{`{"query":"x","limit":0}`, `{"query":"x","limit":21}`, `{}`, `{"query":3}`, `{"query":"x","extra":1}`} {
		res := call(t, reg, s, ledger.NewThread(), artifact.ToolCall{ID: "1", Name: toolsearch.DefaultName, Arguments: args})
		if !res.IsError || !strings.HasPrefix(res.Content, "invalid arguments for tool_search: ") {
			t.Errorf("args %s: %+v, want a schema error", args, res)
		}
	}
	// Without a thread (an MCP call with no caller) a search lists and loads nothing.
	h := xtool.NewHandler(reg)
	res := h.Execute(context.Background(), artifact.ToolCall{ID: "1", Name: toolsearch.DefaultName, Arguments: `{"query":"invoice"}`})
	if res.IsError || !strings.HasPrefix(res.Content, "Tools that match (none could be loaded: this call has no thread to keep them in):\n- crm__send_invoice: ") {
		t.Fatalf("search with no thread: %+v", res)
	}
	if _, err := s.Activate(context.Background(), nil, invoiceTool); err == nil || err.Error() != "toolsearch: activate: no thread to record the activation in" {
		t.Fatalf("Activate(nil) = %v", err)
	}
}

func TestOptions(t *testing.T) {
	cases := []struct {
		name string
		opts []toolsearch.Option
		want string
	}{
		{"limit", []toolsearch.Option{toolsearch.WithLimit(21)}, "toolsearch: invalid option: WithLimit(21): give 1 to 20"},
		{"negative", []toolsearch.Option{toolsearch.WithLimit(-1)}, "toolsearch: invalid option: WithLimit(-1): give 1 to 20"},
		{"name", []toolsearch.Option{toolsearch.WithName("find tools")}, `toolsearch: invalid option: WithName: tool name "find tools" has ' ' at byte 4; only a-z, A-Z, 0-9, '_' and '-' are allowed`},
		{"blank", []toolsearch.Option{toolsearch.Defer("crm", " ")}, "toolsearch: invalid option: Defer: a name is blank"},
		{"all", []toolsearch.Option{toolsearch.Defer(""), toolsearch.WithLimit(99)},
			"toolsearch: invalid option: Defer: a name is blank\ntoolsearch: invalid option: WithLimit(99): give 1 to 20"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := toolsearch.New(toolpkg.NewRegistry(), tc.opts...)
			if err == nil || err.Error() != tc.want || !errors.Is(err, toolsearch.ErrOption) {
				t.Fatalf("New: %v, want %q", err, tc.want)
			}
		})
	}
	if _, err := toolsearch.New(nil); err == nil || err.Error() != "toolsearch: invalid option: a nil registry" {
		t.Fatalf("New(nil) = %v", err)
	}
	reg := toolpkg.NewRegistry()
	if _, err := toolsearch.New(reg); err != nil {
		t.Fatal(err)
	}
	if _, err := toolsearch.New(reg); err == nil || !errors.Is(err, toolpkg.ErrNameTaken) {
		t.Fatalf("a second search tool: %v", err)
	}
}

// TestPolicyRole runs the search behind x/policy, as lode's doors do: the
// viewer's role allows the crm tools but delete_customer, so its search
// never lists it, and even a record naming it offers nothing and the
// policy's Gate refuses the call.
func TestPolicyRole(t *testing.T) {
	p, err := policy.Parse([]byte(`
roles:
  viewer:
    allow:
      tools: ["clock", "tool_search", "crm__*"]
    deny:
      tools: ["crm__delete_*"]
`))
	if err != nil {
		t.Fatal(err)
	}
	reg := mounted(t, 1000)
	enf := policy.NewEnforcer(reg, p)
	s := newSearch(t, reg, toolsearch.WithBase(enf.Filter()))
	ctx := context.Background()
	viewer := ledger.NewThread(ledger.WithMetadata(map[string]string{policy.RolesKey: "viewer"}))
	for _, q := range []string{"delete a customer", "customer records for good", "crm delete"} {
		if m := s.Query(ctx, viewer, q, 20); slices.ContainsFunc(m, func(m toolsearch.Match) bool { return m.Name == deleteTool }) {
			t.Fatalf("the viewer's search %q found %s", q, deleteTool)
		}
	}
	if m := s.Query(ctx, viewer, "email an invoice", 1); len(m) != 1 || m[0].Name != invoiceTool {
		t.Fatalf("the viewer's search for an invoice tool: %+v", m)
	}
	_ = viewer.SetMetadata(toolsearch.MetaKey, `[{"tool":"crm__delete_customer","at":0},{"tool":"crm__send_invoice","at":0}]`)
	if o := offer(t, reg, s, viewer); !slices.Equal(o, []string{"clock", invoiceTool, toolsearch.DefaultName}) {
		t.Fatalf("the viewer is offered %v", o)
	}
	res := call(t, reg, s, viewer, artifact.ToolCall{ID: "x", Name: deleteTool, Arguments: `{}`}, enf.HandlerOptions()...)
	if want := `unknown tool "crm__delete_customer". Tools available in this turn: clock, crm__send_invoice, tool_search.`; !res.IsError || res.Content != want {
		t.Fatalf("the viewer's call: %+v, want %q", res, want)
	}
}

// TestGateOutsideATurn: a call made outside a loop turn (an MCP server's,
// with the caller's thread from xtool.WithCaller) has no turn's offer to
// check; the Search's Gate refuses a deferred tool the caller has not
// loaded in the words of an unknown tool, and runs it once loaded.
func TestGateOutsideATurn(t *testing.T) {
	reg := mounted(t, 10)
	s := newSearch(t, reg, toolsearch.DeferFunc(func(b *toolpkg.Binding) bool { return b.Tool.Name == "clock" }))
	if !s.Deferred("clock") || !s.Deferred(invoiceTool) || s.Deferred(toolsearch.DefaultName) || s.Deferred("no_such") {
		t.Fatal("Deferred does not follow Defer and DeferFunc")
	}
	h := xtool.NewHandler(reg, xtool.WithGate(s.Gate(nil)))
	st := ledger.NewThread()
	ctx := xtool.WithCaller(context.Background(), st)
	c := artifact.ToolCall{ID: "1", Name: invoiceTool, Arguments: `{}`}
	res := h.Execute(ctx, c)
	if !res.IsError || !strings.HasPrefix(res.Content, `unknown tool "crm__send_invoice". Tools available to this caller: `) {
		t.Fatalf("before loading: %+v", res)
	}
	if _, err := s.Activate(ctx, st, invoiceTool); err != nil {
		t.Fatal(err)
	}
	if res := h.Execute(ctx, c); res.IsError || res.Content != "invoice sent" {
		t.Fatalf("after loading: %+v", res)
	}
	if res := h.Execute(context.Background(), c); !res.IsError {
		t.Fatalf("a caller with no thread ran a deferred tool: %+v", res)
	}
}
