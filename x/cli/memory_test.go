package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/lodeworks/lode/artifact"
	"github.com/lodeworks/lode/ledger"
	"github.com/lodeworks/lode/ledger/file"
	"github.com/lodeworks/lode/loop"
	"github.com/lodeworks/lode/tool"
	"github.com/lodeworks/lode/x/auth"
	"github.com/lodeworks/lode/x/memory"
	"github.com/lodeworks/lode/x/tool/mcp"
)

func TestMemoryConfigRefused(t *testing.T) {
	for _, tc := range []struct{ name, yaml, want string }{
		{"unknown key", "memory:\n  store: m\n  recal: 3\n", `lode.yaml:3: unknown key "recal" in memory:`},
		{"no store", "memory:\n  recall: 3\n", "lode.yaml:2: memory.recall needs memory.store: where the facts live"},
		{"empty store", "memory:\n  store: \"\"\n", "lode.yaml:2: memory.store is empty"},
		{"password", "memory:\n  store: postgres://lode:hunter2@db/lode\n", "lode.yaml:2: memory.store: a password in the store spec"},
		{"unknown kind", "memory:\n  store: redis://db\n", `lode.yaml:2: memory.store: invalid store spec "redis://db": unknown kind of store "redis"`},
		{"negative recall", "memory:\n  store: m\n  recall: -1\n", "lode.yaml:3: memory.recall must be from 0 (off) to 50 facts, got -1"},
		{"recall over the limit", "memory:\n  store: m\n  recall: 51\n", "lode.yaml:3: memory.recall must be from 0 (off) to 50 facts, got 51"},
		{"recall not a number", "memory:\n  store: m\n  recall: lots\n", "cannot unmarshal !!str `lots` into int"},
		{"empty role", "memory:\n  store: m\n  roles: [staff, \"\"]\n", "memory.roles: entry 2 is empty"},
		{"extract_facts without extract", "memory:\n  store: m\n  extract_facts: 3\n", "lode.yaml:3: memory.extract_facts applies with extract: true"},
		{"extract_facts over", "memory:\n  store: m\n  extract: true\n  extract_facts: 99\n", "memory.extract_facts must be from 0 (the default, 5) to 50, got 99"},
		{"nothing on", "memory:\n  store: m\n  tools: false\n", "lode.yaml:1: memory: with tools: false, recall: 0 and extract: false does nothing"},
		{"tools not a bool", "memory:\n  store: m\n  tools: sometimes\n", "cannot unmarshal !!str `sometimes` into bool"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := parseConfig("lode.yaml", []byte(tc.yaml))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want %q", err, tc.want)
			}
		})
	}
	cfg, err := parseConfig("lode.yaml", []byte("memory:\n  store: sqlite:facts.db\n  roles: [staff]\n  recall: 3\n  extract: true\n  extract_facts: 2\n"))
	if err != nil {
		t.Fatal(err)
	}
	if m := cfg.Memory; !m.tools() || m.Recall != 3 || !m.Extract || m.ExtractFacts != 2 || len(m.Roles) != 1 {
		t.Fatalf("memory: %+v", m)
	}
}

// memoryFacts lists the facts of id in the folder store dir.
func memoryFacts(t *testing.T, dir string, id auth.Identity) []string {
	t.Helper()
	s, err := memory.OpenFile(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	sc, _ := memory.ScopeOf(id)
	list, err := s.List(context.Background(), sc)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, f := range list {
		out = append(out, f.Text)
	}
	return out
}

// lastToolResult is the content of the last tool message of the n-th
// request the fake received.
func lastToolResult(t *testing.T, fake *fakeOpenAI, n int) string {
	t.Helper()
	fake.mu.Lock()
	defer fake.mu.Unlock()
	msgs := fake.requests[n]["messages"].([]any)
	for i := len(msgs) - 1; i >= 0; i-- {
		if m := msgs[i].(map[string]any); m["role"] == "tool" {
			s, _ := m["content"].(string)
			return s
		}
	}
	t.Fatalf("request %d has no tool result", n)
	return ""
}

// requestText is the n-th request's messages as JSON.
func requestText(fake *fakeOpenAI, n int) string {
	fake.mu.Lock()
	defer fake.mu.Unlock()
	b, _ := json.Marshal(fake.requests[n]["messages"])
	return string(b)
}

const lockerFact = "The locker code is 4417."

// lode run and lode chat save a fact in the scope of the local user and
// --tenant: the same user in another tenant finds nothing, another user's
// fact in the same tenant is never found, and the user finds theirs in a
// new thread, both by memory_search and by recall.
func TestMemoryAtRunAndChat(t *testing.T) {
	me := loginName()
	if me == "" {
		t.Skip("the system names no login")
	}
	for _, cmd := range []string{"run", "chat"} {
		t.Run(cmd, func(t *testing.T) {
			dir := writeConfig(t, "memory:\n  store: facts\n  recall: 3\n")
			facts := filepath.Join(dir, "facts")
			// bob's fact, in the same tenant, saved by another door.
			s, err := memory.OpenFile(facts)
			if err != nil {
				t.Fatal(err)
			}
			bob, _ := memory.ScopeOf(auth.Identity{User: me + "-bob", Tenant: "acme"})
			if _, err := s.Save(context.Background(), bob, "Bob's locker code is 5555."); err != nil {
				t.Fatal(err)
			}
			s.Close()

			fake := &fakeOpenAI{replies: []func(http.ResponseWriter, *http.Request){
				callReply("c1", memory.SaveTool, fmt.Sprintf(`{"fact":%q}`, lockerFact)), textReply("Saved."),
				callReply("c2", memory.SearchTool, `{"query":"locker code"}`), textReply("Nothing."),
				callReply("c3", memory.SearchTool, `{"query":"locker code"}`), textReply("4417."),
			}}
			srv := httptest.NewServer(fake)
			defer srv.Close()
			vars := map[string]string{"OPENAI_BASE_URL": srv.URL + "/v1"}
			ask := func(tenant, prompt string) {
				t.Helper()
				args := []string{cmd, "--model", "m", "--store", filepath.Join(dir, "threads"), "--tenant", tenant}
				stdin := ""
				if cmd == "run" {
					args = append(args, prompt)
				} else {
					stdin = prompt + "\n"
				}
				if r := lode(t, dir, vars, stdin, args...); r.code != 0 {
					t.Fatalf("%s --tenant %s: exit %d: %s", cmd, tenant, r.code, r.stderr)
				}
			}
			ask("acme", "Remember: my locker code is 4417.")
			if got := memoryFacts(t, facts, auth.Identity{User: me, Tenant: "acme"}); len(got) != 1 || got[0] != lockerFact {
				t.Fatalf("saved %q", got)
			}
			ask("globex", "What is my locker code?")
			if got := lastToolResult(t, fake, 3); strings.Contains(got, "4417") || strings.Contains(got, "5555") || !strings.Contains(got, `"facts":[]`) {
				t.Errorf("%s in another tenant found %s", me, got)
			}
			if got := requestText(fake, 2); strings.Contains(got, "4417") {
				t.Errorf("recall in another tenant sent %s", got)
			}
			ask("acme", "What is my locker code?")
			if got := lastToolResult(t, fake, 5); !strings.Contains(got, "4417") || strings.Contains(got, "5555") {
				t.Errorf("%s in a new thread found %s", me, got)
			}
			if got := requestText(fake, 4); !strings.Contains(got, "4417") || strings.Contains(got, "5555") || !strings.Contains(got, memory.RecallURI) {
				t.Errorf("recall in a new thread sent %s", got)
			}
		})
	}
}

// memoryLogins are three logins: alice and bob of acme, and alice of
// globex.
const memoryLogins = `tokens:
  - { user: alice, tenant: acme, env: ALICE_TOKEN }
  - { user: bob, tenant: acme, env: BOB_TOKEN }
  - { user: alice, tenant: globex, env: ALICE_GLOBEX_TOKEN }
`

var memoryVars = map[string]string{"ALICE_TOKEN": aliceToken, "BOB_TOKEN": bobToken, "ALICE_GLOBEX_TOKEN": "alice-globex-secret-token"}

func chatBody(text string) string {
	return fmt.Sprintf(`{"messages":[{"role":"user","parts":[{"type":"text","text":%q}]}]}`, text)
}

// lode web keeps each login's facts to that login: alice saves, bob and
// alice of another tenant search and are given nothing, and alice finds
// hers in a new thread, by the tool and by recall.
func TestMemoryAtWeb(t *testing.T) {
	dir := writeConfig(t, "memory:\n  store: facts\n  recall: 3\n"+memoryLogins)
	fake := &fakeOpenAI{replies: []func(http.ResponseWriter, *http.Request){
		callReply("c1", memory.SaveTool, fmt.Sprintf(`{"fact":%q}`, lockerFact)), textReply("Saved."),
		callReply("c2", memory.SearchTool, `{"query":"alice locker code 4417"}`), textReply("Nothing."),
		callReply("c3", memory.SearchTool, `{"query":"alice locker code 4417"}`), textReply("Nothing."),
		callReply("c4", memory.SearchTool, `{"query":"locker code"}`), textReply("4417."),
	}}
	model := httptest.NewServer(fake)
	defer model.Close()
	url := startDoor(t, dir, memoryVars, `chat at (http://\S+/)`, "web", "--addr", "127.0.0.1:0", "--store", filepath.Join(dir, "threads"), "--base-url", model.URL+"/v1", "--model", "m")
	chat := func(token, text string) {
		t.Helper()
		if code, body := send(t, http.MethodPost, url+"api/chat", chatBody(text), "Authorization", "Bearer "+token); code != http.StatusOK {
			t.Fatalf("chat: %d %s", code, body)
		}
	}
	chat(aliceToken, "Remember: my locker code is 4417.")
	if got := memoryFacts(t, filepath.Join(dir, "facts"), auth.Identity{User: "alice", Tenant: "acme"}); len(got) != 1 || got[0] != lockerFact {
		t.Fatalf("saved %q", got)
	}
	for i, token := range []string{bobToken, memoryVars["ALICE_GLOBEX_TOKEN"]} {
		chat(token, "What is alice's locker code?")
		if got := lastToolResult(t, fake, 3+2*i); strings.Contains(got, "4417") || !strings.Contains(got, `"facts":[]`) {
			t.Errorf("caller %d found %s", i, got)
		}
		if got := requestText(fake, 2+2*i); strings.Contains(got, "4417") {
			t.Errorf("recall for caller %d sent %s", i, got)
		}
	}
	code, stream := send(t, http.MethodPost, url+"api/chat", chatBody("What is my locker code?"), "Authorization", "Bearer "+aliceToken)
	streamed := regexp.MustCompile(`"messageId":"([^"]+)"`).FindStringSubmatch(stream)
	threadID := regexp.MustCompile(`"threadId":"([^"]+)"`).FindStringSubmatch(stream)
	if code != http.StatusOK || streamed == nil || threadID == nil {
		t.Fatalf("alice's chat: %d %s", code, stream)
	}
	if got := lastToolResult(t, fake, 7); !strings.Contains(got, "4417") {
		t.Errorf("alice in a new thread found %s", got)
	}
	if got := requestText(fake, 6); !strings.Contains(got, "4417") {
		t.Errorf("recall for alice sent %s", got)
	}
	// The page shows the recall as nothing the user said, and the
	// answer's message keeps the ID its stream gave it after a reload.
	code, body := send(t, http.MethodGet, url+"api/threads", "", "Authorization", "Bearer "+aliceToken)
	if code != http.StatusOK || strings.Contains(body, "Facts remembered") {
		t.Errorf("alice's threads: %d %s", code, body)
	}
	code, body = send(t, http.MethodGet, url+"api/threads/"+threadID[1], "", "Authorization", "Bearer "+aliceToken)
	var got struct {
		Messages []struct{ ID, Role string } `json:"messages"`
	}
	if err := json.Unmarshal([]byte(body), &got); code != http.StatusOK || err != nil {
		t.Fatalf("alice's thread: %d %s", code, body)
	}
	if want := fmt.Sprintf("[{turn-0 user} {%s assistant}]", streamed[1]); fmt.Sprint(got.Messages) != want {
		t.Errorf("reloaded messages %v, want %s", got.Messages, want)
	}
}

// lode serve --http gives each token's caller the memory of that login
// only, through the same handler as every tool.
func TestMemoryAtServe(t *testing.T) {
	dir := writeConfig(t, "memory:\n  store: facts\n"+memoryLogins)
	url := startDoor(t, dir, memoryVars, `tools at (http://\S+/mcp)`, "serve", "--http", "127.0.0.1:0")
	call := func(token, name string, args map[string]any) string {
		t.Helper()
		c, err := mcp.NewClient(mcp.WithName("lode"), mcp.WithHTTP(url), mcp.WithHeader("Authorization", "Bearer "+token))
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		v, err := c.Call(context.Background(), name, args)
		if err != nil {
			t.Fatal(err)
		}
		res, ok := v.(*tool.Result)
		if !ok || res.IsError {
			t.Fatalf("%s: %#v", name, v)
		}
		return res.Content
	}
	if got := call(aliceToken, memory.SaveTool, map[string]any{"fact": lockerFact}); !strings.Contains(got, `"saved":true`) {
		t.Fatalf("alice's save: %s", got)
	}
	for _, token := range []string{bobToken, memoryVars["ALICE_GLOBEX_TOKEN"]} {
		if got := call(token, memory.SearchTool, map[string]any{"query": "alice locker code 4417"}); strings.Contains(got, "4417") {
			t.Errorf("another login found %s", got)
		}
	}
	if got := call(aliceToken, memory.SearchTool, map[string]any{"query": "locker code"}); !strings.Contains(got, "4417") {
		t.Errorf("alice found %s", got)
	}
}

// A policy that does not allow memory_save refuses it at the door, and
// nothing is saved.
func TestMemoryPolicyDenies(t *testing.T) {
	dir := writeConfig(t, "memory:\n  store: facts\npolicy:\n  roles:\n    viewer:\n      allow: { tools: [memory_search] }\n")
	fake := &fakeOpenAI{replies: []func(http.ResponseWriter, *http.Request){
		callReply("c1", memory.SaveTool, fmt.Sprintf(`{"fact":%q}`, lockerFact)), textReply("Could not."),
	}}
	srv := httptest.NewServer(fake)
	defer srv.Close()
	r := lode(t, dir, map[string]string{"OPENAI_BASE_URL": srv.URL + "/v1"}, "", "run", "--model", "m", "--role", "viewer", "Remember my locker code.")
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	if got := lastToolResult(t, fake, 1); !strings.HasPrefix(got, `unknown tool "memory_save". Tools available in this turn: memory_search.`) {
		t.Errorf("the refused call's result: %s", got)
	}
	if got := memoryFacts(t, filepath.Join(dir, "facts"), auth.Identity{User: loginName()}); len(got) != 0 {
		t.Errorf("saved %q", got)
	}
}

// lode serve over stdio keeps the memory of the local login, as lode run
// does: the MCP client that starts it runs as that user.
func TestMemoryAtServeStdio(t *testing.T) {
	me := loginName()
	if me == "" {
		t.Skip("the system names no login")
	}
	facts := filepath.Join(t.TempDir(), "facts")
	dir := writeConfig(t, fmt.Sprintf("memory:\n  store: %q\n", facts))
	c, err := mcp.NewClient(mcp.WithName("lode"), mcp.WithStdio(lodeBin, "serve", "--config", filepath.Join(dir, "lode.yaml")))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	v, err := c.Call(context.Background(), memory.SaveTool, map[string]any{"fact": lockerFact})
	if res, ok := v.(*tool.Result); err != nil || !ok || res.IsError {
		t.Fatalf("save: %#v, %v", v, err)
	}
	c.Close()
	if got := memoryFacts(t, facts, auth.Identity{User: me}); len(got) != 1 || got[0] != lockerFact {
		t.Fatalf("%s's facts: %q", me, got)
	}
}

// workerOnly is a Temporal whose worker runs during while lode worker
// serves; the other engines' calls are not expected.
type workerOnly struct {
	during func(ctx context.Context, a *Agent) error
}

func (w workerOnly) Worker(ctx context.Context, a *Agent) error { return w.during(ctx, a) }
func (workerOnly) Run(context.Context, *Agent, string) error    { return errors.New("not expected") }
func (workerOnly) Resume(context.Context, *Agent, string, []artifact.Decision) error {
	return errors.New("not expected")
}

// lode worker --temporal builds the agent's memory from lode.yaml: turns
// it takes for a thread run in that thread's caller's scope, so alice's
// fact is found by alice in a new thread and by nobody else.
func TestMemoryAtTemporalWorker(t *testing.T) {
	fake := &fakeOpenAI{replies: []func(http.ResponseWriter, *http.Request){
		callReply("c1", memory.SaveTool, fmt.Sprintf(`{"fact":%q}`, lockerFact)), textReply("Saved."),
		callReply("c2", memory.SearchTool, `{"query":"alice locker code 4417"}`), textReply("Nothing."),
		callReply("c3", memory.SearchTool, `{"query":"alice locker code 4417"}`), textReply("Nothing."),
		callReply("c4", memory.SearchTool, `{"query":"locker code"}`), textReply("4417."),
	}}
	srv := httptest.NewServer(fake)
	defer srv.Close()
	dir := writeConfig(t, "store: threads\nmemory:\n  store: facts\n  recall: 3\nmodel:\n  base_url: "+srv.URL+"/v1\n  name: m\n")
	worked := false
	w := workerOnly{during: func(ctx context.Context, a *Agent) error {
		worked = true
		// What the Temporal workflow does with the agent: a Step of its
		// loop options, handler and invoke options, on stored threads.
		step := loop.New(append(slices.Clip(a.Loop), loop.WithHandlers(a.Handler), loop.WithInvokeOptions(a.Invoke...))...)
		for _, id := range []auth.Identity{{User: "alice", Tenant: "acme"}, {User: "bob", Tenant: "acme"}, {User: "alice", Tenant: "globex"}, {User: "alice", Tenant: "acme"}} {
			st, err := a.Store.Create(ctx, ledger.WithMetadata(id.Metadata()))
			if err != nil {
				return err
			}
			if err := st.Append(ledger.RoleUser, artifact.Text{Content: "my locker code"}); err != nil {
				return err
			}
			_, err = step.Run(ctx, st, a.Provider)
			st.Close()
			if err != nil {
				return err
			}
		}
		return nil
	}}
	if r := lodeWith(t, w, dir, "worker", "--temporal", "127.0.0.1:7233"); r.code != 0 || !worked {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	if got := memoryFacts(t, filepath.Join(dir, "facts"), auth.Identity{User: "alice", Tenant: "acme"}); len(got) != 1 || got[0] != lockerFact {
		t.Fatalf("alice's facts %q", got)
	}
	for _, n := range []int{3, 5} {
		if got := lastToolResult(t, fake, n); strings.Contains(got, "4417") {
			t.Errorf("request %d: another caller found %s", n, got)
		}
		if got := requestText(fake, n-1); strings.Contains(got, "4417") {
			t.Errorf("request %d: another caller was recalled %s", n-1, got)
		}
	}
	if got := lastToolResult(t, fake, 7); !strings.Contains(got, "4417") {
		t.Errorf("alice in a new thread found %s", got)
	}
	if got := requestText(fake, 6); !strings.Contains(got, "4417") {
		t.Errorf("alice in a new thread was recalled nothing: %s", got)
	}
}

// With extract: true, lode run asks the model for the run's facts after
// its answer and saves them in the caller's scope; an answer that is not
// the JSON asked for saves nothing, says so on stderr, and the run still
// succeeds with its answer.
func TestMemoryExtractAtRun(t *testing.T) {
	me := loginName()
	if me == "" {
		t.Skip("the system names no login")
	}
	for _, tc := range []struct {
		name, answer, stderr string
		saved                []string
	}{
		{"saved", `{"facts": ["The user cycles to work."]}`, "memory: saved 1 fact from this run", []string{"The user cycles to work."}},
		{"not JSON", `I think the user cycles.`, `memory: nothing saved from this run: extraction refused: the answer "I think the user cycles." is not {"facts": [...]}`, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := writeConfig(t, "memory:\n  store: facts\n  tools: false\n  extract: true\n")
			fake := &fakeOpenAI{replies: []func(http.ResponseWriter, *http.Request){textReply("Noted."), textReply(tc.answer)}}
			srv := httptest.NewServer(fake)
			defer srv.Close()
			r := lode(t, dir, map[string]string{"OPENAI_BASE_URL": srv.URL + "/v1"}, "", "run", "--model", "m", "--tenant", "acme", "I cycle to work.")
			if r.code != 0 || r.stdout != "Noted.\n" || !strings.Contains(r.stderr, tc.stderr) {
				t.Fatalf("exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
			}
			if got := memoryFacts(t, filepath.Join(dir, "facts"), auth.Identity{User: me, Tenant: "acme"}); strings.Join(got, "|") != strings.Join(tc.saved, "|") {
				t.Errorf("saved %q, want %q", got, tc.saved)
			}
			fake.mu.Lock()
			tools, _ := json.Marshal(fake.requests[0]["tools"])
			fake.mu.Unlock()
			if strings.Contains(string(tools), "memory_") {
				t.Errorf("tools: false offered the tools: %s", tools)
			}
			if got := requestText(fake, 1); !strings.Contains(got, "I cycle to work.") || !strings.Contains(got, "Noted.") {
				t.Errorf("the extraction was sent %s", got)
			}
		})
	}
}

// memory.store takes SQLite and PostgreSQL as store: does, and may share
// the ledger's database: a fact lode run saves is its caller's there,
// found in a new thread and not in another tenant.
func TestMemoryOnSQLStores(t *testing.T) {
	me := loginName()
	if me == "" {
		t.Skip("the system names no login")
	}
	for kind, newSpec := range storeSpecs(t) {
		t.Run(kind, func(t *testing.T) {
			spec := newSpec(t)
			dir := writeConfig(t, fmt.Sprintf("store: %q\nmemory:\n  store: %q\n  recall: 3\n", spec, spec))
			fake := &fakeOpenAI{replies: []func(http.ResponseWriter, *http.Request){
				callReply("c1", memory.SaveTool, fmt.Sprintf(`{"fact":%q}`, lockerFact)), textReply("Saved."),
				callReply("c2", memory.SearchTool, `{"query":"locker code"}`), textReply("Nothing."),
				callReply("c3", memory.SearchTool, `{"query":"locker code"}`), textReply("4417."),
			}}
			srv := httptest.NewServer(fake)
			defer srv.Close()
			vars := map[string]string{"OPENAI_BASE_URL": srv.URL + "/v1"}
			for _, tenant := range []string{"acme", "globex", "acme"} {
				if r := lode(t, dir, vars, "", "run", "--model", "m", "--tenant", tenant, "my locker code"); r.code != 0 {
					t.Fatalf("run --tenant %s: exit %d: %s", tenant, r.code, r.stderr)
				}
			}
			if got := lastToolResult(t, fake, 3); strings.Contains(got, "4417") {
				t.Errorf("another tenant found %s", got)
			}
			if got := lastToolResult(t, fake, 5); !strings.Contains(got, "4417") {
				t.Errorf("a new thread found %s", got)
			}
			if got := requestText(fake, 4); !strings.Contains(got, "4417") {
				t.Errorf("a new thread was recalled nothing: %s", got)
			}
			s, err := openMemory(context.Background(), spec)
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			sc, _ := memory.ScopeOf(auth.Identity{User: me, Tenant: "acme"})
			if list, err := s.List(context.Background(), sc); err != nil || len(list) != 1 || list[0].Text != lockerFact {
				t.Fatalf("facts %+v, %v", list, err)
			}
		})
	}
}

// textUsage streams text and a usage of in and out tokens.
func textUsage(text string, in, out int) func(http.ResponseWriter, *http.Request) {
	return func(w http.ResponseWriter, _ *http.Request) {
		sse(w, chunk(fmt.Sprintf(`{"role":"assistant","content":%q}`, text), ""), chunk(`{}`, "stop"),
			fmt.Sprintf(`{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"tiny","choices":[],"usage":{"prompt_tokens":%d,"completion_tokens":%d,"total_tokens":%d}}`, in, out, in+out))
	}
}

// An extraction's tokens are the run's: lode run prints them in its
// total, and with a policy the tenant's day counter holds them with the
// answer's.
func TestMemoryExtractIsCharged(t *testing.T) {
	dir := writeConfig(t, pricedTiny+"store: threads\nmemory:\n  store: facts\n  extract: true\npolicy:\n  roles:\n    viewer:\n      allow: {packs: [calculator]}\n  tenants:\n    acme: {usd_per_day: 5}\n")
	fake := &fakeOpenAI{replies: []func(http.ResponseWriter, *http.Request){
		textUsage("Noted.", 20, 5),
		textUsage(`{"facts": ["The user cycles to work."]}`, 100, 10),
	}}
	srv := httptest.NewServer(fake)
	defer srv.Close()
	r := lode(t, dir, map[string]string{"OPENAI_BASE_URL": srv.URL + "/v1"}, "", "run", "--model", "tiny", "--role", "viewer", "--tenant", "acme", "I cycle to work.")
	// 120 tokens in at $1000 and 15 out at $2000 per million: $0.15.
	if r.code != 0 || !strings.Contains(r.stderr, "(used: 120 tokens in, 15 out, $0.1500)") {
		t.Fatalf("exit %d, stderr %q", r.code, r.stderr)
	}
	s, err := file.Open(filepath.Join(dir, "threads"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	day := time.Now().UTC().Format(time.DateOnly)
	spent, _, err := s.AddCounter(context.Background(), "lode.spend:"+day+":tenant:acme", 0, ledger.NoLimit)
	if err != nil || spent != 150_000 {
		t.Fatalf("the tenant's counter holds %d millionths (%v), want 150000", spent, err)
	}
}

// lode worker --temporal hands the engine memory extraction as an answer
// handler, with extract: true only, and never among the loop's options,
// whose turns run no handlers.
func TestMemoryExtractAtTemporalWorker(t *testing.T) {
	for _, extract := range []bool{false, true} {
		dir := writeConfig(t, fmt.Sprintf("store: threads\nmemory:\n  store: facts\n  extract: %v\nmodel:\n  base_url: http://127.0.0.1:1/v1\n  name: m\n", extract))
		f := &fakeTemporal{}
		if r := lodeWith(t, f, dir, "worker", "--temporal", "127.0.0.1:7233"); r.code != 0 || !f.worked {
			t.Fatalf("exit %d: %s", r.code, r.stderr)
		}
		if got := len(f.agent.Answer); got != map[bool]int{false: 0, true: 1}[extract] {
			t.Errorf("extract: %v: %d answer handlers", extract, got)
		}
	}
}
