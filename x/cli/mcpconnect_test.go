package cli

import (
	"testing"
	"time"
)

func TestMCPConnectTimeoutFromConfig(t *testing.T) {
	cfg, err := parseConfig("lode.yaml", []byte("mcp:\n  - name: slow\n    command: [x]\n    connect_timeout: 2m\n    timeout: 30s\n  - name: plain\n    command: [y]\n"))
	if err != nil {
		t.Fatal(err)
	}
	if got := time.Duration(cfg.MCP[0].ConnectTimeout); got != 2*time.Minute {
		t.Errorf("slow: connect_timeout %v", got)
	}
	if got := cfg.MCP[1].ConnectTimeout; got != 0 {
		t.Errorf("plain: connect_timeout %v, want 0 (the client's default)", time.Duration(got))
	}
}

// Bad connect_timeout: values, and a server that never finishes the
// handshake, each one line naming what to change.
func TestMCPConnectTimeoutErrors(t *testing.T) {
	for _, tc := range []struct{ name, config, want string }{
		{"zero", "mcp:\n  - name: x\n    command: [x]\n    connect_timeout: 0s\n",
			`lode: lode.yaml:4: mcp server "x": connect_timeout must be more than 0 (leave it out for the default, 1m0s)` + "\n"},
		{"negative", "mcp:\n  - name: x\n    command: [x]\n    connect_timeout: -1s\n",
			`lode: lode.yaml:4: mcp server "x": connect_timeout must be more than 0 (leave it out for the default, 1m0s)` + "\n"},
		{"not a duration", "mcp:\n  - name: x\n    command: [x]\n    connect_timeout: soon\n",
			`lode: lode.yaml:4: mcp[0].connect_timeout: "soon" is not a duration (write e.g. 90s, 5m or 1h30m)` + "\n"},
		// sleep never answers the MCP handshake: the connect timeout ends
		// the wait, whatever the call timeout says.
		{"never connects", "mcp:\n  - name: mute\n    command: [sleep, \"1000\"]\n    connect_timeout: 1ms\n    timeout: 1h\n",
			`lode: mcp server "mute": tool: source "mute": list tools: mcp: server "mute": connect: not connected within 1ms (WithConnectTimeout): mcp: server did not answer in time` + "\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := lode(t, writeConfig(t, tc.config), nil, "", "tools")
			if r.code != exitError || r.stderr != tc.want {
				t.Fatalf("exit %d, stderr %q; want 1, %q", r.code, r.stderr, tc.want)
			}
		})
	}
}
