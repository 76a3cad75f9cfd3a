package cli

import (
	"bytes"
	"context"
	"io"
	"reflect"
	"strings"
	"testing"

	"github.com/lodeworks/lode/artifact"
	"github.com/lodeworks/lode/ledger"
	"github.com/lodeworks/lode/loop"
	"github.com/lodeworks/lode/x/tool/mcp"
	"github.com/lodeworks/lode/x/tool/pack"
)

func feed(answers ...string) <-chan string {
	ch := make(chan string, len(answers))
	for _, a := range answers {
		ch <- a
	}
	close(ch)
	return ch
}

var formSchema = map[string]any{
	"type": "object",
	"properties": map[string]any{
		"name":  map[string]any{"type": "string", "title": "Name"},
		"age":   map[string]any{"type": "integer", "default": 42.0},
		"agree": map[string]any{"type": "boolean"},
		"color": map[string]any{"type": "string", "enum": []any{"red", "blue"}},
		"tags":  map[string]any{"type": "array"},
	},
	"required": []any{"name"},
}

// lode chat asks at the terminal: required fields first, an empty answer
// leaves a field to its default, a bad one is asked again.
func TestTerminalElicitor(t *testing.T) {
	form := mcp.ElicitRequest{Server: "srv", Mode: mcp.ElicitForm, Message: "who are you?", Schema: formSchema}
	link := mcp.ElicitRequest{Server: "srv", Mode: mcp.ElicitURL, Message: "pay", URL: "https://example.com/pay"}
	cases := []struct {
		name    string
		req     mcp.ElicitRequest
		answers []string
		want    mcp.ElicitResult
		wantErr error
		shown   []string
	}{
		{"form", form, []string{"y", "Ada", "", "maybe", "yes", "green", "blue", "a, b"},
			mcp.ElicitResult{Action: mcp.ElicitAccept, Content: map[string]any{"name": "Ada", "agree": true, "color": "blue", "tags": []any{"a", "b"}}},
			nil, []string{"MCP server srv asks: who are you?", "Name (string, required)", "age (integer, default 42)", `"maybe" is not yes or no`, `"green" is not one of [red blue]`}},
		{"required asked again", form, []string{"yes", "", "Ada", "", "", "", ""},
			mcp.ElicitResult{Action: mcp.ElicitAccept, Content: map[string]any{"name": "Ada"}},
			nil, []string{"an answer is required;"}},
		{"bad number", form, []string{"y", "Ada", "old", "7", "", "", ""},
			mcp.ElicitResult{Action: mcp.ElicitAccept, Content: map[string]any{"name": "Ada", "age": int64(7)}},
			nil, []string{`"old" is not a whole number`}},
		{"decline", form, []string{"n"}, mcp.ElicitResult{Action: mcp.ElicitDecline}, nil, nil},
		{"cancel after a bad answer", form, []string{"what", "c"}, mcp.ElicitResult{Action: mcp.ElicitCancel}, nil, []string{"y, n or c: "}},
		{"url done", link, []string{"y"}, mcp.ElicitResult{Action: mcp.ElicitAccept}, nil, []string{"open https://example.com/pay"}},
		{"url declined", link, []string{"no"}, mcp.ElicitResult{Action: mcp.ElicitDecline}, nil, nil},
		{"end of input", form, nil, mcp.ElicitResult{}, io.EOF, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var out bytes.Buffer
			got, err := terminalElicitor(&out, feed(tc.answers...))(context.Background(), tc.req)
			if err != tc.wantErr || !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("got %+v, %v; want %+v, %v\n%s", got, err, tc.want, tc.wantErr, out.String())
			}
			for _, s := range tc.shown {
				if !strings.Contains(out.String(), s) {
					t.Errorf("output lacks %q:\n%s", s, out.String())
				}
			}
		})
	}
}

// A cancelled context ends the question.
func TestTerminalElicitorCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := terminalElicitor(io.Discard, make(chan string))(ctx, mcp.ElicitRequest{Mode: mcp.ElicitForm})
	if err != context.Canceled {
		t.Fatalf("got %v, want context.Canceled", err)
	}
}

// The filesystem pack's root is announced to MCP servers; without that
// pack no roots are.
func TestMCPFeaturesRoots(t *testing.T) {
	dir := t.TempDir()
	cases := []struct {
		name  string
		tools pack.ToolsMap
		want  int
	}{
		{"filesystem root", pack.ToolsMap{{Name: "filesystem", Options: map[string]any{"root": dir}}}, 1},
		{"filesystem default root", pack.ToolsMap{{Name: "filesystem"}}, 1},
		{"no filesystem", pack.ToolsMap{{Name: "calculator"}}, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := len(mcpFeatures(&Config{Tools: tc.tools}, MCPServer{Name: "x"})); got != tc.want {
				t.Fatalf("%d options, want %d", got, tc.want)
			}
		})
	}
}

// Progress reports and log messages of MCP servers show on the info
// stream once the printer is set; one that comes while the answer's line
// is open waits for the line to end, so stdout holds the answer as the
// model wrote it.
func TestMCPNotificationsPrinted(t *testing.T) {
	cases := []struct {
		n    mcp.Notification
		want string
	}{
		{mcp.Notification{Server: "s", Kind: mcp.NotifyProgress, Tool: "build", Progress: 1, Total: 3, Message: "compiling"}, "  [s] build: 1/3 compiling\n"},
		{mcp.Notification{Server: "s", Kind: mcp.NotifyProgress, Tool: "build", Progress: 0.5}, "  [s] build: 0.5\n"},
		{mcp.Notification{Server: "s", Kind: mcp.NotifyLog, Level: "warning", Message: "disk nearly full", Data: "disk nearly full"}, "  [s] warning: disk nearly full\n"},
		{mcp.Notification{Server: "s", Kind: mcp.NotifyLog, Level: "info", Data: map[string]any{"free": 3}}, "  [s] info: {\"free\":3}\n"},
	}
	for _, tc := range cases {
		var out, info bytes.Buffer
		n := &notes{}
		n.emit(context.Background(), tc.n) // no printer yet: dropped
		pr := &printer{out: &out, info: &info}
		n.to(pr)
		pr.write("partial answer")
		n.emit(context.Background(), tc.n)
		if info.String() != "" || out.String() != "partial answer" {
			t.Errorf("%+v mid-line: info %q, out %q; want both untouched", tc.n, info.String(), out.String())
		}
		pr.write(", whole.\n")
		if info.String() != tc.want || out.String() != "partial answer, whole.\n" {
			t.Errorf("%+v: info %q, out %q; want info %q", tc.n, info.String(), out.String(), tc.want)
		}
	}
}

// A note held for an open line comes out when the line is ended for a
// tool call or by the run's end, never on stdout.
func TestMCPNotificationsHeldUntilTheLineEnds(t *testing.T) {
	log := mcp.Notification{Server: "s", Kind: mcp.NotifyLog, Level: "info", Message: "tick"}
	for _, end := range []struct {
		name string
		do   func(*printer)
	}{
		{"run ends", func(p *printer) { p.endLine() }},
		{"tool call", func(p *printer) {
			p.Emit(context.Background(), loop.TurnCompleteEvent{Role: ledger.RoleAssistant, Artifacts: []artifact.Artifact{artifact.ToolCall{Name: "t", Arguments: "{}"}}})
		}},
	} {
		var out, info bytes.Buffer
		pr := &printer{out: &out, info: &info}
		pr.write("half")
		pr.Emit(context.Background(), log)
		pr.Emit(context.Background(), log)
		end.do(pr)
		if out.String() != "half\n" || !strings.HasPrefix(info.String(), "  [s] info: tick\n  [s] info: tick\n") {
			t.Errorf("%s: out %q, info %q", end.name, out.String(), info.String())
		}
	}
}

// In lode chat, a note that comes while the prompt waits goes on a line
// of its own, and the prompt is shown again under it.
func TestMCPNotificationAtThePrompt(t *testing.T) {
	var out, info bytes.Buffer
	pr := &printer{out: &out, info: &info}
	pr.prompting("you> ")
	pr.Emit(context.Background(), mcp.Notification{Server: "s", Kind: mcp.NotifyLog, Level: "info", Message: "roots changed"})
	pr.prompting("")
	pr.Emit(context.Background(), mcp.Notification{Server: "s", Kind: mcp.NotifyLog, Level: "info", Message: "later"})
	if want := "you> \n  [s] info: roots changed\nyou>   [s] info: later\n"; info.String() != want || out.Len() != 0 {
		t.Fatalf("info %q, want %q; out %q", info.String(), want, out.String())
	}
}
