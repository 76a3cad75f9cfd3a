package cli

import (
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func offeredNames(req map[string]any) []string {
	var names []string
	tools, _ := req["tools"].([]any)
	for _, tl := range tools {
		names = append(names, tl.(map[string]any)["function"].(map[string]any)["name"].(string))
	}
	return names
}

// TestDeferRun: with defer: [calculator], lode run's first request
// offers tool_search and no calculator tool; the model searches, the
// next request offers what it found, and the call runs; the call made
// before the search was refused as a tool that does not exist.
func TestDeferRun(t *testing.T) {
	dir := writeConfig(t, "tools:\n  calculator: {}\ndefer: [calculator]\n")
	fake := &fakeOpenAI{replies: []func(http.ResponseWriter, *http.Request){
		callReply("call_0", "calculator__eval", `{"expression":"1+1"}`),
		callReply("call_1", "tool_search", `{"query":"evaluate an arithmetic expression"}`),
		callReply("call_2", "calculator__eval", `{"expression":"2^10"}`),
		textReply("1024"),
	}}
	srv := httptest.NewServer(fake)
	defer srv.Close()
	store := filepath.Join(t.TempDir(), "s")
	r := lode(t, dir, map[string]string{"OPENAI_BASE_URL": srv.URL + "/v1"}, "", "run", "--model", "tiny", "--store", store, "what is 2^10?")
	if r.code != 0 || r.stdout != "1024\n" {
		t.Fatalf("exit %d, stdout %q: %s", r.code, r.stdout, r.stderr)
	}
	fake.mu.Lock()
	defer fake.mu.Unlock()
	first := offeredNames(fake.requests[0])
	if !slices.Contains(first, "tool_search") || slices.ContainsFunc(first, func(n string) bool { return strings.HasPrefix(n, "calculator__") }) {
		t.Fatalf("first request offers %v", first)
	}
	if !slices.Contains(offeredNames(fake.requests[2]), "calculator__eval") {
		t.Fatalf("the request after the search offers %v", offeredNames(fake.requests[2]))
	}
	for _, want := range []string{`✗ calculator__eval: unknown tool "calculator__eval". Tools available in this turn: tool_search.`, "← calculator__eval: 1024"} {
		if !strings.Contains(r.stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, r.stderr)
		}
	}
}

func TestDeferTools(t *testing.T) {
	dir := writeConfig(t, "tools:\n  calculator: {}\ndefer: [calculator]\n")
	r := lode(t, dir, nil, "", "tools")
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	if !strings.Contains(r.stdout, "deferred: offered once tool_search finds it (defer: in lode.yaml)") || !strings.Contains(r.stdout, "tool_search  ") {
		t.Fatalf("lode tools:\n%s", r.stdout)
	}
	r = lode(t, dir, nil, "", "tools", "--json")
	if r.code != 0 || !strings.Contains(r.stdout, `"name": "calculator__eval",`) || !strings.Contains(r.stdout, `"deferred": true`) {
		t.Fatalf("lode tools --json: exit %d\n%s", r.code, r.stdout)
	}
}

func TestDeferUnknownName(t *testing.T) {
	dir := writeConfig(t, "tools:\n  calculator: {}\ndefer: [calculater]\n")
	r := lode(t, dir, nil, "", "tools")
	want := `lode.yaml:3: defer: names "calculater", which is neither a pack of tools: nor a server of mcp:; they are calculator`
	if r.code != 1 || !strings.Contains(r.stderr, want) {
		t.Fatalf("exit %d: %q, want %q", r.code, r.stderr, want)
	}
}

// TestDeferWeb: lode web offers through the same search as lode run.
func TestDeferWeb(t *testing.T) {
	dir := writeConfig(t, "tools:\n  calculator: {}\ndefer: [calculator]\n")
	fake := &fakeOpenAI{replies: []func(http.ResponseWriter, *http.Request){
		callReply("call_1", "tool_search", `{"query":"evaluate an arithmetic expression"}`),
		callReply("call_2", "calculator__eval", `{"expression":"2^10"}`),
		textReply("1024"),
	}}
	url, _, stop := startWeb(t, dir, fake)
	defer stop()
	body := `{"messages":[{"role":"user","parts":[{"type":"text","text":"what is 2^10?"}]}]}`
	resp, err := http.Post(url+"api/chat", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(b), "1024") {
		t.Fatalf("the chat's stream lacks the answer:\n%s", b)
	}
	fake.mu.Lock()
	defer fake.mu.Unlock()
	if len(fake.requests) != 3 {
		t.Fatalf("%d model requests", len(fake.requests))
	}
	if first := offeredNames(fake.requests[0]); !slices.Equal(first, []string{"tool_search"}) {
		t.Fatalf("first request offers %v", first)
	}
	if second := offeredNames(fake.requests[1]); !slices.Contains(second, "calculator__eval") {
		t.Fatalf("the request after the search offers %v", second)
	}
}

// TestDeferPolicy: a policy may name tool_search, and a role it hides
// a deferred tool from never finds it.
func TestDeferPolicy(t *testing.T) {
	dir := writeConfig(t, `tools:
  calculator: {}
defer: [calculator]
policy:
  roles:
    user:
      allow:
        tools: ["tool_search"]
`)
	r := lode(t, dir, nil, "", "tools", "--role", "user")
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	fake := &fakeOpenAI{replies: []func(http.ResponseWriter, *http.Request){
		callReply("call_1", "tool_search", `{"query":"evaluate an arithmetic expression"}`),
		textReply("none"),
	}}
	srv := httptest.NewServer(fake)
	defer srv.Close()
	r = lode(t, dir, map[string]string{"OPENAI_BASE_URL": srv.URL + "/v1"}, "", "run", "--model", "tiny", "--role", "user", "what is 2^10?")
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	if want := `← tool_search: No tools match "evaluate an arithmetic expression".`; !strings.Contains(r.stderr, want) {
		t.Fatalf("stderr lacks %q:\n%s", want, r.stderr)
	}
	fake.mu.Lock()
	defer fake.mu.Unlock()
	if got := offeredNames(fake.requests[1]); !slices.Equal(got, []string{"tool_search"}) {
		t.Fatalf("the user is offered %v after searching", got)
	}
}
