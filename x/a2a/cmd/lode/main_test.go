package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2aclient"
	"github.com/a2aproject/a2a-go/v2/a2aclient/agentcard"

	"github.com/lodeworks/lode/x/cli"
)

// lode serve --a2a serves lode.yaml's agent: its card from a2a_server:,
// its model (here a fake OpenAI-compatible server), its store.
func TestServeA2A(t *testing.T) {
	model := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"id":"r1","object":"chat.completion","created":0,"model":"fake","choices":[{"index":0,"message":{"role":"assistant","content":"Hello from lode."},"finish_reason":"stop"}],"usage":{"prompt_tokens":3,"completion_tokens":4,"total_tokens":7}}`)
	}))
	defer model.Close()
	dir := t.TempDir()
	config := filepath.Join(dir, "lode.yaml")
	yaml := "model:\n  provider: openai\n  name: fake\n  stream: false\n  base_url: " + model.URL + "/v1\n" +
		"a2a_server:\n  name: helpdesk\n  description: Answers about tickets.\n"
	if err := os.WriteFile(config, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv("OPENAI_API_KEY", "test-key")
	ctx, stop := context.WithCancel(t.Context())
	defer stop()
	errR, errW := io.Pipe()
	code := make(chan int, 1)
	go func() {
		code <- cli.Run(ctx, []string{"serve", "--config", config, "--a2a", "127.0.0.1:0", "--store", filepath.Join(dir, "threads")},
			cli.WithIO(strings.NewReader(""), io.Discard, errW), cli.WithA2AServer(a2aServer{}))
		errW.Close()
	}()
	sc := bufio.NewScanner(errR)
	var url string
	for sc.Scan() {
		line := sc.Text()
		if _, rest, ok := strings.Cut(line, "card at "); ok {
			url = strings.TrimSuffix(rest, "/.well-known/agent-card.json")
			break
		}
		t.Log(line)
	}
	if url == "" {
		t.Fatalf("lode serve --a2a did not start (exit %d)", <-code)
	}
	go func() { _, _ = io.Copy(io.Discard, errR) }()
	card, err := agentcard.DefaultResolver.Resolve(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	if card.Name != "helpdesk" || card.Description != "Answers about tickets." {
		t.Errorf("card %q %q", card.Name, card.Description)
	}
	c, err := a2aclient.NewFromCard(ctx, card)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Destroy()
	res, err := c.SendMessage(ctx, &a2a.SendMessageRequest{Message: a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart("hi"))})
	if err != nil {
		t.Fatal(err)
	}
	task := res.(*a2a.Task)
	var text strings.Builder
	for _, a := range task.Artifacts {
		for _, p := range a.Parts {
			text.WriteString(p.Text())
		}
	}
	if task.Status.State != a2a.TaskStateCompleted || text.String() != "Hello from lode." {
		t.Fatalf("task %s %q", task.Status.State, text.String())
	}
	stop()
	if got := <-code; got != 0 {
		t.Fatalf("exit %d after the context ended", got)
	}
}
