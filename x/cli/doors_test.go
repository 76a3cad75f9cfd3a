package cli

import (
	"bufio"
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
	"sort"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/lodeworks/lode/artifact"
	"github.com/lodeworks/lode/ledger"
	"github.com/lodeworks/lode/tool"
	"github.com/lodeworks/lode/x/policy"
	xtool "github.com/lodeworks/lode/x/tool"
	"github.com/lodeworks/lode/x/tool/mcp"
)

// doorsConfig has, for the editor, one call of each kind that waits for a
// person: calculator__eval by approve:, filesystem__read by the policy's
// approve: rule, filesystem__write because it is destructive; and
// filesystem__list, which runs at once. The viewer may read and list only.
const doorsConfig = `model:
  name: m
tools:
  calculator: {}
  filesystem:
    root: %q
approve: [calculator]
policy:
  roles:
    viewer:
      allow:
        tools: [filesystem__read, filesystem__list]
    editor:
      allow:
        packs: [calculator, filesystem]
      approve:
        tools: [filesystem__read]
tokens:
  - roles: [viewer]
    env: VIEWER_TOKEN
  - roles: [editor]
    env: EDITOR_TOKEN
`

var doorsVars = map[string]string{"VIEWER_TOKEN": "view-secret", "EDITOR_TOKEN": "edit-secret"}

var doorTokens = map[string]string{"viewer": "view-secret", "editor": "edit-secret"}

// doorCalls are the calls the matrix makes, with arguments each tool takes.
var doorCalls = map[string]string{
	"calculator__eval":  `{"expression":"1+1"}`,
	"filesystem__read":  `{"path":"a.txt"}`,
	"filesystem__list":  `{}`,
	"filesystem__write": `{"path":"new.txt","content":"x"}`,
}

var doorRoles = []string{"viewer", "editor"}

func doorTools() []string {
	var names []string
	for n := range doorCalls {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// doorsFixture writes the configuration and the folder its filesystem
// pack serves; it returns the configuration's folder and the served one.
func doorsFixture(t *testing.T) (dir, root string) {
	t.Helper()
	root = t.TempDir()
	if err := os.WriteFile(filepath.Join(root, "a.txt"), []byte("hello\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return writeConfig(t, fmt.Sprintf(doorsConfig, root)), root
}

// explained is lode policy explain's verdict for each tool: allowed,
// approval or denied.
func explained(t *testing.T, dir, role string) map[string]string {
	t.Helper()
	r := lode(t, dir, doorsVars, "", "policy", "explain", "--role", role)
	if r.code != 0 {
		t.Fatalf("explain --role %s: exit %d: %s", role, r.code, r.stderr)
	}
	out := map[string]string{}
	for _, l := range strings.Split(strings.TrimSpace(r.stdout), "\n") {
		f := strings.Fields(l)
		if len(f) >= 2 {
			out[f[1]] = f[0]
		}
	}
	return out
}

// classify reads a door's answer to one call as a verdict.
func classify(text string) string {
	switch {
	case strings.Contains(text, "needs a person's approval"), strings.Contains(text, `"type":"data-approval"`):
		return "approval"
	case strings.Contains(text, "unknown tool"):
		return "denied"
	}
	return "allowed"
}

// Every door gives a role the verdict lode policy explain gives it, for
// every tool of the fixture: what is denied reads as unknown, what needs
// approval waits (run, web) or fails closed (serve, whose test clients
// cannot elicit), and the rest runs. The offered set is the same at every
// door too.
func TestDoorsAgreeWithExplain(t *testing.T) {
	dir, root := doorsFixture(t)
	want := map[string]map[string]string{}
	for _, role := range doorRoles {
		want[role] = explained(t, dir, role)
	}
	// The fixture's own expectation, so that a change in explain is seen.
	for role, w := range map[string]string{
		"editor": "approval,allowed,approval,approval",
		"viewer": "denied,allowed,allowed,denied",
	} {
		var got []string
		for _, n := range doorTools() {
			got = append(got, want[role][n])
		}
		if strings.Join(got, ",") != w {
			t.Fatalf("explain --role %s for %v: %v, want %s", role, doorTools(), got, w)
		}
	}
	check := func(door, role, name, got string) {
		t.Helper()
		if w := want[role][name]; w != got {
			t.Errorf("%s, role %s, %s: %s, but explain says %s", door, role, name, got, w)
		}
	}
	offered := func(door, role string, names []string) {
		t.Helper()
		var w []string
		for _, n := range doorTools() {
			if want[role][n] != "denied" {
				w = append(w, n)
			}
		}
		sort.Strings(names)
		var mine []string
		for _, n := range names {
			if _, ok := doorCalls[n]; ok {
				mine = append(mine, n)
			}
		}
		if strings.Join(mine, ",") != strings.Join(w, ",") {
			t.Errorf("%s, role %s offers %v, want %v", door, role, mine, w)
		}
	}

	t.Run("run", func(t *testing.T) {
		for _, role := range doorRoles {
			for _, name := range doorTools() {
				fake := &fakeOpenAI{replies: []func(http.ResponseWriter, *http.Request){callReply("call_1", name, doorCalls[name]), textReply("done")}}
				srv := httptest.NewServer(fake)
				vars := map[string]string{"OPENAI_BASE_URL": srv.URL + "/v1"}
				r := lode(t, dir, vars, "", "run", "--role", role, "--store", filepath.Join(t.TempDir(), "s"), "go")
				srv.Close()
				got := classify(r.stderr)
				switch {
				case r.code == exitPaused:
					got = "approval"
				case r.code != 0:
					t.Fatalf("run --role %s calling %s: exit %d: %s", role, name, r.code, r.stderr)
				}
				check("run", role, name, got)
				fake.mu.Lock()
				var names []string
				for _, tl := range fake.requests[0]["tools"].([]any) {
					names = append(names, tl.(map[string]any)["function"].(map[string]any)["name"].(string))
				}
				fake.mu.Unlock()
				offered("run", role, names)
			}
		}
		if _, err := os.Stat(filepath.Join(root, "new.txt")); err == nil {
			t.Error("lode run wrote new.txt without approval")
		}
	})

	t.Run("serve stdio", func(t *testing.T) {
		for _, role := range doorRoles {
			cmd := exec.Command(lodeBin, "serve", "--config", filepath.Join(dir, "lode.yaml"), "--role", role)
			cs := connectSDK(t, &sdk.CommandTransport{Command: cmd})
			serveMatrix(t, cs, "serve stdio", role, check, offered)
		}
	})

	t.Run("serve http tokens", func(t *testing.T) {
		url := startServeHTTP(t, dir)
		for _, role := range doorRoles {
			cs := connectSDK(t, &sdk.StreamableClientTransport{Endpoint: url, HTTPClient: bearerClient(doorTokens[role])})
			serveMatrix(t, cs, "serve --http", role, check, offered)
		}
	})

	t.Run("serve http role", func(t *testing.T) {
		// Without tokens: every caller holds --role.
		dir2 := writeConfig(t, strings.Split(fmt.Sprintf(doorsConfig, root), "tokens:")[0])
		for _, role := range doorRoles {
			url := startServeHTTP(t, dir2, "--role", role)
			cs := connectSDK(t, &sdk.StreamableClientTransport{Endpoint: url})
			serveMatrix(t, cs, "serve --http --role", role, check, offered)
		}
	})

	t.Run("web tokens", func(t *testing.T) {
		webMatrix(t, dir, "", check, offered)
	})

	t.Run("web role", func(t *testing.T) {
		dir2 := writeConfig(t, strings.Split(fmt.Sprintf(doorsConfig, root), "tokens:")[0])
		for _, role := range doorRoles {
			webMatrix(t, dir2, role, check, offered)
		}
	})

	if _, err := os.Stat(filepath.Join(root, "new.txt")); err == nil {
		t.Error("a door wrote new.txt without approval")
	}
}

func serveMatrix(t *testing.T, cs *sdk.ClientSession, door, role string, check func(door, role, name, got string), offered func(door, role string, names []string)) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	lt, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tl := range lt.Tools {
		names = append(names, tl.Name)
	}
	offered(door, role, names)
	for _, name := range doorTools() {
		res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: name, Arguments: jsonArgs(t, doorCalls[name])})
		if err != nil {
			t.Fatalf("%s %s: %v", door, name, err)
		}
		text := ""
		for _, c := range res.Content {
			if tc, ok := c.(*sdk.TextContent); ok {
				text += tc.Text
			}
		}
		got := classify(text)
		if got != "allowed" && !res.IsError {
			t.Errorf("%s, role %s, %s: refused without isError: %q", door, role, name, text)
		}
		if got == "approval" && !strings.Contains(text, serveHint) {
			t.Errorf("%s, role %s, %s: the refusal does not say how to get approval: %q", door, role, name, text)
		}
		check(door, role, name, got)
	}
}

func jsonArgs(t *testing.T, s string) map[string]any {
	t.Helper()
	m := map[string]any{}
	if err := json.Unmarshal([]byte(s), &m); err != nil {
		t.Fatal(err)
	}
	return m
}

// connectSDK connects a go-sdk client that declares no elicitation.
func connectSDK(t *testing.T, tr sdk.Transport) *sdk.ClientSession {
	t.Helper()
	c := sdk.NewClient(&sdk.Implementation{Name: "plain", Version: "1"}, nil)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cs, err := c.Connect(ctx, tr, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	return cs
}

type bearer struct {
	token string
	next  http.RoundTripper
}

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return b.next.RoundTrip(r)
}

func bearerClient(token string) *http.Client {
	return &http.Client{Transport: bearer{token, http.DefaultTransport}}
}

// startServeHTTP starts lode serve --http on a free loopback port and
// returns its endpoint.
func startServeHTTP(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command(lodeBin, append([]string{"serve", "--http", "127.0.0.1:0", "--config", filepath.Join(dir, "lode.yaml")}, args...)...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "VIEWER_TOKEN=view-secret", "EDITOR_TOKEN=edit-secret")
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	line, err := bufio.NewReader(stderr).ReadString('\n')
	i := strings.Index(line, "http://")
	if err != nil || i < 0 {
		t.Fatalf("no address line: %q %v", line, err)
	}
	go func() { _, _ = io.Copy(io.Discard, stderr) }()
	return strings.TrimSpace(line[i:])
}

// webMatrix starts lode web (--role role, or the tokens when role is
// empty) and posts one chat per role and tool, the model calling the tool.
func webMatrix(t *testing.T, dir, role string, check func(door, role, name, got string), offered func(door, role string, names []string)) {
	t.Helper()
	t.Chdir(dir)
	var replies []func(http.ResponseWriter, *http.Request)
	roles := doorRoles
	if role != "" {
		roles = []string{role}
	}
	for range roles {
		for _, name := range doorTools() {
			replies = append(replies, callReply("call_1", name, doorCalls[name]), textReply("done"))
		}
	}
	fake := &fakeOpenAI{replies: replies}
	model := httptest.NewServer(fake)
	defer model.Close()
	lines := make(chan string, 100)
	e := env{stdin: strings.NewReader(""), stdout: io.Discard, stderr: lineWriter{lines}, getenv: func(k string) string { return doorsVars[k] }, interrupts: make(chan os.Signal)}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan int, 1)
	args := []string{"web", "--addr", "127.0.0.1:0", "--base-url", model.URL + "/v1"}
	if role != "" {
		args = append(args, "--role", role)
	}
	go func() { done <- run(ctx, e, args) }()
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
	door := "web tokens"
	if role != "" {
		door = "web --role"
	}
	for _, r := range roles {
		for _, name := range doorTools() {
			body := `{"messages":[{"role":"user","parts":[{"type":"text","text":"go"}]}]}`
			req, _ := http.NewRequest(http.MethodPost, url+"api/chat", strings.NewReader(body))
			req.Header.Set("Content-Type", "application/json")
			if role == "" {
				req.Header.Set("Authorization", "Bearer "+doorTokens[r])
			}
			fake.mu.Lock()
			first := len(fake.requests)
			fake.mu.Unlock()
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			got := classify(string(b))
			fake.mu.Lock()
			var names []string
			for _, tl := range fake.requests[first]["tools"].([]any) {
				names = append(names, tl.(map[string]any)["function"].(map[string]any)["name"].(string))
			}
			fake.mu.Unlock()
			offered(door, r, names)
			if got == "approval" {
				// A paused chat asks no model again: skip the reply it would have had.
				fake.mu.Lock()
				fake.replies = fake.replies[1:]
				fake.mu.Unlock()
			}
			check(door, r, name, got)
		}
	}
	cancel()
	if code := <-done; code != 0 {
		t.Errorf("lode web ended with %d", code)
	}
}

// lode serve asks a client that can elicit: approving runs the call once,
// declining runs nothing; over stdio and HTTP.
func TestServeAsksTheClient(t *testing.T) {
	for _, transport := range []string{"stdio", "http"} {
		for _, approve := range []bool{true, false} {
			t.Run(fmt.Sprintf("%s/approve=%v", transport, approve), func(t *testing.T) {
				root := t.TempDir()
				dir := writeConfig(t, fmt.Sprintf("tools:\n  filesystem:\n    root: %q\n", root))
				var asked []mcp.ElicitRequest
				elicit := func(_ context.Context, req mcp.ElicitRequest) (mcp.ElicitResult, error) {
					asked = append(asked, req)
					if !approve {
						return mcp.ElicitResult{Action: mcp.ElicitDecline}, nil
					}
					return mcp.ElicitResult{Action: mcp.ElicitAccept, Content: map[string]any{"approve": true}}, nil
				}
				opts := []mcp.Option{mcp.WithName("lode"), mcp.WithElicitation(elicit)}
				if transport == "stdio" {
					opts = append(opts, mcp.WithStdio(lodeBin, "serve", "--config", filepath.Join(dir, "lode.yaml")))
				} else {
					opts = append(opts, mcp.WithHTTP(startServeHTTP(t, dir)))
				}
				c, err := mcp.NewClient(opts...)
				if err != nil {
					t.Fatal(err)
				}
				defer c.Close()
				ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
				defer cancel()
				v, err := c.Call(ctx, "filesystem__write", map[string]any{"path": "new.txt", "content": "x"})
				if err != nil {
					t.Fatal(err)
				}
				res, _ := v.(*tool.Result)
				b, readErr := os.ReadFile(filepath.Join(root, "new.txt"))
				if len(asked) != 1 || asked[0].Mode != mcp.ElicitForm ||
					asked[0].Message != `Approve the call to filesystem__write with arguments {"content":"x","path":"new.txt"}? It needs approval because the tool is marked destructive.` {
					t.Fatalf("asked %+v", asked)
				}
				if approve {
					if res == nil || res.IsError || readErr != nil || string(b) != "x" {
						t.Fatalf("approved: result %+v, file %q %v", res, b, readErr)
					}
					return
				}
				want := "the call to filesystem__write was not approved: mcp: the client's person did not approve it: they declined"
				if res == nil || !res.IsError || res.Content != want || readErr == nil {
					t.Fatalf("declined: result %+v, file %q %v; want %q and no file", res, b, readErr, want)
				}
			})
		}
	}
}

// startWeb runs lode web in dir with args and returns its URL, the model
// it talks to, and a stop that checks it ends cleanly.
func startWeb(t *testing.T, dir string, fake *fakeOpenAI, args ...string) (url, said string, stop func()) {
	t.Helper()
	t.Chdir(dir)
	model := httptest.NewServer(fake)
	lines := make(chan string, 100)
	e := env{stdin: strings.NewReader(""), stdout: io.Discard, stderr: lineWriter{lines}, getenv: func(string) string { return "" }, interrupts: make(chan os.Signal)}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan int, 1)
	go func() {
		done <- run(ctx, e, append([]string{"web", "--addr", "127.0.0.1:0", "--base-url", model.URL + "/v1", "--model", "m"}, args...))
	}()
	// Warnings come first, each a line of its own; said is every line up
	// to the one that gives the address.
	for url == "" {
		select {
		case l := <-lines:
			said += l
			if strings.HasPrefix(l, "lode web: warning: ") || strings.HasPrefix(l, "lode: warning: ") {
				continue
			}
			m := regexp.MustCompile(`chat at (http://\S+/)`).FindStringSubmatch(l)
			if m == nil {
				cancel()
				t.Fatalf("lode web said %q", said)
			}
			url = m[1]
		case code := <-done:
			cancel()
			t.Fatalf("lode web exited with %d", code)
		}
	}
	return url, said, func() {
		cancel()
		if code := <-done; code != 0 {
			t.Errorf("lode web ended with %d", code)
		}
		model.Close()
	}
}

// lode web keeps threads where --store says, else where store: in
// lode.yaml says, else in .lode/threads; --threads, the flag's old name,
// still works and says it is deprecated.
func TestWebStorePrecedence(t *testing.T) {
	const deprecated = "lode web: warning: --threads is deprecated: use --store, which means the same\n"
	for _, tc := range []struct {
		name, config string
		args         []string
		want         string
		warning      string
	}{
		{"default", "", nil, defaultThreadsDir, ""},
		{"store", "store: from-yaml\n", nil, "from-yaml", ""},
		{"flag wins", "store: from-yaml\n", []string{"--store", "from-flag"}, "from-flag", ""},
		{"flag at the default", "store: from-yaml\n", []string{"--store", defaultThreadsDir}, defaultThreadsDir, ""},
		{"old flag", "store: from-yaml\n", []string{"--threads", "from-old-flag"}, "from-old-flag", deprecated},
		{"old flag and new, the same", "", []string{"--threads", "same", "--store", "same"}, "same", deprecated},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := writeConfig(t, tc.config)
			_, said, stop := startWeb(t, dir, &fakeOpenAI{}, tc.args...)
			stop()
			if !strings.Contains(said, "threads in "+tc.want+",") || !strings.HasPrefix(said, tc.warning+"lode web: ") {
				t.Errorf("lode web said %q, want %q then threads in %s", said, tc.warning, tc.want)
			}
			if _, err := os.Stat(filepath.Join(dir, tc.want)); err != nil {
				t.Errorf("threads folder: %v", err)
			}
		})
	}
}

// In lode web a destructive call waits, shown as an approval card; the
// decision posted runs it once, and the same decision again runs nothing.
func TestWebApprovesThroughTheCard(t *testing.T) {
	root := t.TempDir()
	dir := writeConfig(t, fmt.Sprintf("store: threads\ntools:\n  filesystem:\n    root: %q\n", root))
	fake := &fakeOpenAI{replies: []func(http.ResponseWriter, *http.Request){
		callReply("call_1", "filesystem__write", `{"path":"new.txt","content":"x"}`),
		textReply("written"),
	}}
	url, _, stop := startWeb(t, dir, fake)
	defer stop()
	post := func(path, body string) (int, string) {
		resp, err := http.Post(url+path, "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	code, stream := post("api/chat", `{"messages":[{"role":"user","parts":[{"type":"text","text":"write"}]}]}`)
	m := regexp.MustCompile(`"threadId":"([^"]+)"\},"id":"approval","type":"data-approval"`).FindStringSubmatch(stream)
	if code != http.StatusOK || m == nil || !strings.Contains(stream, "the tool is marked destructive") {
		t.Fatalf("chat: %d\n%s", code, stream)
	}
	if _, err := os.Stat(filepath.Join(root, "new.txt")); err == nil {
		t.Fatal("the call ran before it was approved")
	}
	decide := `{"decisions":[{"id":"call_1","approve":true}]}`
	code, stream = post("api/threads/"+m[1]+"/decide", decide)
	if b, err := os.ReadFile(filepath.Join(root, "new.txt")); code != http.StatusOK || err != nil || string(b) != "x" || !strings.Contains(stream, "written") {
		t.Fatalf("decide: %d, file %q %v\n%s", code, b, err, stream)
	}
	if err := os.Remove(filepath.Join(root, "new.txt")); err != nil {
		t.Fatal(err)
	}
	if code, _ = post("api/threads/"+m[1]+"/decide", decide); code == http.StatusOK {
		t.Errorf("deciding again: %d", code)
	}
	if _, err := os.Stat(filepath.Join(root, "new.txt")); err == nil {
		t.Error("deciding again ran the call again")
	}
	if _, err := os.Stat(filepath.Join(dir, "threads")); err != nil {
		t.Errorf("store: in lode.yaml not used: %v", err)
	}
}

// lode chat asks in the terminal about each kind of call that waits —
// approve:, the policy's approve:, destructive — with its reason, and a
// refusal runs nothing.
func TestChatAsksAboutEveryKind(t *testing.T) {
	dir, root := doorsFixture(t)
	for _, tc := range []struct{ name, reason string }{
		{"calculator__eval", "approve: in lode.yaml names calculator"},
		{"filesystem__read", "policy: "},
		{"filesystem__write", "the tool is marked destructive"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fake := &fakeOpenAI{replies: []func(http.ResponseWriter, *http.Request){callReply("call_1", tc.name, doorCalls[tc.name]), textReply("ok")}}
			srv := httptest.NewServer(fake)
			defer srv.Close()
			r := lode(t, dir, map[string]string{"OPENAI_BASE_URL": srv.URL + "/v1"}, "go\nn\nno\n", "chat", "--role", "editor")
			asked := fmt.Sprintf("approve %s %s? (%s", tc.name, doorCalls[tc.name], tc.reason)
			if r.code != 0 || !strings.Contains(r.stderr, asked) || strings.Contains(r.stderr, "← "+tc.name) {
				t.Fatalf("exit %d, want %q asked and nothing run:\n%s", r.code, asked, r.stderr)
			}
		})
	}
	if _, err := os.Stat(filepath.Join(root, "new.txt")); err == nil {
		t.Error("chat wrote new.txt though refused")
	}
}

// Each door's help says what it does with approvals, and lists exit code 3.
func TestDoorHelp(t *testing.T) {
	for cmd, want := range map[string]string{
		"run":    "stops the run with exit code 3",
		"resume": "Without decisions it lists the calls that wait",
		"chat":   "A call that needs approval is asked about here",
		"serve":  "through elicitation",
		"web":    "approval\ncard",
	} {
		r := lode(t, t.TempDir(), nil, "", cmd, "-h")
		if r.code != 0 || !strings.Contains(r.stderr, want) || !strings.Contains(r.stderr, "3 lode run or resume paused") {
			t.Errorf("lode %s -h: exit %d, lacks %q or exit code 3:\n%s", cmd, r.code, want, r.stderr)
		}
	}
	r := lode(t, t.TempDir(), nil, "", "help")
	if !strings.Contains(r.stdout, "serve asks\nthe MCP client through elicitation") {
		t.Errorf("lode help:\n%s", r.stdout)
	}
}

// lode tools marks what needs approval for the --role given, with why.
func TestToolsMarksApprovals(t *testing.T) {
	dir, _ := doorsFixture(t)
	r := lode(t, dir, doorsVars, "", "tools", "--role", "editor")
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	marks := map[string]string{}
	current := ""
	for _, l := range strings.Split(r.stdout, "\n") {
		if f := strings.Fields(l); len(f) > 0 && !strings.HasPrefix(l, " ") {
			current = f[0]
		}
		if _, why, ok := strings.Cut(l, "needs approval: "); ok {
			marks[current] = why
		}
	}
	for name, want := range map[string]string{
		"calculator__eval":  "approve: in lode.yaml names calculator",
		"filesystem__read":  "policy: ",
		"filesystem__write": "the tool is marked destructive",
		"filesystem__list":  "",
	} {
		if got := marks[name]; !strings.HasPrefix(got, want) || (want == "") != (got == "") {
			t.Errorf("%s: marked %q, want %q", name, got, want)
		}
	}
	// The viewer's rules ask for no approval of read.
	r = lode(t, dir, doorsVars, "", "tools", "--role", "viewer", "--json")
	var list []struct {
		Name     string `json:"name"`
		Approval string `json:"approval"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &list); err != nil {
		t.Fatalf("tools --json: %v\n%s", err, r.stdout)
	}
	for _, l := range list {
		if l.Name == "filesystem__read" && l.Approval != "" || l.Name == "filesystem__write" && l.Approval != "the tool is marked destructive" {
			t.Errorf("viewer: %s approval %q", l.Name, l.Approval)
		}
	}
	if r := lode(t, t.TempDir(), nil, "", "tools", "--role", "viewer"); r.code != exitUsage || !strings.Contains(r.stderr, "--role needs a policy") {
		t.Errorf("--role without a policy: exit %d %q", r.code, r.stderr)
	}
}

// The approval rule runs before every call at every door.
func BenchmarkApprovalRule(b *testing.B) {
	root := b.TempDir()
	name := filepath.Join(root, "lode.yaml")
	body := []byte(fmt.Sprintf(doorsConfig, root))
	if err := os.WriteFile(name, body, 0o644); err != nil {
		b.Fatal(err)
	}
	cfg, err := parseConfig(name, body)
	if err != nil {
		b.Fatal(err)
	}
	tb, err := mountTools(context.Background(), cfg)
	if err != nil {
		b.Fatal(err)
	}
	defer tb.Close()
	e := env{stderr: io.Discard, getenv: func(k string) string { return doorsVars[k] }}
	d, err := openDoor(e, cfg, tb, doorSpec{kind: doorLoop, roles: "editor"})
	if err != nil {
		b.Fatal(err)
	}
	list, _ := tb.reg.Lookup("filesystem__list")
	ctx := xtool.WithCaller(context.Background(), ledger.NewThread(ledger.WithMetadata(map[string]string{policy.RolesKey: "editor"})))
	call := artifact.ToolCall{ID: "1", Name: "filesystem__list", Arguments: "{}"}
	b.ReportAllocs()
	for b.Loop() {
		if _, ask := d.needs(ctx, list.Tool, call); ask {
			b.Fatal("list needs no approval")
		}
	}
}

// lode web builds lode.yaml's history: policy as run does: one it cannot
// build stops both, with the same line.
func TestWebHonoursHistory(t *testing.T) {
	dir := writeConfig(t, "model:\n  name: m\nhistory:\n  keep: 2\n")
	want := `lode: lode.yaml: history: invalid option: no budget: the context window of model "m" is not known; set WithBudget` + "\n"
	for _, args := range [][]string{
		{"run", "--base-url", "http://127.0.0.1:1/v1", "hi"},
		{"web", "--addr", "127.0.0.1:0", "--base-url", "http://127.0.0.1:1/v1"},
	} {
		if r := lode(t, dir, nil, "", args...); r.code != exitError || r.stderr != want {
			t.Errorf("%v: exit %d, stderr %q, want %q", args, r.code, r.stderr, want)
		}
	}
}
