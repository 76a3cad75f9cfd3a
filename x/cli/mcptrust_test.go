package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

var (
	fixtureOnce sync.Once
	fixtureBin  string
	fixtureErr  error
)

// mcpFixture builds x/tool/mcp's conformance fixture server once, beside
// lodeBin. Its tools carry no annotations, so MCP's defaults make every
// one destructive.
func mcpFixture(t *testing.T) string {
	t.Helper()
	fixtureOnce.Do(func() {
		fixtureBin = filepath.Join(filepath.Dir(lodeBin), "mcpfixture")
		if out, err := exec.Command("go", "build", "-o", fixtureBin, "../tool/mcp/cmd/mcpfixture").CombinedOutput(); err != nil {
			fixtureErr = fmt.Errorf("go build mcpfixture: %v\n%s", err, out)
		}
	})
	if fixtureErr != nil {
		t.Fatal(fixtureErr)
	}
	return fixtureBin
}

// fixtureConfig is a lode.yaml mounting the fixture as fx, with extra
// lines under its entry.
func fixtureConfig(t *testing.T, extra string) string {
	return fmt.Sprintf("mcp:\n  - name: fx\n    command: [%q, serve]\n%s", mcpFixture(t), extra)
}

// The fixture's tools, as it names them, sorted.
const fixtureTools = "json_schema_2020_12_tool, test_audio_content, test_elicitation, test_elicitation_sep1034_defaults, test_elicitation_sep1330_enums, test_embedded_resource, test_error_handling, test_image_content, test_multiple_content_types, test_reconnection, test_sampling, test_simple_text, test_tool_with_logging, test_tool_with_progress"

// read_only: and trust: under an MCP server's entry take the operator's
// word over MCP's default that a tool without annotations is destructive;
// approve: still applies.
func TestMCPTrustSaysWhatNeedsApproval(t *testing.T) {
	const destructive = "the tool is marked destructive"
	for _, tc := range []struct {
		name, extra, top string
		simple, failing  string
	}{
		{"spec defaults", "", "", destructive, destructive},
		{"trust one tool", "    trust: [test_simple_text]\n", "", "", destructive},
		{"trust as a block list", "    trust:\n      - test_error_handling\n      - test_simple_text\n", "", "", ""},
		{"read-only server", "    read_only: true\n", "", "", ""},
		{"read-only, and approve: names the server", "    read_only: true\n", "approve: [fx]\n", "approve: in lode.yaml names fx", "approve: in lode.yaml names fx"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := lode(t, writeConfig(t, tc.top+fixtureConfig(t, tc.extra)), nil, "", "tools", "--json")
			if r.code != 0 {
				t.Fatalf("exit %d: %s", r.code, r.stderr)
			}
			var list []struct {
				Name     string `json:"name"`
				Approval string `json:"approval"`
			}
			if err := json.Unmarshal([]byte(r.stdout), &list); err != nil {
				t.Fatal(err)
			}
			got := map[string]string{}
			for _, l := range list {
				got[l.Name] = l.Approval
			}
			if got["fx__test_simple_text"] != tc.simple || got["fx__test_error_handling"] != tc.failing {
				t.Errorf("approval of test_simple_text %q, of test_error_handling %q\nwant %q, %q", got["fx__test_simple_text"], got["fx__test_error_handling"], tc.simple, tc.failing)
			}
		})
	}
}

// A trust: name the server does not offer, or a setting that cannot mean
// anything, is an error naming its line.
func TestMCPTrustErrors(t *testing.T) {
	for _, tc := range []struct {
		name, extra, want string
	}{
		{"unknown tool", "    trust: [test_simple_text, test_simpel_text]\n",
			`lode: lode.yaml:4: mcp server "fx", trust "test_simpel_text": no tool of the server matches; its tools are ` + fixtureTools + "\n"},
		{"unknown tool in a block list", "    trust:\n      - test_simple_text\n      - nope\n",
			`lode: lode.yaml:6: mcp server "fx", trust "nope": no tool of the server matches; its tools are ` + fixtureTools + "\n"},
		{"lode's name for the tool", "    trust: [fx__test_simple_text]\n",
			`lode: lode.yaml:4: mcp server "fx", trust "fx__test_simple_text": write "test_simple_text", the server's own name for it` + "\n"},
		{"read_only and trust", "    read_only: true\n    trust: [test_simple_text]\n",
			`lode: lode.yaml:5: mcp server "fx": read_only: true already trusts every tool of the server; leave trust: out` + "\n"},
		{"empty name", "    trust:\n      - test_simple_text\n      - \"\"\n",
			`lode: lode.yaml:6: mcp server "fx": trust: entry 2 is empty; write the names of the server's tools` + "\n"},
		{"trust not a list", "    trust: test_simple_text\n",
			"lode: lode.yaml: line 4: cannot unmarshal !!str `test_si...` into []string\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := lode(t, writeConfig(t, fixtureConfig(t, tc.extra)), nil, "", "tools")
			if r.code != 1 || r.stderr != tc.want {
				t.Fatalf("exit %d, stderr:\n%s\nwant exit 1 and exactly:\n%s", r.code, r.stderr, tc.want)
			}
		})
	}
}

// lode run pauses for approval on a call to an unannotated MCP tool, and
// runs it once trust: names it.
func TestMCPTrustRun(t *testing.T) {
	for _, tc := range []struct {
		name, extra string
		code        int
		stdout      string
	}{
		{"spec defaults: the call waits", "", exitPaused, ""},
		{"trusted: the call runs", "    trust: [test_simple_text]\n", 0, "done\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fake := &fakeOpenAI{replies: []func(http.ResponseWriter, *http.Request){
				callReply("c1", "fx__test_simple_text", `{}`), textReply("done"),
			}}
			srv := httptest.NewServer(fake)
			defer srv.Close()
			r := lode(t, writeConfig(t, fixtureConfig(t, tc.extra)), map[string]string{"OPENAI_BASE_URL": srv.URL + "/v1"}, "",
				"run", "--model", "m", "--store", t.TempDir(), "hi")
			if r.code != tc.code || !strings.HasSuffix(r.stdout, tc.stdout) {
				t.Fatalf("exit %d, stdout %q, stderr:\n%s\nwant exit %d, stdout ending %q", r.code, r.stdout, r.stderr, tc.code, tc.stdout)
			}
			if tc.code == 0 && !strings.Contains(r.stderr, "← fx__test_simple_text: This is a simple text response for testing.") {
				t.Errorf("the call's result is not shown:\n%s", r.stderr)
			}
		})
	}
}

// lode serve, whose client here cannot be asked (no elicitation), refuses
// a call to an unannotated tool of a mounted server as needing approval,
// and runs it once trust: names it.
func TestMCPTrustServe(t *testing.T) {
	for _, tc := range []struct {
		name, extra string
		isError     bool
		want        string
	}{
		{"spec defaults: refused", "", true, "the call to fx__test_simple_text was not approved: mcp: the client cannot ask a person for approval: the call needs a person's approval (the tool is marked destructive), and this client declared no elicitation capability to ask one; " + serveHint},
		{"trusted: runs", "    trust: [test_simple_text]\n", false, "This is a simple text response for testing."},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := writeConfig(t, fixtureConfig(t, tc.extra))
			cmd := exec.Command(lodeBin, "serve", "--config", filepath.Join(dir, "lode.yaml"))
			cs := connectSDK(t, &sdk.CommandTransport{Command: cmd})
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "fx__test_simple_text", Arguments: map[string]any{}})
			if err != nil {
				t.Fatal(err)
			}
			text := ""
			for _, c := range res.Content {
				if tx, ok := c.(*sdk.TextContent); ok {
					text += tx.Text
				}
			}
			if res.IsError != tc.isError || text != tc.want {
				t.Fatalf("%q (isError %v)\nwant exactly %q (isError %v)", text, res.IsError, tc.want, tc.isError)
			}
		})
	}
}

// lode web shows an approval card for a call to an unannotated tool of a
// mounted server, and runs it once trust: names it.
func TestMCPTrustWeb(t *testing.T) {
	for _, tc := range []struct {
		name, extra, want string
	}{
		{"spec defaults: an approval card", "", `"type":"data-approval"`},
		{"trusted: the call runs", "    trust: [test_simple_text]\n", "This is a simple text response for testing."},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Chdir(writeConfig(t, fixtureConfig(t, tc.extra)))
			fake := &fakeOpenAI{replies: []func(http.ResponseWriter, *http.Request){
				callReply("call_1", "fx__test_simple_text", `{}`), textReply("done"),
			}}
			model := httptest.NewServer(fake)
			defer model.Close()
			lines := make(chan string, 100)
			e := env{stdin: strings.NewReader(""), stdout: io.Discard, stderr: lineWriter{lines}, getenv: func(string) string { return "" }, interrupts: make(chan os.Signal)}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			done := make(chan int, 1)
			go func() {
				done <- run(ctx, e, []string{"web", "--addr", "127.0.0.1:0", "--base-url", model.URL + "/v1", "--model", "m", "--store", t.TempDir()})
			}()
			var url string
			select {
			case l := <-lines:
				m := regexp.MustCompile(`chat at (http://\S+/)`).FindStringSubmatch(l)
				if m == nil {
					t.Fatalf("lode web said %q", l)
				}
				url = m[1]
			case code := <-done:
				t.Fatalf("lode web exited with %d", code)
			}
			body := `{"messages":[{"role":"user","parts":[{"type":"text","text":"go"}]}]}`
			resp, err := http.Post(url+"api/chat", "application/json", strings.NewReader(body))
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if !strings.Contains(string(b), tc.want) {
				t.Errorf("the chat's stream lacks %s:\n%s", tc.want, b)
			}
			cancel()
			if code := <-done; code != 0 {
				t.Errorf("lode web ended with %d", code)
			}
		})
	}
}
