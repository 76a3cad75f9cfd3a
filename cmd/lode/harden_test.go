package main

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/lodeworks/lode/x/provider/openai"
)

// silentReply accepts the request and never answers, until the client
// goes away.
func silentReply(w http.ResponseWriter, r *http.Request) { <-r.Context().Done() }

// oneChunkThenStall sends the first chunk of an answer and then nothing.
func oneChunkThenStall(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "text/event-stream")
	fmt.Fprintf(w, "data: %s\n\n", chunk(`{"role":"assistant","content":"Thinking very hard"}`, ""))
	w.(http.Flusher).Flush()
	<-r.Context().Done()
}

func TestRunTimeLimit(t *testing.T) {
	const want = "lode: the run took longer than its time limit of 300ms (--timeout, or model.timeout in lode.yaml) and was stopped\n"
	cases := []struct {
		name   string
		reply  func(http.ResponseWriter, *http.Request)
		config string
		args   []string
	}{
		{"flag, server never answers", silentReply, "", []string{"run", "--timeout", "300ms", "hi"}},
		{"flag, server stalls after a chunk", oneChunkThenStall, "", []string{"run", "--timeout", "300ms", "hi"}},
		{"lode.yaml", silentReply, "model:\n  timeout: 300ms\n", []string{"run", "hi"}},
		{"the flag over lode.yaml", silentReply, "model:\n  timeout: 1h\n", []string{"run", "--timeout", "300ms", "hi"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			srv := httptest.NewServer(&fakeOpenAI{replies: []func(http.ResponseWriter, *http.Request){tc.reply}})
			defer srv.Close()
			dir := t.TempDir()
			if tc.config != "" {
				dir = writeConfig(t, tc.config)
			}
			r := lode(t, dir, map[string]string{"OPENAI_BASE_URL": srv.URL, "LODE_MODEL": "m"}, "", tc.args...)
			if r.code != 1 || r.stderr != want {
				t.Fatalf("exit %d, stderr %q; want 1, %q", r.code, r.stderr, want)
			}
		})
	}
}

func TestChatTimeLimitEndsTheTurnNotTheChat(t *testing.T) {
	srv := httptest.NewServer(&fakeOpenAI{replies: []func(http.ResponseWriter, *http.Request){silentReply, textReply("Here now.")}})
	defer srv.Close()
	r := lode(t, t.TempDir(), map[string]string{"OPENAI_BASE_URL": srv.URL}, "first\nsecond\n", "chat", "--model", "m", "--timeout", "300ms")
	if r.code != 0 || r.stdout != "Here now.\n" {
		t.Fatalf("exit %d stdout %q stderr %q", r.code, r.stdout, r.stderr)
	}
	if !strings.Contains(r.stderr, "you> lode: the run took longer than its time limit of 300ms (--timeout, or model.timeout in lode.yaml) and was stopped\nyou> ") {
		t.Fatalf("stderr %q", r.stderr)
	}
}

func TestIdleTimeout(t *testing.T) {
	cases := []struct {
		name   string
		reply  func(http.ResponseWriter, *http.Request)
		config string
		args   []string
		limit  string
	}{
		{"flag, server never answers", silentReply, "", []string{"run", "--idle-timeout", "300ms", "hi"}, "300ms"},
		{"flag, server stalls after a chunk", oneChunkThenStall, "", []string{"run", "--idle-timeout", "300ms", "hi"}, "300ms"},
		{"lode.yaml", oneChunkThenStall, "model:\n  idle_timeout: 250ms\n", []string{"run", "hi"}, "250ms"},
		{"the flag over lode.yaml", silentReply, "model:\n  idle_timeout: 1h\n", []string{"run", "--idle-timeout", "300ms", "hi"}, "300ms"},
		{"the idle limit within a longer run limit", silentReply, "", []string{"run", "--idle-timeout", "300ms", "--timeout", "1h", "hi"}, "300ms"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			srv := httptest.NewServer(&fakeOpenAI{replies: []func(http.ResponseWriter, *http.Request){tc.reply}})
			defer srv.Close()
			dir := t.TempDir()
			if tc.config != "" {
				dir = writeConfig(t, tc.config)
			}
			r := lode(t, dir, map[string]string{"OPENAI_BASE_URL": srv.URL, "LODE_MODEL": "m"}, "", tc.args...)
			want := "lode: the model endpoint " + srv.URL + " sent nothing for " + tc.limit + " (--idle-timeout, or model.idle_timeout in lode.yaml) and the run was stopped\n"
			if r.code != 1 || !strings.HasSuffix(r.stderr, want) || strings.Count(r.stderr, "lode:") != 1 {
				t.Fatalf("exit %d, stderr %q; want 1, %q", r.code, r.stderr, want)
			}
		})
	}
}

func TestIdleTimeoutDefault(t *testing.T) {
	cfg, err := (&options{}).load(env{getenv: func(string) string { return "" }})
	if err != nil {
		t.Fatal(err)
	}
	if time.Duration(cfg.Model.IdleTimeout) != openai.DefaultIdleTimeout || cfg.Model.Timeout != 0 {
		t.Fatalf("idle %v, run %v", time.Duration(cfg.Model.IdleTimeout), time.Duration(cfg.Model.Timeout))
	}
}
