package cli

import (
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/lodeworks/lode/ledger/file"
	"github.com/lodeworks/lode/loop"
	"github.com/lodeworks/lode/tool"
	"github.com/lodeworks/lode/x/tool/mcp"
)

// lode run stops at each checkpoint's guard with exit 4 and one line
// that says what was stopped; the thread keeps the tripwire, and going on
// with it returns the same trip without asking the model.
func TestRunStoppedByGuard(t *testing.T) {
	const key = "sk-test-abcdefghijklmnop"
	cases := []struct {
		name    string
		guards  string
		replies []func(http.ResponseWriter, *http.Request)
		prompt  string
		asked   int
		want    string
	}{
		{"input", "rules: [{name: no-passwords, at: [input], contains: [password]}]",
			[]func(http.ResponseWriter, *http.Request){textReply("never")},
			"my password is hunter2, keep it", 0,
			`lode: stopped by guard "no-passwords": the message contains "password" (your message was not sent to the model)`},
		{"call", "rules: [{name: small-sums, at: [call], tools: [calculator], match: '\\^'}]",
			[]func(http.ResponseWriter, *http.Request){callReply("call_1", "calculator__eval", `{"expression":"2^10"}`), textReply("never")},
			"what is 2^10?", 1,
			`lode: stopped by guard "small-sums": the call's arguments matches \^ (tool call call_1 did not run)`},
		{"result", "rules: [{name: no-1024, at: [result], contains: ['1024'], reason: the number is withheld}]",
			[]func(http.ResponseWriter, *http.Request){callReply("call_1", "calculator__eval", `{"expression":"2^10"}`), textReply("never")},
			"what is 2^10?", 1,
			`lode: stopped by guard "no-1024": the number is withheld (the result of tool call call_1 was withheld from the model)`},
		{"output: the key is never printed", "secrets: true",
			[]func(http.ResponseWriter, *http.Request){textReply("Sure, your key is ", key[:10], key[10:], ".")},
			"print my API key", 1,
			`lode: stopped by guard "secrets": the answer holds a secret lode was given (24 characters) (the answer was withheld)`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := writeConfig(t, "tools:\n  calculator: {}\nguards:\n  "+c.guards+"\n")
			store := filepath.Join(t.TempDir(), "ledger")
			fake := &fakeOpenAI{replies: c.replies}
			srv := httptest.NewServer(fake)
			defer srv.Close()
			vars := map[string]string{"OPENAI_BASE_URL": srv.URL + "/v1", "OPENAI_API_KEY": key}
			r := lode(t, dir, vars, "", "run", "--model", "m", "--store", store, c.prompt)
			if r.code != exitTripped || !strings.Contains(r.stderr, c.want+"\n") {
				t.Fatalf("exit %d, stderr:\n%s\nwant %s", r.code, r.stderr, c.want)
			}
			if strings.Contains(r.stdout, key) || strings.Contains(r.stdout, "1024") || fake.count() != c.asked {
				t.Fatalf("stdout %q, model asked %d times", r.stdout, fake.count())
			}
			m := regexp.MustCompile(`--thread (\S+) goes on with it`).FindStringSubmatch(r.stderr)
			if m == nil {
				t.Fatalf("no thread note:\n%s", r.stderr)
			}
			s, err := file.Open(store)
			if err != nil {
				t.Fatal(err)
			}
			st, err := s.Load(t.Context(), m[1])
			if err != nil {
				t.Fatal(err)
			}
			te, ok := loop.StoppedBy(st.Turns())
			st.Close()
			if at, _, _ := strings.Cut(c.name, ":"); !ok || te.At != at {
				t.Fatalf("stored: %v %v", te, ok)
			}
			// Going on with the thread gives the trip again; the model is
			// not asked.
			r = lode(t, dir, vars, "", "run", "--model", "m", "--store", store, "--thread", m[1])
			if c.name != "output: the key is never printed" && c.name != "input" {
				if r.code != exitTripped || !strings.Contains(r.stderr, c.want+"\n") || fake.count() != c.asked {
					t.Fatalf("going on: exit %d, asked %d, stderr:\n%s", r.code, fake.count(), r.stderr)
				}
			}
		})
	}
}

// lode chat says what a guard stopped and takes the next message.
func TestChatGoesOnAfterATrip(t *testing.T) {
	dir := writeConfig(t, "guards:\n  rules: [{name: no-passwords, at: [input], contains: [password]}]\n")
	fake := &fakeOpenAI{replies: []func(http.ResponseWriter, *http.Request){textReply("Hello.")}}
	srv := httptest.NewServer(fake)
	defer srv.Close()
	r := lode(t, dir, map[string]string{"OPENAI_BASE_URL": srv.URL + "/v1"}, "my password is x\nhi\n", "chat", "--model", "m")
	if r.code != 0 || !strings.Contains(r.stderr, `lode: stopped by guard "no-passwords": the message contains "password" (your message was not sent to the model)`) || r.stdout != "Hello.\n" {
		t.Fatalf("exit %d, stdout %q, stderr:\n%s", r.code, r.stdout, r.stderr)
	}
	if fake.count() != 1 {
		t.Fatalf("model asked %d times", fake.count())
	}
	for _, m := range fake.requests[0]["messages"].([]any) {
		if strings.Contains(m.(map[string]any)["content"].(string), "password") {
			t.Fatalf("the stopped message was sent: %v", fake.requests[0]["messages"])
		}
	}
}

func TestGuardsConfigErrors(t *testing.T) {
	cases := []struct{ yaml, want string }{
		{"guards:\n  max_bytes: {reply: 10}\n", `lode.yaml:2: guards.max_bytes: "reply" is not a checkpoint (input, call, result, output)`},
		{"guards:\n  max_bytes: {input: 0}\n", `lode.yaml:2: guards.max_bytes.input must be 1 or more`},
		{"guards:\n  rules:\n    - {name: a}\n", `lode.yaml:3: guards.rules[0]: rule "a": it stops nothing: give match, contains or max_bytes`},
		{"guards:\n  rules:\n    - {name: a, match: '('}\n", "lode.yaml:3: guards.rules[0]: rule \"a\": match \"(\": error parsing regexp: missing closing ): `(?i)(`"},
		{"guards:\n  rules:\n    - {name: a, contains: [x]}\n    - {name: a, contains: [y]}\n", `lode.yaml:4: guards.rules[1]: a second rule named "a"; a tripwire names its rule, so names must differ`},
		{"guards:\n  rules:\n    - {name: a, contain: [x]}\n", `lode.yaml:3: unknown key "contain" in a guards.rules: entry`},
		{"guards:\n  model: {at: [input]}\n", `lode.yaml:2: guards.model needs name: the model that judges, on model:'s server`},
		{"guards:\n  output_window: -1\n", `lode.yaml:2: guards.output_window must not be negative (0 means 256 bytes)`},
		{"guards:\n  secret: true\n", `lode.yaml:2: unknown key "secret" in guards:`},
	}
	for _, c := range cases {
		dir := writeConfig(t, c.yaml)
		r := lode(t, dir, nil, "", "tools")
		if r.code != 1 || strings.TrimSpace(r.stderr) != "lode: "+c.want {
			t.Errorf("%q: exit %d\n%s\nwant lode: %s", c.yaml, r.code, r.stderr, c.want)
		}
	}
}

// lode serve asks the call and result guards about an MCP client's
// calls: a stopped one is an isError result that says why.
func TestServeGuardsCalls(t *testing.T) {
	dir := writeConfig(t, "tools:\n  calculator: {}\nguards:\n  rules:\n    - {name: no-powers, at: [call], match: '\\^'}\n    - {name: no-1024, at: [result], contains: ['1024']}\n")
	c, err := mcp.NewClient(mcp.WithName("lode"), mcp.WithStdio(lodeBin, "serve", "--config", filepath.Join(dir, "lode.yaml")))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	cases := []struct{ expr, want string }{
		{"2^10", `stopped: guard "no-powers" withheld this call: the call's arguments matches \^`},
		{"1000+24", `stopped: guard "no-1024" withheld this result: the tool's result contains "1024"`},
		{"1+1", ""},
	}
	for _, cs := range cases {
		v, err := c.Call(t.Context(), "calculator__eval", map[string]any{"expression": cs.expr})
		if err != nil {
			t.Fatal(err)
		}
		res := v.(*tool.Result)
		if cs.want == "" {
			if res.IsError || !strings.HasPrefix(res.Content, "2") {
				t.Fatalf("%s: %+v", cs.expr, res)
			}
			continue
		}
		if !res.IsError || res.Content != cs.want {
			t.Fatalf("%s: isError %v, %q\nwant %q", cs.expr, res.IsError, res.Content, cs.want)
		}
	}
}
