package policy_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/lodeworks/lode/artifact"
	"github.com/lodeworks/lode/ledger"
	"github.com/lodeworks/lode/ledger/file"
	"github.com/lodeworks/lode/loop"
	"github.com/lodeworks/lode/tool"
	"github.com/lodeworks/lode/x/conduit/web"
	"github.com/lodeworks/lode/x/policy"
	"github.com/lodeworks/lode/x/provider/script"
	xtool "github.com/lodeworks/lode/x/tool"
	"github.com/lodeworks/lode/x/tool/mcp"
)

// source is a mounted source (a pack or MCP server stand-in) whose tools
// answer with their own name.
type source struct {
	name  string
	tools []string
}

func (s source) Name() string { return s.name }
func (s source) Tools(context.Context) ([]tool.Tool, error) {
	out := make([]tool.Tool, len(s.tools))
	for i, n := range s.tools {
		out[i] = tool.Tool{Name: n}
	}
	return out, nil
}
func (s source) Call(_ context.Context, name string, _ map[string]any) (any, error) {
	return "ran " + s.name + "__" + name, nil
}

// doorRegistry mounts what testPolicy names: local fs_* tools, the
// calculator pack and the docs server.
func doorRegistry(t *testing.T) tool.Registry {
	t.Helper()
	reg := tool.NewRegistry()
	for _, n := range []string{"fs_read_file", "fs_write_file", "fs_delete", "fs_list"} {
		if err := reg.Register(tool.Tool{Name: n}, func(context.Context, tool.Sandbox, map[string]any) (any, error) {
			return "ran " + n, nil
		}); err != nil {
			t.Fatal(err)
		}
	}
	for _, s := range []source{{"calculator", []string{"eval"}}, {"docs", []string{"search"}}} {
		if err := reg.Mount(context.Background(), s); err != nil {
			t.Fatal(err)
		}
	}
	return reg
}

// doorCases: who calls what, and the one answer every door must give.
var doorCases = []struct {
	roles   []string
	tool    string
	allowed bool
}{
	{nil, "fs_read_file", false},
	{[]string{"ghost"}, "fs_read_file", false},
	{[]string{"viewer"}, "fs_read_file", true},
	{[]string{"viewer"}, "fs_list", true},
	{[]string{"viewer"}, "fs_write_file", false},
	{[]string{"viewer"}, "calculator__eval", true},
	{[]string{"viewer"}, "docs__search", false},
	{[]string{"editor"}, "fs_write_file", true},
	{[]string{"editor"}, "fs_delete", false},
	{[]string{"editor"}, "docs__search", true},
	{[]string{"editor"}, "calculator__eval", false},
	{[]string{"viewer", "editor"}, "calculator__eval", true},
	{[]string{"viewer", "auditor"}, "calculator__eval", false},
	{[]string{"auditor"}, "fs_delete", true},
	{[]string{"auditor", "editor"}, "fs_delete", false},
	{[]string{"ghost", "viewer"}, "fs_write_file", false},
	{[]string{"admin"}, "nonexistent", false},
	{[]string{"auditor"}, "nonexistent", false},
}

func thread(roles []string) *ledger.Thread {
	return ledger.NewThread(ledger.WithMetadata(map[string]string{policy.RolesKey: strings.Join(roles, ",")}))
}

func token(roles []string) string { return "tok-" + strings.Join(roles, "+") }

// TestEveryDoorGivesTheSameAnswer runs each case through the per-turn
// filter, the Handler's execution check, a loop turn, the MCP server's
// tools/list and tools/call over HTTP, and the web handler, and requires
// the case's answer from each; a refusal must read as the same door's
// answer for a tool that does not exist.
func TestEveryDoorGivesTheSameAnswer(t *testing.T) {
	reg := doorRegistry(t)
	pol := mustParse(t, testPolicy)
	enf := policy.NewEnforcer(reg, pol)
	handler := xtool.NewHandler(reg, enf.HandlerOptions()...)
	ctx := context.Background()

	grants := map[string][]string{}
	for _, c := range doorCases {
		grants[token(c.roles)] = c.roles
	}
	tokens := policy.NewTokens(grants)

	srv, err := mcp.NewServer(reg, mcp.WithFilter(enf.Filter()), mcp.WithHandler(handler), mcp.WithIdentify(tokens.Identify))
	if err != nil {
		t.Fatal(err)
	}
	mcpHTTP := httptest.NewServer(srv)
	defer mcpHTTP.Close()

	// The web handler plays, for every case in order, a call then a text.
	var steps []script.Step
	for i, c := range doorCases {
		steps = append(steps, script.Reply(artifact.ToolCall{ID: fmt.Sprintf("w%d", i), Name: c.tool, Arguments: `{}`}), script.Text("done"))
	}
	store, err := file.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	wh, err := web.New(script.Play(steps...), store,
		web.WithLoopOptions(loop.WithHandlers(handler), loop.WithInvokeOptions(xtool.WithFilteredTools(reg, enf.Filter()))),
		web.WithIdentify(func(r *http.Request) (web.Identity, error) {
			roles, err := tokens.Roles(r)
			return web.Identity{Caller: "c", Role: strings.Join(roles, ",")}, err
		}))
	if err != nil {
		t.Fatal(err)
	}
	defer wh.Close()
	webHTTP := httptest.NewServer(wh)
	defer webHTTP.Close()

	for i, c := range doorCases {
		t.Run(fmt.Sprintf("%v %s", c.roles, c.tool), func(t *testing.T) {
			approval := false
			if _, registered := reg.Lookup(c.tool); registered {
				d := enf.Decide(c.roles, c.tool)
				if d.Allowed != c.allowed {
					t.Errorf("Decide: %+v", d)
				}
				approval = d.NeedsApproval
			}
			st := thread(c.roles)
			ran := "ran " + c.tool
			offered := enf.Filter()(ctx, st, reg.Tools())

			// The offer side.
			if got := containsTool(offered, c.tool); got != c.allowed {
				t.Errorf("filter offers it: %v", got)
			}

			// The execution side, with no offer to lean on.
			hctx := xtool.WithCaller(ctx, st)
			res := handler.Execute(hctx, artifact.ToolCall{ID: "h", Name: c.tool, Arguments: `{}`})
			ghost := handler.Execute(hctx, artifact.ToolCall{ID: "h", Name: "ghost", Arguments: `{}`})
			checkDoor(t, "handler", c.allowed, approval, res.Content, res.IsError, ran, strings.Replace(ghost.Content, `"ghost"`, fmt.Sprintf("%q", c.tool), 1))

			// A loop turn: filter and handler together.
			step := loop.New(loop.WithHandlers(handler), loop.WithInvokeOptions(xtool.WithFilteredTools(reg, enf.Filter())))
			lt := thread(c.roles)
			_ = lt.Append(ledger.RoleUser, artifact.Text{Content: "go"})
			prov := script.Play(script.Reply(artifact.ToolCall{ID: "l", Name: c.tool, Arguments: `{}`}), script.Text("done"))
			if _, err := step.Run(ctx, lt, prov); err != nil {
				t.Fatal(err)
			}
			lr := lt.Turns()[2].Artifacts[0].(artifact.ToolResult)
			checkDoor(t, "loop", c.allowed, approval, lr.Content, lr.IsError, ran, unknownIn(c.tool, offered))

			// MCP: tools/list and tools/call over HTTP with the token.
			cl, err := mcp.NewClient(mcp.WithName("srv"), mcp.WithHTTP(mcpHTTP.URL), mcp.WithHeader("Authorization", "Bearer "+token(c.roles)))
			if err != nil {
				t.Fatal(err)
			}
			defer cl.Close()
			listed, err := cl.Tools(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if got := containsTool(listed, c.tool); got != c.allowed {
				t.Errorf("mcp tools/list shows it: %v", got)
			}
			if len(listed) != len(offered) {
				t.Errorf("mcp tools/list %d tools, filter %d", len(listed), len(offered))
			}
			out, err := cl.Call(ctx, c.tool, map[string]any{})
			if err != nil {
				t.Fatal(err)
			}
			mr, ok := out.(*tool.Result)
			if !ok {
				t.Fatalf("mcp Call returned %T", out)
			}
			checkDoor(t, "mcp tools/call", c.allowed, approval, mr.Content, mr.IsError, ran, unknownTo(c.tool, offered))

			// The web handler, identified by the same token.
			content, isErr := webCall(t, webHTTP.URL, token(c.roles), fmt.Sprintf("w%d", i))
			checkDoor(t, "web", c.allowed, approval, content, isErr, ran, unknownIn(c.tool, offered))
		})
	}
}

func containsTool(tools []tool.Tool, name string) bool {
	for _, t := range tools {
		if t.Name == name {
			return true
		}
	}
	return false
}

// unknownIn is the Handler's words for a tool that does not exist, with
// these tools offered.
func unknownIn(name string, tools []tool.Tool) string {
	h := xtool.NewHandler(tool.NewRegistry())
	return h.Execute(xtool.WithOffered(context.Background(), tools), artifact.ToolCall{Name: name}).Content
}

// unknownTo is unknownIn for a caller outside a loop turn (an MCP
// client's), which is told what holds for it rather than for a turn.
func unknownTo(name string, tools []tool.Tool) string {
	h := xtool.NewHandler(tool.NewRegistry())
	ctx := xtool.WithCaller(xtool.WithOffered(context.Background(), tools), ledger.NewThread())
	return h.Execute(ctx, artifact.ToolCall{Name: name}).Content
}

func checkDoor(t *testing.T, door string, allowed, approval bool, content string, isError bool, ran, unknown string) {
	t.Helper()
	// A call the policy allows only with approval, at doors with no one to
	// ask (this test gives none an approver), is refused: it fails closed.
	if tool, ok := strings.CutPrefix(ran, "ran "); ok && approval && allowed {
		want := fmt.Sprintf("the call to %s was not approved: %v", tool, xtool.ErrNoApprover)
		if !isError || content != want {
			t.Errorf("%s: %q (error %v)\nwant exactly %q", door, content, isError, want)
		}
		return
	}
	switch {
	case allowed && (isError || content != ran):
		t.Errorf("%s refused an allowed call: %q", door, content)
	case !allowed && (!isError || content != unknown):
		t.Errorf("%s: refusal %q (error %v)\nwant exactly %q", door, content, isError, unknown)
	}
}

// webCall posts a message and returns the tool result the stream shows
// for call id.
func webCall(t *testing.T, base, tok, id string) (string, bool) {
	t.Helper()
	body := `{"messages":[{"role":"user","parts":[{"type":"text","text":"go"}]}]}`
	req, _ := http.NewRequest(http.MethodPost, base+"/api/chat", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+tok)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("web: status %d", resp.StatusCode)
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(nil, 1<<20)
	content, isErr, found := "", false, false
	for sc.Scan() {
		data, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok || data == "[DONE]" {
			continue
		}
		var p map[string]any
		if err := json.Unmarshal([]byte(data), &p); err != nil {
			t.Fatalf("web part %q: %v", data, err)
		}
		if p["toolCallId"] != id {
			continue
		}
		switch p["type"] {
		case "tool-output-available":
			content, _ = p["output"].(string)
			found = true
		case "tool-output-error":
			content, _ = p["errorText"].(string)
			isErr, found = true, true
		}
	}
	if !found {
		t.Fatalf("web: no result for %s", id)
	}
	return content, isErr
}
