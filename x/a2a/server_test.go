package a2a_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2aclient"
	"github.com/a2aproject/a2a-go/v2/a2aclient/agentcard"

	"github.com/lodeworks/lode/artifact"
	"github.com/lodeworks/lode/ledger"
	"github.com/lodeworks/lode/ledger/file"
	"github.com/lodeworks/lode/loop"
	"github.com/lodeworks/lode/provider"
	"github.com/lodeworks/lode/tool"
	lodea2a "github.com/lodeworks/lode/x/a2a"
	"github.com/lodeworks/lode/x/auth"
	"github.com/lodeworks/lode/x/policy"
	xtool "github.com/lodeworks/lode/x/tool"
)

// agent is a lode agent served on loopback for a test: two tools, of
// which delete_ticket waits for approval, each counting its runs.
type agent struct {
	url     string
	srv     *lodea2a.Server
	store   ledger.Store
	lookups atomic.Int32
	deletes atomic.Int32
}

type agentOpts struct {
	authn  auth.Authenticator
	policy string
	extra  []lodea2a.Option
	// file configures the file store the agent keeps its threads in.
	file []file.Option
}

func startAgent(t testing.TB, prov provider.Provider, o agentOpts) *agent {
	t.Helper()
	a := &agent{}
	store, err := file.Open(t.TempDir(), o.file...)
	if err != nil {
		t.Fatal(err)
	}
	a.store = store
	reg := tool.NewRegistry()
	if err := reg.Register(tool.Tool{Name: "lookup", Description: "Look a ticket up."}, func(context.Context, tool.Sandbox, map[string]any) (any, error) {
		a.lookups.Add(1)
		return "ticket 7: printer on fire", nil
	}); err != nil {
		t.Fatal(err)
	}
	if err := reg.Register(tool.Tool{Name: "delete_ticket", Description: "Delete a ticket."}, func(context.Context, tool.Sandbox, map[string]any) (any, error) {
		a.deletes.Add(1)
		return "deleted", nil
	}); err != nil {
		t.Fatal(err)
	}
	needs := func(_ context.Context, tl tool.Tool, _ artifact.ToolCall) (string, bool) {
		return "deleting cannot be undone", tl.Name == "delete_ticket"
	}
	hopts := []xtool.HandlerOption{xtool.WithApprover(xtool.PauseForDecision), xtool.WithApprovalRule(needs)}
	var filter xtool.ToolFilter
	if o.policy != "" {
		p, err := policy.Parse([]byte(o.policy))
		if err != nil {
			t.Fatal(err)
		}
		enf := policy.NewEnforcer(reg, p)
		hopts = append(hopts, xtool.WithGate(enf.Gate))
		filter = enf.Filter()
	}
	opts := []lodea2a.Option{
		lodea2a.WithLoopOptions(
			loop.WithHandlers(xtool.NewHandler(reg, hopts...)),
			loop.WithInvokeOptions(xtool.WithFilteredTools(reg, filter)),
			loop.WithMaxTurns(6),
		),
		lodea2a.WithTools(reg.Tools()...),
		lodea2a.WithCard(a2a.AgentCard{Name: "helpdesk", Description: "Answers about tickets."}),
	}
	if o.authn != nil {
		opts = append(opts, lodea2a.WithAuthenticator(o.authn))
	}
	opts = append(opts, o.extra...)
	srv, err := lodea2a.NewServer(prov, store, opts...)
	if err != nil {
		t.Fatal(err)
	}
	a.srv = srv
	hs := httptest.NewServer(srv)
	a.url = hs.URL
	t.Cleanup(func() {
		hs.CloseClientConnections()
		hs.Close()
		srv.Close()
		store.Close()
	})
	return a
}

// bearer adds a token to every request.
type bearer struct {
	token string
	next  http.RoundTripper
}

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	if b.token != "" {
		r.Header.Set("Authorization", "Bearer "+b.token)
	}
	return b.next.RoundTrip(r)
}

// connect resolves the agent's card and makes an a2a-go client, as a
// caller that knows only the URL does.
func connect(t testing.TB, url, token string) *a2aclient.Client {
	t.Helper()
	hc := &http.Client{Transport: bearer{token: token, next: http.DefaultTransport}}
	card, err := agentcard.NewResolver(hc).Resolve(t.Context(), url)
	if err != nil {
		t.Fatal(err)
	}
	c, err := a2aclient.NewFromCard(t.Context(), card, a2aclient.WithJSONRPCTransport(hc))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Destroy() })
	return c
}

func userText(s string) *a2a.SendMessageRequest {
	return &a2a.SendMessageRequest{Message: a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart(s))}
}

func answerTo(task *a2a.Task, parts ...*a2a.Part) *a2a.SendMessageRequest {
	m := a2a.NewMessage(a2a.MessageRoleUser, parts...)
	m.TaskID, m.ContextID = task.ID, task.ContextID
	return &a2a.SendMessageRequest{Message: m}
}

func asTask(t *testing.T, res a2a.SendMessageResult, err error) *a2a.Task {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
	task, ok := res.(*a2a.Task)
	if !ok {
		t.Fatalf("result is %T, want a task", res)
	}
	return task
}

func artifactText(task *a2a.Task) string {
	var b strings.Builder
	for _, a := range task.Artifacts {
		for _, p := range a.Parts {
			b.WriteString(p.Text())
		}
	}
	return b.String()
}

func statusText(task *a2a.Task) string {
	if task.Status.Message == nil {
		return ""
	}
	var b strings.Builder
	for _, p := range task.Status.Message.Parts {
		b.WriteString(p.Text())
	}
	return b.String()
}

// pendingIDs reads the data part of an input-required status.
func pendingIDs(t *testing.T, task *a2a.Task) []string {
	t.Helper()
	if task.Status.State != a2a.TaskStateInputRequired || task.Status.Message == nil {
		t.Fatalf("task is %s, want input-required with a message", task.Status.State)
	}
	for _, p := range task.Status.Message.Parts {
		if d, ok := p.Data().(map[string]any); ok {
			var ids []string
			for _, c := range d["pending"].([]any) {
				ids = append(ids, c.(map[string]any)["id"].(string))
			}
			return ids
		}
	}
	t.Fatal("the input-required status has no data part")
	return nil
}

func send(t *testing.T, c *a2aclient.Client, req *a2a.SendMessageRequest) *a2a.Task {
	t.Helper()
	res, err := c.SendMessage(t.Context(), req)
	return asTask(t, res, err)
}
