package cli

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// flowsConfig mounts the fixture twice: as web, whose output is untrusted
// (every MCP server's is, by default), and as mail, whose output lode.yaml
// trusts and whose test_simple_text sends data out. The policy's one flow
// rule then says %s for what sends out once untrusted content is in.
const flowsConfig = `model:
  name: m
mcp:
  - name: web
    command: [%[1]q, serve]
    read_only: true
  - name: mail
    command: [%[1]q, serve]
    read_only: true
    labels: {untrusted: false}
    tool_labels:
      test_simple_text: {sends_out: true}
policy:
  roles:
    user:
      allow:
        mcp: [web, mail]
  flows:
    - after: [untrusted]
      calls: [sends_out]
      then: %[2]s
      reason: a page may ask for anything
tokens:
  - roles: [user]
    env: USER_TOKEN
`

const (
	fetchTool = "web__test_simple_text"
	mailTool  = "mail__test_simple_text"
	// The flow rule's line in flowsConfig.
	flowDenied = "the call to mail__test_simple_text was refused: this conversation holds untrusted content, brought in by web__test_simple_text, and flow 1 (line 19) refuses such calls after it: a page may ask for anything"
	flowAsks   = "policy: this conversation holds untrusted content, brought in by web__test_simple_text, and flow 1 (line 19) asks a person to approve such calls after it: a page may ask for anything"
)

var flowsVars = map[string]string{"USER_TOKEN": "user-secret"}

func flowsDir(t *testing.T, then string) string {
	return writeConfig(t, fmt.Sprintf(flowsConfig, mcpFixture(t), then))
}

// requestTools are the tools of the model's n-th request.
func requestTools(f *fakeOpenAI, n int) []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var names []string
	for _, tl := range f.requests[n]["tools"].([]any) {
		names = append(names, tl.(map[string]any)["function"].(map[string]any)["name"].(string))
	}
	return names
}

// lode run: a model that fetched a page and then obeys it cannot send
// mail without a person (approve), or at all (deny); a model that read no
// page sends it at once.
func TestFlowsRun(t *testing.T) {
	for _, tc := range []struct {
		name, then string
		calls      []string
		code       int
		stderr     string
		hidden     bool // the mail tool is left out of the second request
	}{
		{"nothing read: the mail goes", "approve", []string{mailTool}, 0, "← " + mailTool + ": This is a simple text response for testing.", false},
		{"approve: the mail waits", "approve", []string{fetchTool, mailTool}, exitPaused, flowAsks, false},
		{"deny: hidden and refused", "deny", []string{fetchTool, mailTool}, 0, "✗ " + mailTool + ": " + flowDenied, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var replies []func(http.ResponseWriter, *http.Request)
			for i, c := range tc.calls {
				replies = append(replies, callReply(fmt.Sprintf("c%d", i), c, `{}`))
			}
			fake := &fakeOpenAI{replies: append(replies, textReply("done"))}
			srv := httptest.NewServer(fake)
			defer srv.Close()
			vars := map[string]string{"OPENAI_BASE_URL": srv.URL + "/v1"}
			r := lode(t, flowsDir(t, tc.then), vars, "", "run", "--role", "user", "--store", filepath.Join(t.TempDir(), "s"), "summarise the page")
			if r.code != tc.code || !strings.Contains(r.stderr, tc.stderr) {
				t.Fatalf("exit %d, stderr:\n%s\nwant exit %d and %q", r.code, r.stderr, tc.code, tc.stderr)
			}
			if tc.code == exitPaused && strings.Contains(r.stderr, "← "+mailTool) {
				t.Fatal("the mail went out unapproved")
			}
			if len(tc.calls) == 2 {
				second := strings.Join(requestTools(fake, 1), ",")
				if strings.Contains(second, mailTool) == tc.hidden {
					t.Errorf("second request offers %s; want the mail tool hidden: %v", second, tc.hidden)
				}
			}
		})
	}
}

// lode explain says which flow rule narrows a tool, after which label.
func TestFlowsExplain(t *testing.T) {
	r := lode(t, flowsDir(t, "deny"), flowsVars, "", "policy", "explain", "--role", "user", mailTool)
	want := `mail__test_simple_text allowed: user allow mcp "mail" (line 17); after untrusted: denied by flow 1 (line 19): a page may ask for anything` + "\n"
	if r.code != 0 || r.stdout != want {
		t.Fatalf("exit %d, stdout %q, stderr %s\nwant %q", r.code, r.stdout, r.stderr, want)
	}
	r = lode(t, flowsDir(t, "deny"), flowsVars, "", "policy", "check")
	if want := "policy ok: 1 role (user) and 1 flow rule over 28 tools\n"; r.code != 0 || r.stdout != want {
		t.Fatalf("check: exit %d, stdout %q, stderr %s", r.code, r.stdout, r.stderr)
	}
}

// lode policy check names a flow's calls: entry that matches nothing.
func TestFlowsCheck(t *testing.T) {
	dir := writeConfig(t, strings.Replace(fmt.Sprintf(flowsConfig, mcpFixture(t), "deny"), "calls: [sends_out]", "calls: [sends_out, mial]", 1))
	r := lode(t, dir, flowsVars, "", "policy", "check")
	want := "lode.yaml:20: flow 1, calls \"mial\": no mounted tool, pack or MCP server matches\nlode: policy: 1 rule names nothing mounted\n"
	if r.code != 1 || r.stderr != want {
		t.Fatalf("exit %d, stderr %q\nwant %q", r.code, r.stderr, want)
	}
	dir = writeConfig(t, strings.Replace(fmt.Sprintf(flowsConfig, mcpFixture(t), "deny"), "after: [untrusted]", "after: [secret]", 1))
	r = lode(t, dir, flowsVars, "", "policy", "check")
	if want := `flow 1 (line 19): after: "secret" is not a label lode knows (private, untrusted)`; r.code != 1 || !strings.Contains(r.stderr, want) {
		t.Fatalf("exit %d, stderr %q\nwant %q", r.code, r.stderr, want)
	}
}

// callText calls name and returns its text and isError.
func callText(t *testing.T, cs *sdk.ClientSession, name string) (string, bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: name, Arguments: map[string]any{}})
	if err != nil {
		t.Fatal(err)
	}
	text := ""
	for _, c := range res.Content {
		if tc, ok := c.(*sdk.TextContent); ok {
			text += tc.Text
		}
	}
	return text, res.IsError
}

func listNames(t *testing.T, cs *sdk.ClientSession) string {
	t.Helper()
	lt, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tl := range lt.Tools {
		names = append(names, tl.Name)
	}
	return strings.Join(names, ",")
}

// lode serve: an MCP client's session takes in labels as a thread does,
// over stdio and over HTTP with tokens (a fresh identity per request, the
// labels kept by the session); the flow then holds for its later calls.
func TestFlowsServe(t *testing.T) {
	sessions := map[string]func(t *testing.T, dir string) *sdk.ClientSession{
		"stdio": func(t *testing.T, dir string) *sdk.ClientSession {
			return connectSDK(t, &sdk.CommandTransport{Command: exec.Command(lodeBin, "serve", "--config", filepath.Join(dir, "lode.yaml"), "--role", "user")})
		},
		"http tokens": func(t *testing.T, dir string) *sdk.ClientSession {
			url := startServeHTTPEnv(t, dir)
			return connectSDK(t, &sdk.StreamableClientTransport{Endpoint: url, HTTPClient: bearerClient("user-secret")})
		},
	}
	for name, connect := range sessions {
		t.Run(name+" approve", func(t *testing.T) {
			cs := connect(t, flowsDir(t, "approve"))
			if text, isErr := callText(t, cs, fetchTool); isErr {
				t.Fatal(text)
			}
			text, isErr := callText(t, cs, mailTool)
			if !isErr || !strings.Contains(text, "needs a person's approval ("+flowAsks+")") {
				t.Fatalf("the mail after a fetch: %v %q", isErr, text)
			}
		})
		t.Run(name+" deny", func(t *testing.T) {
			cs := connect(t, flowsDir(t, "deny"))
			if !strings.Contains(listNames(t, cs), mailTool) {
				t.Fatal("the mail tool is not offered before the fetch")
			}
			if text, isErr := callText(t, cs, fetchTool); isErr {
				t.Fatal(text)
			}
			if strings.Contains(listNames(t, cs), mailTool) {
				t.Fatal("the mail tool is still offered after the fetch")
			}
			if text, isErr := callText(t, cs, mailTool); !isErr || text != flowDenied {
				t.Fatalf("the mail after a fetch: %v %q\nwant %q", isErr, text, flowDenied)
			}
		})
	}
}

// startServeHTTPEnv is startServeHTTP with the user's token set.
func startServeHTTPEnv(t *testing.T, dir string) string {
	t.Helper()
	t.Setenv("USER_TOKEN", "user-secret")
	return startServeHTTP(t, dir)
}

// lode web: the page's chat pauses for approval when the model, having
// fetched a page, calls the mail tool; a deny flow refuses it with the
// rule's words.
func TestFlowsWeb(t *testing.T) {
	for _, tc := range []struct{ then, want string }{
		{"approve", `"type":"data-approval"`},
		{"deny", flowDenied},
	} {
		t.Run(tc.then, func(t *testing.T) {
			dir := flowsDir(t, tc.then)
			t.Chdir(dir)
			fake := &fakeOpenAI{replies: []func(http.ResponseWriter, *http.Request){
				callReply("c1", fetchTool, `{}`), callReply("c2", mailTool, `{}`), textReply("done"),
			}}
			model := httptest.NewServer(fake)
			defer model.Close()
			lines := make(chan string, 100)
			e := env{stdin: strings.NewReader(""), stdout: io.Discard, stderr: lineWriter{lines}, getenv: func(k string) string { return flowsVars[k] }, interrupts: make(chan os.Signal)}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			done := make(chan int, 1)
			go func() { done <- run(ctx, e, []string{"web", "--addr", "127.0.0.1:0", "--base-url", model.URL + "/v1"}) }()
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
			body := `{"messages":[{"role":"user","parts":[{"type":"text","text":"summarise the page"}]}]}`
			req, _ := http.NewRequest(http.MethodPost, url+"api/chat", strings.NewReader(body))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Authorization", "Bearer user-secret")
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if !strings.Contains(string(b), jsonText(tc.want)) {
				t.Fatalf("the page's stream lacks %q:\n%s", tc.want, b)
			}
			if strings.Contains(string(b), "This is a simple text response for testing.\",\"toolCallId\":\"c2\"") {
				t.Fatal("the mail went out")
			}
			cancel()
			if code := <-done; code != 0 {
				t.Errorf("lode web ended with %d", code)
			}
		})
	}
}

// jsonText is s as it appears inside a JSON string.
func jsonText(s string) string {
	if strings.HasPrefix(s, `"`) {
		return s
	}
	q := fmt.Sprintf("%q", s)
	return q[1 : len(q)-1]
}

// lode chat asks its person about the mail, saying why, and the mail
// does not go when the person says no.
func TestFlowsChat(t *testing.T) {
	fake := &fakeOpenAI{replies: []func(http.ResponseWriter, *http.Request){
		callReply("c1", fetchTool, `{}`), callReply("c2", mailTool, `{}`), textReply("I was not allowed."),
	}}
	srv := httptest.NewServer(fake)
	defer srv.Close()
	r := lode(t, flowsDir(t, "approve"), map[string]string{"OPENAI_BASE_URL": srv.URL + "/v1"}, "summarise the page\nn\n\n", "chat", "--role", "user")
	want := "approve " + mailTool + " {}? (" + flowAsks + ") [y/n/e]"
	if r.code != 0 || !strings.Contains(r.stderr, want) || strings.Contains(r.stderr, "← "+mailTool) {
		t.Fatalf("exit %d, stderr:\n%s\nwant %q and no mail sent", r.code, r.stderr, want)
	}
}
