package mcp_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/lodeworks/lode/artifact"
	"github.com/lodeworks/lode/ledger"
	"github.com/lodeworks/lode/provider"
	"github.com/lodeworks/lode/tool"
	"github.com/lodeworks/lode/x/provider/script"
	"github.com/lodeworks/lode/x/tool/mcp"
)

// everything mounts npm server-everything over stdio with opts.
func everything(t *testing.T, opts ...mcp.Option) tool.Registry {
	t.Helper()
	env := requireNode(t)
	return mount(t, append([]mcp.Option{mcp.WithName("everything"), mcp.WithStdio(env.node20, env.pkg("@modelcontextprotocol/server-everything/dist/index.js"), "stdio")}, opts...)...)
}

func hasTool(reg tool.Registry, name string) bool {
	_, ok := reg.Lookup(name)
	return ok
}

// A form elicitation reaches the callback with the server's message and
// schema; properties the answer leaves out get the schema's defaults.
func TestElicitationFormEverything(t *testing.T) {
	var (
		mu  sync.Mutex
		got []mcp.ElicitRequest
	)
	reg := everything(t, mcp.WithElicitation(func(ctx context.Context, req mcp.ElicitRequest) (mcp.ElicitResult, error) {
		mu.Lock()
		got = append(got, req)
		mu.Unlock()
		return mcp.ElicitResult{Action: mcp.ElicitAccept, Content: map[string]any{"name": "Ada"}}, nil
	}))
	r := execute(t, reg, "everything__trigger-elicitation-request", "{}")
	if r.IsError {
		t.Fatalf("trigger-elicitation-request: %s", r.Content)
	}
	for _, want := range []string{"Name: Ada", "It was a dark and stormy night.", "42"} {
		if !strings.Contains(r.Content, want) {
			t.Errorf("result lacks %q (the answer or a schema default):\n%s", want, r.Content)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if len(got) != 1 {
		t.Fatalf("callback called %d times, want 1", len(got))
	}
	req := got[0]
	props, _ := req.Schema["properties"].(map[string]any)
	if req.Server != "everything" || req.Mode != mcp.ElicitForm || !strings.Contains(req.Message, "Please provide inputs") || props["name"] == nil {
		t.Fatalf("request: %+v", req)
	}
}

// A URL elicitation reaches the callback with its link and identifier.
func TestElicitationURLEverything(t *testing.T) {
	var got mcp.ElicitRequest
	reg := everything(t, mcp.WithElicitation(func(ctx context.Context, req mcp.ElicitRequest) (mcp.ElicitResult, error) {
		got = req
		return mcp.ElicitResult{Action: mcp.ElicitAccept}, nil
	}))
	r := execute(t, reg, "everything__trigger-url-elicitation", `{"url":"https://example.com/pay","elicitationId":"e-1"}`)
	if r.IsError {
		t.Fatalf("trigger-url-elicitation: %s", r.Content)
	}
	if got.Mode != mcp.ElicitURL || got.URL != "https://example.com/pay" || got.ID != "e-1" || got.Schema != nil {
		t.Fatalf("request: %+v", got)
	}
}

// With no callback the client declines: the server's tool learns the
// answer, and the call is not a protocol failure.
func TestElicitationDeclinedWithoutCallback(t *testing.T) {
	reg := everything(t)
	if hasTool(reg, "everything__trigger-url-elicitation") {
		t.Error("URL elicitation is offered without a callback")
	}
	r := execute(t, reg, "everything__trigger-elicitation-request", "{}")
	if r.IsError || !strings.Contains(strings.ToLower(r.Content), "decline") {
		t.Fatalf("trigger-elicitation-request without a callback: %+v", r)
	}
}

// The callback's answer is checked: an unknown action and an error are
// both failed requests the tool reports.
func TestElicitationBadAnswers(t *testing.T) {
	cases := []struct {
		name string
		res  mcp.ElicitResult
		err  error
	}{
		{"unknown action", mcp.ElicitResult{Action: "maybe"}, nil},
		{"callback error", mcp.ElicitResult{}, errors.New("no terminal")},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			reg := everything(t, mcp.WithElicitation(func(context.Context, mcp.ElicitRequest) (mcp.ElicitResult, error) {
				return tc.res, tc.err
			}))
			r := execute(t, reg, "everything__trigger-elicitation-request", "{}")
			if !r.IsError {
				t.Fatalf("got %+v, want an error result", r)
			}
		})
	}
}

// Sampling is off by default: the server sees no sampling capability and
// offers no sampling tool.
func TestSamplingOffByDefault(t *testing.T) {
	reg := everything(t)
	if hasTool(reg, "everything__trigger-sampling-request") {
		t.Fatal("trigger-sampling-request is offered though sampling is off")
	}
}

// On, the server's prompt goes to the named provider, capped at the
// client's token limit, and the answer goes back to the server.
func TestSamplingEverything(t *testing.T) {
	prov := script.Play(script.Text("sampled answer"))
	var approved []mcp.SamplingRequest
	reg := everything(t, mcp.WithSampling(prov, mcp.WithSamplingMaxTokens(40), mcp.WithSamplingApproval(func(ctx context.Context, req mcp.SamplingRequest) (bool, error) {
		approved = append(approved, req)
		return true, nil
	})))
	r := execute(t, reg, "everything__trigger-sampling-request", `{"prompt":"say hi","maxTokens":100}`)
	if r.IsError || !strings.Contains(r.Content, "sampled answer") {
		t.Fatalf("trigger-sampling-request: %+v", r)
	}
	reqs := prov.Requests()
	if len(reqs) != 1 {
		t.Fatalf("provider called %d times, want 1", len(reqs))
	}
	req := reqs[0]
	if req.MaxTokens != 40 || len(req.Turns) != 2 || req.Turns[0].Role != ledger.RoleSystem || req.Turns[1].Role != ledger.RoleUser {
		t.Fatalf("provider request: %+v", req)
	}
	if txt, _ := req.Turns[1].Artifacts[0].(artifact.Text); !strings.Contains(txt.Content, "say hi") {
		t.Fatalf("user turn: %+v", req.Turns[1])
	}
	if len(approved) != 1 || approved[0].MaxTokens != 40 || approved[0].Server != "everything" || len(approved[0].Messages) != 1 {
		t.Fatalf("approval saw %+v", approved)
	}
}

// A server asking for fewer tokens than the cap gets its own limit.
func TestSamplingServerCapLower(t *testing.T) {
	prov := script.Play(script.Text("ok"))
	reg := everything(t, mcp.WithSampling(prov))
	if r := execute(t, reg, "everything__trigger-sampling-request", `{"prompt":"x","maxTokens":7}`); r.IsError {
		t.Fatalf("trigger-sampling-request: %s", r.Content)
	}
	if reqs := prov.Requests(); len(reqs) != 1 || reqs[0].MaxTokens != 7 {
		t.Fatalf("provider requests: %+v", reqs)
	}
}

// Refused by the approval callback (a no or an error), or failed by the
// provider, the request fails and the model is never called.
func TestSamplingRefused(t *testing.T) {
	cases := []struct {
		name    string
		approve func(context.Context, mcp.SamplingRequest) (bool, error)
		steps   []script.Step
		want    string
		calls   int
	}{
		{"no", func(context.Context, mcp.SamplingRequest) (bool, error) { return false, nil }, nil, "rejected", 0},
		{"error", func(context.Context, mcp.SamplingRequest) (bool, error) { return false, errors.New("nobody there") }, nil, "nobody there", 0},
		{"provider fails", nil, []script.Step{script.Fail(errors.New("model down"))}, "model down", 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			prov := script.Play(tc.steps...)
			opts := []mcp.SamplingOption{}
			if tc.approve != nil {
				opts = append(opts, mcp.WithSamplingApproval(tc.approve))
			}
			reg := everything(t, mcp.WithSampling(prov, opts...))
			r := execute(t, reg, "everything__trigger-sampling-request", `{"prompt":"x"}`)
			if !r.IsError || !strings.Contains(r.Content, tc.want) {
				t.Fatalf("got %+v, want an error result with %q", r, tc.want)
			}
			if n := len(prov.Requests()); n != tc.calls {
				t.Fatalf("provider called %d times, want %d", n, tc.calls)
			}
		})
	}
}

// The configured roots are what the server lists.
func TestRootsEverything(t *testing.T) {
	dir := t.TempDir()
	reg := everything(t, mcp.WithRoots(dir))
	r := execute(t, reg, "everything__get-roots-list", "{}")
	if r.IsError || !strings.Contains(r.Content, "file://"+dir) {
		t.Fatalf("get-roots-list: %+v", r)
	}
}

// Without WithRoots the client offers no roots capability.
func TestNoRootsByDefault(t *testing.T) {
	if reg := everything(t); hasTool(reg, "everything__get-roots-list") {
		t.Fatal("get-roots-list is offered though no roots are configured")
	}
}

// A tool's progress reports reach the callback, naming the tool.
func TestProgressEverything(t *testing.T) {
	progress := make(chan mcp.Notification, 10)
	reg := everything(t, mcp.WithNotifications(func(ctx context.Context, n mcp.Notification) {
		if n.Kind == mcp.NotifyProgress {
			progress <- n
		}
	}))
	r := execute(t, reg, "everything__trigger-long-running-operation", `{"duration":0.3,"steps":3}`)
	if r.IsError {
		t.Fatalf("trigger-long-running-operation: %s", r.Content)
	}
	// The SDK may deliver a notification after the call's result.
	for step := 1.0; step <= 3; step++ {
		n := <-progress
		want := mcp.Notification{Server: "everything", Kind: mcp.NotifyProgress, Tool: "trigger-long-running-operation", Progress: step, Total: 3}
		n.Message = ""
		if n != want {
			t.Fatalf("progress %v: %+v, want %+v", step, n, want)
		}
	}
}

var _ provider.Provider = (*script.Provider)(nil)
