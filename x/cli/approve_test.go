package cli

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

func TestRunPausesAndResumeFinishes(t *testing.T) {
	dir := writeConfig(t, "tools:\n  calculator: {}\napprove: [calculator]\n")
	store := filepath.Join(t.TempDir(), "ledger")
	fake := &fakeOpenAI{replies: []func(http.ResponseWriter, *http.Request){
		callReply("call_1", "calculator__eval", `{"expression":"2^10"}`),
		textReply("1024."),
	}}
	srv := httptest.NewServer(fake)
	defer srv.Close()
	vars := map[string]string{"OPENAI_BASE_URL": srv.URL + "/v1"}

	r := lode(t, dir, vars, "", "run", "--model", "m", "--store", store, "what is 2^10?")
	m := regexp.MustCompile(`lode resume --store (\S+) (\S+) approve:call_1\n`).FindStringSubmatch(r.stderr)
	if r.code != exitPaused || m == nil || m[1] != store {
		t.Fatalf("exit %d, stderr:\n%s", r.code, r.stderr)
	}
	want := `call_1  calculator__eval {"expression":"2^10"}  (approve: in lode.yaml names calculator)`
	if !strings.Contains(r.stderr, want) || strings.Contains(r.stderr, "← calculator__eval") {
		t.Fatalf("stderr lacks the pending call, or it ran:\n%s", r.stderr)
	}

	r = lode(t, dir, vars, "", "resume", "--model", "m", "--store", store, m[2], "approve:call_1")
	if r.code != 0 || r.stdout != "1024.\n" || !strings.Contains(r.stderr, "← calculator__eval: 1024") {
		t.Fatalf("resume: exit %d, stdout %q, stderr:\n%s", r.code, r.stdout, r.stderr)
	}
	// Deciding again finds nothing pending, and nothing runs.
	r = lode(t, dir, vars, "", "resume", "--model", "m", "--store", store, m[2], "approve:call_1")
	if r.code != 1 || !strings.Contains(r.stderr, `loop: decision on call "call_1": no such pending call`) {
		t.Fatalf("second resume: exit %d, stderr:\n%s", r.code, r.stderr)
	}
}

func TestRunWithoutStoreSaysHowToResume(t *testing.T) {
	dir := writeConfig(t, "tools:\n  calculator: {}\napprove: [calculator__eval]\n")
	fake := &fakeOpenAI{replies: []func(http.ResponseWriter, *http.Request){
		callReply("call_1", "calculator__eval", `{"expression":"1+1"}`),
	}}
	srv := httptest.NewServer(fake)
	defer srv.Close()
	r := lode(t, dir, map[string]string{"OPENAI_BASE_URL": srv.URL + "/v1"}, "", "run", "--model", "m", "1+1?")
	if r.code != exitPaused || !strings.Contains(r.stderr, "its thread was kept in memory; run again with --store DIR (or store: in lode.yaml) to resume it later") ||
		!strings.Contains(r.stderr, "(approve: in lode.yaml names calculator__eval)") || strings.Contains(r.stderr, "lode resume") {
		t.Fatalf("exit %d, stderr:\n%s", r.code, r.stderr)
	}
}

func TestChatAsksInTheTerminal(t *testing.T) {
	dir := writeConfig(t, "tools:\n  calculator: {}\napprove: [calculator]\n")
	fake := &fakeOpenAI{replies: []func(http.ResponseWriter, *http.Request){
		callReply("call_1", "calculator__eval", `{"expression":"2^10"}`),
		usedTextReply("I was not allowed."),
		callReply("call_2", "calculator__eval", `{"expression":"2^10"}`),
		usedTextReply("8."),
	}}
	srv := httptest.NewServer(fake)
	defer srv.Close()
	stdin := "first\nmaybe\nn\nnot now\nsecond\ne\n{\"expression\":\"2^3\"}\n"
	r := lode(t, dir, map[string]string{"OPENAI_BASE_URL": srv.URL + "/v1"}, stdin, "chat", "--model", "m")
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	for _, want := range []string{
		`approve calculator__eval {"expression":"2^10"}? (approve: in lode.yaml names calculator) [y/n/e] y, n or e: reason (optional): `,
		`arguments (JSON): `,
		"← calculator__eval: 8",
	} {
		if !strings.Contains(r.stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, r.stderr)
		}
	}
	if r.stdout != "I was not allowed.\n8.\n" {
		t.Errorf("stdout %q", r.stdout)
	}
	// Each model call's usage is said once, after what it answered: the
	// two answers that followed a decision have their own lines.
	if n := strings.Count(r.stderr, "(used: 20 tokens in, 5 out;"); n != 4 || strings.Contains(r.stderr, "(used: 40") {
		t.Errorf("%d usage lines of one call each, want 4:\n%s", n, r.stderr)
	}
	fake.mu.Lock()
	defer fake.mu.Unlock()
	msgs := fake.requests[1]["messages"].([]any)
	last := msgs[len(msgs)-1].(map[string]any)
	if last["content"] != "the call to calculator__eval was denied by the person approving tool calls; it did not run. Their reason: not now" {
		t.Errorf("the model read %v", last)
	}
}

func TestResumeBadInputs(t *testing.T) {
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"resume", "--model", "m"}, "lode resume needs a thread ID: lode resume --store DIR THREAD approve:ID\n"},
		{[]string{"resume", "--model", "m", "t1", "maybe:call_1"}, `unknown decision "maybe:call_1": want approve:ID, deny:ID=REASON or edit:ID=JSON` + "\n"},
		{[]string{"resume", "--model", "m", "t1", "edit:call_1={"}, `edit:call_1: "{" is not JSON` + "\n"},
		{[]string{"resume", "--model", "m", "t1", "approve:"}, `decision "approve:" names no call: want approve:ID, deny:ID=REASON or edit:ID=JSON` + "\n"},
		{[]string{"resume", "--model", "m", "t1"}, "lode resume needs the ledger the run used: --store DIR, or store: in lode.yaml\n"},
	}
	for _, c := range cases {
		r := lode(t, t.TempDir(), nil, "", c.args...)
		if r.code != exitUsage || !strings.HasSuffix(r.stderr, c.want) {
			t.Errorf("%v: exit %d, stderr %q, want suffix %q", c.args, r.code, r.stderr, c.want)
		}
	}
}

// An edit that breaks the tool's schema records nothing: chat says why and
// asks again about that call, and the request after the decision has the
// call's result right after the call, no user message between.
func TestChatAsksAgainAfterABadEdit(t *testing.T) {
	dir := writeConfig(t, "tools:\n  calculator: {}\napprove: [calculator]\n")
	fake := &fakeOpenAI{replies: []func(http.ResponseWriter, *http.Request){
		callReply("call_1", "calculator__eval", `{"expression":"2^10"}`),
		textReply("8."),
	}}
	srv := httptest.NewServer(fake)
	defer srv.Close()
	stdin := "first\ne\n{\"expression\":5}\ne\n{\"expression\":\"2^3\"}\n"
	r := lode(t, dir, map[string]string{"OPENAI_BASE_URL": srv.URL + "/v1"}, stdin, "chat", "--model", "m")
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	asked := `approve calculator__eval {"expression":"2^10"}? (approve: in lode.yaml names calculator) [y/n/e] `
	if strings.Count(r.stderr, asked) != 2 || !strings.Contains(r.stderr, `lode: loop: decision on call "call_1": `) ||
		!strings.Contains(r.stderr, "; decide again\n") || strings.Count(r.stderr, "← calculator__eval: 8") != 1 {
		t.Fatalf("stderr:\n%s", r.stderr)
	}
	fake.mu.Lock()
	defer fake.mu.Unlock()
	if len(fake.requests) != 2 {
		t.Fatalf("%d requests", len(fake.requests))
	}
	var roles []string
	for _, m := range fake.requests[1]["messages"].([]any) {
		roles = append(roles, m.(map[string]any)["role"].(string))
	}
	if got := strings.Join(roles, ","); got != "user,assistant,tool" {
		t.Errorf("second request's turn order %s", got)
	}
}

// usedTextReply answers text and reports the usage callReply reports.
func usedTextReply(text string) func(http.ResponseWriter, *http.Request) {
	return func(w http.ResponseWriter, _ *http.Request) {
		sse(w,
			chunk(fmt.Sprintf(`{"role":"assistant","content":%q}`, text), ""),
			chunk(`{}`, "stop"),
			`{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"m","choices":[],"usage":{"prompt_tokens":20,"completion_tokens":5,"total_tokens":25}}`,
		)
	}
}
