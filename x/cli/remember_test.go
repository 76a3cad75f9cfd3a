package cli

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lodeworks/lode/ledger"
	"github.com/lodeworks/lode/ledger/file"
)

// failReply answers with an error the client does not retry.
func failReply(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusBadRequest)
	_, _ = w.Write([]byte(`{"error":{"message":"the server is having a bad day","type":"invalid_request_error"}}`))
}

func (f *fakeOpenAI) models() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []string
	for _, r := range f.requests {
		m, _ := r["model"].(string)
		out = append(out, m)
	}
	return out
}

// The lode resume commands a pause prints work as printed: the thread
// remembers the model the run was given by flags, over what lode.yaml and
// the environment say where the command is run; a flag changes it, and
// the thread remembers the change. The key's variable is remembered by
// name, never the key.
func TestPrintedResumeReachesTheThreadsModel(t *testing.T) {
	fake := &fakeOpenAI{replies: []func(http.ResponseWriter, *http.Request){
		callReply("call_1", "calculator__eval", `{"expression":"2^10"}`),
		textReply("1024."),
		textReply("again."),
	}}
	srv := httptest.NewServer(fake)
	defer srv.Close()
	url := srv.URL + "/v1"
	dir := writeConfig(t, "tools:\n  calculator: {}\napprove: [calculator]\n")
	store := filepath.Join(dir, "threads")
	r := lode(t, dir, map[string]string{"OPENAI_API_KEY": "sk-secret"}, "", "run", "--base-url", url, "--model", "m", "--store", store, "what is 2^10?")
	if r.code != exitPaused {
		t.Fatalf("run: exit %d:\n%s", r.code, r.stderr)
	}
	lines := resumeLines(t, r.stderr)
	if len(lines) != 3 {
		t.Fatalf("no resume lines in:\n%s", r.stderr)
	}
	id := lines[0][len(lines[0])-2]
	st := storedThread(t, store, id)
	for k, want := range map[string]string{modelProviderKey: "openai", modelBaseURLKey: url, modelNameKey: "m", modelKeyEnvKey: "OPENAI_API_KEY"} {
		if got, _ := st.Metadata(k); got != want {
			t.Errorf("%s = %q, want %q", k, got, want)
		}
	}
	for k, v := range st.AllMetadata() {
		if strings.Contains(v, "sk-secret") {
			t.Errorf("the key is written on the thread under %s", k)
		}
	}

	// lode.yaml and the environment where the command is pasted name
	// another model and server: the thread's own go on.
	if err := os.WriteFile(filepath.Join(dir, "lode.yaml"), []byte("model:\n  name: yaml-model\n  base_url: http://127.0.0.1:1/v1\napprove: [calculator]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	r = lode(t, dir, map[string]string{"LODE_MODEL": "env-model"}, "", lines[0][1:]...)
	if r.code != 0 || r.stdout != "1024.\n" {
		t.Fatalf("the printed command: exit %d, stdout %q:\n%s", r.code, r.stdout, r.stderr)
	}

	// A flag comes first, and the thread remembers it.
	r = lode(t, dir, nil, "", "run", "--store", store, "--thread", id, "--model", "m2", "once more")
	if r.code != 0 {
		t.Fatalf("run --thread --model m2: exit %d:\n%s", r.code, r.stderr)
	}
	if got := fake.models(); strings.Join(got, ",") != "m,m,m2" {
		t.Errorf("the requests asked for models %q, want m, m, m2", got)
	}
	if got, _ := storedThread(t, store, id).Metadata(modelNameKey); got != "m2" {
		t.Errorf("the thread remembers model %q, want m2", got)
	}
}

// A run that stops before the model answered — an approved call ran and
// the model's server then failed — stays recoverable: lode resume says how
// to go on, lode recover asks the model again, and lode run --thread ID
// without a prompt goes on with it; each reaches the thread's model with
// no model configured where it runs.
func TestRunStoppedBeforeTheAnswerGoesOn(t *testing.T) {
	fake := &fakeOpenAI{replies: []func(http.ResponseWriter, *http.Request){
		callReply("call_1", "calculator__eval", `{"expression":"2^10"}`),
		failReply, // after the approved call
		failReply, // lode recover's first try
		textReply("1024."),
	}}
	srv := httptest.NewServer(fake)
	defer srv.Close()
	dir := writeConfig(t, "tools:\n  calculator: {}\napprove: [calculator]\n")
	store := filepath.Join(dir, "threads")
	r := lode(t, dir, nil, "", "run", "--base-url", srv.URL+"/v1", "--model", "m", "--store", store, "what is 2^10?")
	if r.code != exitPaused {
		t.Fatalf("run: exit %d:\n%s", r.code, r.stderr)
	}
	id := resumeLines(t, r.stderr)[0][4]
	r = lode(t, dir, nil, "", "resume", "--store", store, id, "approve:call_1")
	if r.code != exitError || !strings.Contains(r.stderr, "the server is having a bad day") {
		t.Fatalf("resume: exit %d:\n%s", r.code, r.stderr)
	}
	if v, _ := storedThread(t, store, id).Metadata(stoppedKey); v == "" {
		t.Fatal("the stopped run is not marked")
	}

	r = lode(t, dir, nil, "", "resume", "--store", store, id)
	want := "thread " + id + " has no tool calls waiting for approval, and its run stopped before the model answered: lode run --store " + store + " --thread " + id + " goes on with it\n"
	if r.code != 0 || r.stderr != want {
		t.Fatalf("resume without decisions: exit %d, stderr %q, want %q", r.code, r.stderr, want)
	}

	r = lode(t, dir, nil, "", "recover", "--store", store)
	if r.code != exitError || !strings.Contains(r.stderr, "recovered thread "+id+" at turn 5: its run had stopped before the model answered") ||
		!strings.Contains(r.stderr, "1 recovered run failed: "+id) {
		t.Fatalf("recover: exit %d:\n%s", r.code, r.stderr)
	}

	r = lode(t, dir, nil, "", "run", "--store", store, "--thread", id)
	if r.code != 0 || r.stdout != "1024.\n" {
		t.Fatalf("run --thread without a prompt: exit %d, stdout %q:\n%s", r.code, r.stdout, r.stderr)
	}
	st := storedThread(t, store, id)
	if v, _ := st.Metadata(stoppedKey); v != "" {
		t.Errorf("the finished run is still marked stopped: %q", v)
	}
	if got := fake.models(); strings.Join(got, ",") != "m,m,m,m" {
		t.Errorf("the requests asked for models %q", got)
	}
	if n := len(resultFor(st, "call_1")); n != 1 {
		t.Errorf("call_1 has %d results, want 1: it ran again", n)
	}

	// Nothing is owed now: recover finds nothing, run needs a prompt.
	r = lode(t, dir, nil, "", "recover", "--store", store)
	if r.code != 0 || r.stderr != "no stopped runs to recover\n" {
		t.Errorf("recover of a finished thread: exit %d, %q", r.code, r.stderr)
	}
	r = lode(t, dir, nil, "", "run", "--store", store, "--thread", id)
	if r.code != exitUsage || !strings.Contains(r.stderr, "ends with the model's answer, so there is nothing to go on with") {
		t.Errorf("run --thread of a finished thread without a prompt: exit %d, %q", r.code, r.stderr)
	}
}

// lode recover continues each thread with the model it remembers: two
// threads of two servers and models, in a folder that configures neither,
// are each answered by their own.
func TestRecoverAsksEachThreadsModel(t *testing.T) {
	store := filepath.Join(t.TempDir(), "threads")
	var fakes []*fakeOpenAI
	for i, model := range []string{"alpha", "beta"} {
		fake := &fakeOpenAI{replies: []func(http.ResponseWriter, *http.Request){textReply("from " + model)}}
		srv := httptest.NewServer(fake)
		defer srv.Close()
		fakes = append(fakes, fake)
		s, err := file.Open(store)
		if err != nil {
			t.Fatal(err)
		}
		meta := modelMemory{provider: "openai", baseURL: srv.URL + "/v1", name: model, keyEnv: "OPENAI_API_KEY"}.metadata()
		meta[stoppedKey] = "2026-01-01T00:00:00Z the server was down"
		st, err := s.Create(context.Background(), ledger.WithID(fmt.Sprintf("t%d", i)), ledger.WithMetadata(meta), ledger.WithTurns(userTurn("hi")))
		if err != nil {
			t.Fatal(err)
		}
		st.Close()
		s.Close()
	}
	r := lode(t, t.TempDir(), nil, "", "recover", "--store", store)
	if r.code != 0 || strings.Count(r.stderr, "its run had stopped before the model answered") != 2 {
		t.Fatalf("recover: exit %d:\n%s", r.code, r.stderr)
	}
	if !strings.Contains(r.stdout, "from alpha") || !strings.Contains(r.stdout, "from beta") {
		t.Errorf("stdout %q lacks an answer", r.stdout)
	}
	for i, want := range []string{"alpha", "beta"} {
		if got := fakes[i].models(); len(got) != 1 || got[0] != want {
			t.Errorf("server %d was asked for %q, want %s once", i, got, want)
		}
		if v, _ := storedThread(t, store, fmt.Sprintf("t%d", i)).Metadata(stoppedKey); v != "" {
			t.Errorf("thread t%d is still marked stopped", i)
		}
	}
}
