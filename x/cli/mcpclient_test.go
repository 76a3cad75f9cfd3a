package cli

import (
	"bytes"
	"context"
	"io"
	"reflect"
	"strings"
	"testing"

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
// stream, between lines of the answer, once the printer is set.
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
		if info.String() != tc.want || out.String() != "partial answer\n" {
			t.Errorf("%+v: info %q, out %q; want info %q", tc.n, info.String(), out.String(), tc.want)
		}
	}
}
