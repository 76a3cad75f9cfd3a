package mcp_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"
)

// helperEnv makes the test binary act as a fake MCP server (see fakeMain)
// instead of running tests.
const helperEnv = "LODE_MCP_TEST_HELPER"

func TestMain(m *testing.M) {
	switch os.Getenv(helperEnv) {
	case "":
	case "fake":
		fakeMain()
		os.Exit(0)
	case "trace":
		if err := traceServerMain(); err != nil {
			fmt.Fprintln(os.Stderr, "trace server:", err)
			os.Exit(1)
		}
		os.Exit(0)
	case "sleep":
		// A process a fake server started: it lives until killed.
		select {}
	default:
		fmt.Fprintf(os.Stderr, "unknown %s=%q\n", helperEnv, os.Getenv(helperEnv))
		os.Exit(2)
	}
	code := m.Run()
	if buildDir != "" {
		os.RemoveAll(buildDir)
	}
	if code == 0 {
		if err := goleak.Find(leakOptions()...); err != nil {
			fmt.Fprintf(os.Stderr, "goleak: goroutines left after the tests: %v\n", err)
			code = 1
		}
	}
	os.Exit(code)
}

var (
	buildDir  string
	buildOnce sync.Once
	buildBin  string
	buildErr  error
)

// fixtureBinary builds cmd/mcpfixture once per test run.
func fixtureBinary(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		if buildDir, buildErr = os.MkdirTemp("", "mcpfixture"); buildErr != nil {
			return
		}
		buildBin = filepath.Join(buildDir, "mcpfixture")
		out, err := exec.Command("go", "build", "-o", buildBin, "./cmd/mcpfixture").CombinedOutput()
		if err != nil {
			buildErr = fmt.Errorf("go build ./cmd/mcpfixture: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return buildBin
}

// leakOptions ignores the idle keep-alive connections of shared HTTP
// transports, which outlive any one test by design.
func leakOptions() []goleak.Option {
	return []goleak.Option{
		goleak.IgnoreTopFunction("net/http.(*persistConn).readLoop"),
		goleak.IgnoreTopFunction("net/http.(*persistConn).writeLoop"),
	}
}

// helperRace spares helper processes of a -race test binary the race
// detector's one-second pause at exit.
const helperRace = "GORACE=atexit_sleep_ms=0"

// fakeCommand returns the command line of a raw fake server with quirks
// (comma-separated): "early" sends notifications before answering
// initialize; "mute" never answers it; "noping" answers ping with "method
// not found", as servers of revisions without ping do.
func fakeCommand(t *testing.T, quirks ...string) (string, []string, []string) {
	t.Helper()
	return os.Args[0], []string{"-test.run=^$"}, []string{helperEnv + "=fake", "FAKE_QUIRKS=" + strings.Join(quirks, ","), helperRace}
}

type rpcMsg struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id,omitempty"`
	Method  string          `json:"method,omitempty"`
	Params  json.RawMessage `json:"params,omitempty"`
}

// fakeMain is an MCP server that writes JSON-RPC lines by hand, to
// misbehave in ways the SDK's server never would. Tools:
//
//	echo {text}   answers text
//	pair {n}      held until a second pair call arrives; both are then
//	              answered, the later one first
//	crash         exits without answering
//	hang          never answers
//	freeze        never answers, nor reads anything more: the whole
//	              server hangs, pings included
//	pid           answers the process ID
//	cwd           answers its directory and $FAKE_EXTRA
//	getenv {name} answers "name=value", or "name unset"
//	spawn         starts a child that never exits; answers its PID
func fakeMain() {
	quirks := os.Getenv("FAKE_QUIRKS")
	out := bufio.NewWriter(os.Stdout)
	var mu sync.Mutex
	send := func(v any) {
		mu.Lock()
		defer mu.Unlock()
		b, _ := json.Marshal(v)
		out.Write(b)
		out.WriteByte('\n')
		out.Flush()
	}
	reply := func(id json.RawMessage, result any) {
		send(map[string]any{"jsonrpc": "2.0", "id": id, "result": result})
	}
	text := func(s string) map[string]any {
		return map[string]any{"content": []any{map[string]any{"type": "text", "text": s}}}
	}
	var held []json.RawMessage
	var heldN []float64
	in := bufio.NewScanner(os.Stdin)
	in.Buffer(make([]byte, 1<<20), 1<<20)
	for in.Scan() {
		var m rpcMsg
		if err := json.Unmarshal(in.Bytes(), &m); err != nil || m.ID == nil {
			continue
		}
		switch m.Method {
		case "initialize":
			var p struct {
				ProtocolVersion string `json:"protocolVersion"`
			}
			_ = json.Unmarshal(m.Params, &p)
			if strings.Contains(quirks, "mute") {
				fmt.Fprintln(os.Stderr, "initialize received")
				continue
			}
			if strings.Contains(quirks, "early") {
				send(map[string]any{"jsonrpc": "2.0", "method": "notifications/message",
					"params": map[string]any{"level": "info", "data": "starting up"}})
				send(map[string]any{"jsonrpc": "2.0", "method": "notifications/tools/list_changed"})
			}
			reply(m.ID, map[string]any{
				"protocolVersion": p.ProtocolVersion,
				"capabilities":    map[string]any{"tools": map[string]any{"listChanged": true}},
				"serverInfo":      map[string]any{"name": "fake", "version": "1"},
			})
		case "ping":
			if strings.Contains(quirks, "noping") {
				send(map[string]any{"jsonrpc": "2.0", "id": m.ID, "error": map[string]any{"code": -32601, "message": "method not found: ping"}})
				continue
			}
			reply(m.ID, map[string]any{})
		case "tools/list":
			var tools []any
			for _, n := range []string{"echo", "pair", "crash", "hang", "freeze", "pid", "spawn", "cwd"} {
				tools = append(tools, map[string]any{"name": n, "description": "fake " + n,
					"inputSchema": map[string]any{"type": "object"}})
			}
			reply(m.ID, map[string]any{"tools": tools})
		case "tools/call":
			var p struct {
				Name      string         `json:"name"`
				Arguments map[string]any `json:"arguments"`
			}
			_ = json.Unmarshal(m.Params, &p)
			switch p.Name {
			case "echo":
				reply(m.ID, text(fmt.Sprint(p.Arguments["text"])))
			case "pair":
				n, _ := p.Arguments["n"].(float64)
				held, heldN = append(held, m.ID), append(heldN, n)
				if len(held) == 2 {
					reply(held[1], text(fmt.Sprint(heldN[1])))
					reply(held[0], text(fmt.Sprint(heldN[0])))
					held, heldN = nil, nil
				}
			case "crash":
				os.Exit(3)
			case "hang":
				fmt.Fprintln(os.Stderr, "hang received")
			case "freeze":
				fmt.Fprintln(os.Stderr, "freeze received")
				time.Sleep(time.Hour)
			case "cwd":
				wd, _ := os.Getwd()
				reply(m.ID, text(wd+" "+os.Getenv("FAKE_EXTRA")))
			case "getenv":
				name := fmt.Sprint(p.Arguments["name"])
				if v, ok := os.LookupEnv(name); ok {
					reply(m.ID, text(name+"="+v))
				} else {
					reply(m.ID, text(name+" unset"))
				}
			case "pid":
				reply(m.ID, text(fmt.Sprint(os.Getpid())))
			case "spawn":
				cmd := exec.Command(os.Args[0], "-test.run=^$")
				cmd.Env = append(os.Environ(), helperEnv+"=sleep", helperRace)
				cmd.Stderr = os.Stderr
				if err := cmd.Start(); err != nil {
					reply(m.ID, map[string]any{"isError": true, "content": []any{map[string]any{"type": "text", "text": err.Error()}}})
					continue
				}
				reply(m.ID, text(fmt.Sprint(cmd.Process.Pid)))
			default:
				send(map[string]any{"jsonrpc": "2.0", "id": m.ID, "error": map[string]any{"code": -32602, "message": "unknown tool " + p.Name}})
			}
		default:
			send(map[string]any{"jsonrpc": "2.0", "id": m.ID, "error": map[string]any{"code": -32601, "message": "method not found: " + m.Method}})
		}
	}
}
