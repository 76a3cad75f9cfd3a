package web_test

import (
	"bufio"
	"fmt"
	"net/http/httptest"
	"os"
	"strings"

	"github.com/lodeworks/lode/ledger/file"
	"github.com/lodeworks/lode/x/conduit/web"
	"github.com/lodeworks/lode/x/provider/script"
)

// A turn posted the way useChat posts it comes back as UI message stream
// parts, one Server-Sent Event each.
func Example() {
	dir, _ := os.MkdirTemp("", "webchat")
	defer os.RemoveAll(dir)
	store, _ := file.Open(dir)
	defer store.Close()
	h, _ := web.New(script.Play(script.Text("Hi!")), store)
	defer h.Close()
	srv := httptest.NewServer(h)
	defer srv.Close()

	body := `{"messages":[{"role":"user","parts":[{"type":"text","text":"Hello"}]}]}`
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
	// data: {"id":"text-1","type":"text-start"}
	// data: {"delta":"Hi!","id":"text-1","type":"text-delta"}
	// data: {"id":"text-1","type":"text-end"}
	// data: {"type":"finish-step"}
	// data: {"finishReason":"stop","type":"finish"}
	// data: [DONE]
}
