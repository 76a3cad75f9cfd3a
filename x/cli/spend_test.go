package cli

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lodeworks/lode/tool"
	"github.com/lodeworks/lode/x/tool/mcp"
)

type lookupArgs struct {
	Query string `json:"query" jsonschema:"description=What to look for, in a few words."`
	Limit int    `json:"limit,omitempty" jsonschema:"description=How many records to return at most.,minimum=1,maximum=100"`
}

// bigMCPServer serves n read-only tools over streamable HTTP.
func bigMCPServer(t *testing.T, n int) string {
	t.Helper()
	reg := tool.NewRegistry()
	for i := range n {
		if err := tool.RegisterFunc(reg, fmt.Sprintf("tool_%04d", i), fmt.Sprintf("Looks records up in collection %d of the archive.", i),
			func(context.Context, lookupArgs) (string, error) { return "nothing", nil },
			tool.WithHints(tool.Hints{ReadOnly: true})); err != nil {
			t.Fatal(err)
		}
	}
	srv, err := mcp.NewServer(reg)
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(srv)
	t.Cleanup(hs.Close)
	return hs.URL + "/mcp"
}

// lode run with 1,000 MCP tools mounted (no defer:): the tools the request
// carries count toward the policy's usd_ limits and max_cost, so a request
// they would carry past a limit is refused before it is sent.
func TestRunSpendLimitsCountMountedTools(t *testing.T) {
	url := bigMCPServer(t, 1000)
	const mini = "catalog:\n  mini: {input: 0.15, output: 0.6}\n"
	cases := []struct {
		name, config string
		args         []string
		want         string // on stderr; "" for a run that succeeds
		requests     int
	}{
		{"usd_per_run", "policy:\n  roles:\n    r:\n      allow: {mcp: [big]}\n      limits: {usd_per_run: 0.005}\n", []string{"--role", "r"},
			"the run was stopped by the policy: role r has spent $0.0000 of its $0.0050 per run", 0},
		{"usd_per_day", "policy:\n  roles:\n    r:\n      allow: {mcp: [big]}\n      limits: {usd_per_day: 0.01}\n", []string{"--role", "r", "--store", "threads"},
			"the run was stopped by the policy: role r has spent $0.0000 of its $0.0100 per day", 0},
		{"max_cost", "", []string{"--max-cost", "0.005"},
			"the run was stopped at its cost limit before a request that may cost", 0},
		// A limit the tools fit under: the run goes on, and the request
		// carried all 1,000 tools.
		{"a limit that pays for them", "policy:\n  roles:\n    r:\n      allow: {mcp: [big]}\n      limits: {usd_per_run: 1}\n", []string{"--role", "r"}, "", 2},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			fake := &fakeOpenAI{replies: []func(http.ResponseWriter, *http.Request){
				callReply("call_1", "big__tool_0000", `{"query":"q"}`), textReply("nothing found"),
			}}
			model := httptest.NewServer(fake)
			defer model.Close()
			dir := writeConfig(t, mini+"mcp:\n  - name: big\n    url: "+url+"\n"+c.config)
			args := append([]string{"run", "--base-url", model.URL + "/v1", "--model", "mini"}, c.args...)
			for i, a := range args {
				if a == "threads" {
					args[i] = filepath.Join(dir, "threads")
				}
			}
			r := lode(t, dir, nil, "", append(args, "look it up")...)
			if c.want == "" {
				if r.code != 0 {
					t.Fatalf("exit %d: %s", r.code, r.stderr)
				}
			} else if r.code != 1 || !strings.Contains(r.stderr, c.want) {
				t.Fatalf("exit %d, stderr %q, want %q", r.code, r.stderr, c.want)
			}
			fake.mu.Lock()
			defer fake.mu.Unlock()
			if len(fake.requests) != c.requests {
				t.Fatalf("the model server got %d requests, want %d", len(fake.requests), c.requests)
			}
			if c.requests > 0 {
				tools, _ := fake.requests[0]["tools"].([]any)
				mt, _ := fake.requests[0]["max_completion_tokens"].(float64)
				if mt == 0 {
					mt, _ = fake.requests[0]["max_tokens"].(float64)
				}
				if len(tools) != 1000 || mt <= 0 {
					t.Fatalf("the first request carried %d tools and max tokens %v", len(tools), mt)
				}
			}
		})
	}
}
