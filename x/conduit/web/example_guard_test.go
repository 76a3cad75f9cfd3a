package web_test

import (
	"bufio"
	"context"
	"fmt"
	"net/http/httptest"
	"os"
	"strings"

	"github.com/lodeworks/lode/artifact"
	"github.com/lodeworks/lode/ledger/file"
	"github.com/lodeworks/lode/loop"
	"github.com/lodeworks/lode/x/conduit/web"
	"github.com/lodeworks/lode/x/provider/script"
)

// noKeys stops an answer that gives out a live key.
type noKeys struct{}

func (noKeys) Name() string { return "secrets" }

func (noKeys) Check(_ context.Context, c loop.Check) error {
	if c.At == artifact.AtOutput && strings.Contains(c.Text, "sk-live-") {
		return loop.Trip("secrets", "the answer holds a live key")
	}
	return nil
}

// A guard that stops the answer: the stream carries a data-tripwire part
// in place of the answer's text, and ends as a turn does.
func Example_guard() {
	dir, _ := os.MkdirTemp("", "webchat")
	defer os.RemoveAll(dir)
	store, _ := file.Open(dir)
	defer store.Close()
	h, _ := web.New(script.Play(script.Text("The key is sk-live-123.")), store,
		web.WithLoopOptions(loop.WithGuards(noKeys{})))
	defer h.Close()
	srv := httptest.NewServer(h)
	defer srv.Close()

	body := `{"messages":[{"role":"user","parts":[{"type":"text","text":"What is the key?"}]}]}`
	resp, err := srv.Client().Post(srv.URL+"/api/chat", "application/json", strings.NewReader(body))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if line := sc.Text(); line != "" && !strings.Contains(line, `"type":"start"`) {
			fmt.Println(line)
		}
	}
	// Output:
	// data: {"type":"start-step"}
	// data: {"data":{"guard":"secrets","at":"output","reason":"the answer holds a live key"},"id":"tripwire","type":"data-tripwire"}
	// data: {"type":"finish-step"}
	// data: {"finishReason":"content-filter","type":"finish"}
	// data: [DONE]
}
