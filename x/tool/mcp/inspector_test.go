package mcp_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/lodeworks/lode/x/tool/mcp"
	"github.com/lodeworks/lode/x/tool/mcp/internal/fixture"
)

// inspectorCLI is the Inspector's launcher, run in CLI mode with Node.js 22.
const inspectorCLI = "@modelcontextprotocol/inspector/clients/launcher/build/index.js"

func requireInspector(t *testing.T) nodeEnv {
	t.Helper()
	env := requireNode(t)
	if _, err := os.Stat(env.pkg(inspectorCLI)); err != nil {
		t.Fatalf("the MCP Inspector is not installed (%v): run scripts/setup-mcp.sh, or set LODE_TEST_MCP=off to skip these tests", err)
	}
	return env
}

// inspect runs one Inspector CLI request against target (a URL, or a
// command and its arguments) and returns its JSON answer: either a result
// or the error the Inspector found in what the server sent.
func inspect(t *testing.T, env nodeEnv, era string, args []string, target ...string) map[string]any {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	all := append([]string{env.pkg(inspectorCLI), "--cli", "--protocol-era", era, "--format", "json", "-q"}, args...)
	cmd := exec.CommandContext(ctx, env.node22, append(all, target...)...)
	home := t.TempDir()
	cmd.Dir = home
	cmd.Env = append(os.Environ(), "HOME="+home, "MCP_CATALOG_PATH="+home+"/mcp.json")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	runErr := cmd.Run()
	var out map[string]any
	if err := json.Unmarshal(bytes.TrimSpace(stdout.Bytes()), &out); err != nil {
		if e := json.Unmarshal(bytes.TrimSpace(stderr.Bytes()), &out); e != nil {
			t.Fatalf("inspector %s: %v; its output is not JSON (%v)\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), runErr, err, stdout.String(), stderr.String())
		}
	}
	return out
}

// The Inspector's CLI, in every protocol era lode's server offers on a
// transport, lists the fixture's tools (its strict schema lint included)
// and calls them: a good call and a failing one both come back as
// results, never as invalid responses. (The Inspector refuses by itself to
// call a tool the server did not list.)
func TestInspectorEras(t *testing.T) {
	env := requireInspector(t)
	serve := func(opts ...mcp.ServerOption) string {
		srv, err := fixture.NewServer(opts...)
		if err != nil {
			t.Fatal(err)
		}
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		// Serve, unlike a bare httptest server, ends the sessions the
		// Inspector leaves open when it stops.
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- srv.Serve(ctx, ln) }()
		t.Cleanup(func() {
			cancel()
			if err := <-done; err != nil {
				t.Error(err)
			}
		})
		return "http://" + ln.Addr().String() + "/mcp"
	}
	stdio := []string{fixtureBinary(t), "serve"}
	stateful := []string{serve()}
	stateless := []string{serve(mcp.WithStateless())}
	transports := []struct {
		name   string
		target []string
		eras   []string
	}{
		// Stateful streamable HTTP serves the revisions before 2026-07-28
		// (the go-sdk offers that one on stateless HTTP only), so "modern"
		// is refused there and "auto" falls back.
		{"stdio", stdio, []string{"legacy", "auto", "modern"}},
		{"http", stateful, []string{"legacy", "auto"}},
		{"http-stateless", stateless, []string{"legacy", "auto", "modern"}},
	}
	requests := []struct {
		name    string
		args    []string
		isError bool
	}{
		{"list", []string{"--method", "tools/list", "--strict"}, false},
		{"call", []string{"--method", "tools/call", "--tool-name", "test_simple_text"}, false},
		{"tool-error", []string{"--method", "tools/call", "--tool-name", "test_error_handling"}, true},
	}
	for _, tr := range transports {
		for _, era := range tr.eras {
			for _, rq := range requests {
				t.Run(tr.name+"/"+era+"/"+rq.name, func(t *testing.T) {
					out := inspect(t, env, era, rq.args, tr.target...)
					res, ok := out["result"].(map[string]any)
					if !ok {
						t.Fatalf("no result; the Inspector says: %v", out)
					}
					if rq.name == "list" {
						if tools, _ := res["tools"].([]any); len(tools) < 10 {
							t.Fatalf("tools/list gave %d tools: %v", len(tools), res)
						}
						return
					}
					if got, _ := res["isError"].(bool); got != rq.isError {
						t.Fatalf("isError = %v, want %v: %v", got, rq.isError, res)
					}
					if content, _ := res["content"].([]any); len(content) == 0 {
						t.Fatalf("a result without content: %v", res)
					}
				})
			}
		}
	}
}
