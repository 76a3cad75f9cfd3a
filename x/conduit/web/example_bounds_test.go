package web_test

import (
	"fmt"
	"net/http/httptest"
	"os"
	"strings"
	"time"

	"github.com/lodeworks/lode/ledger/file"
	"github.com/lodeworks/lode/loop"
	"github.com/lodeworks/lode/x/conduit/web"
	"github.com/lodeworks/lode/x/provider/script"
)

// What one browser can make the server hold is bounded: here 64 parts or
// 64 KiB in its response, and 32 events in the turn's observer queue. A
// browser that stops reading loses its stream after 10s without progress;
// its turn goes on and is stored. Every response carries headers that keep
// other pages from framing the chat.
func Example_bounds() {
	dir, _ := os.MkdirTemp("", "webchat")
	defer os.RemoveAll(dir)
	store, _ := file.Open(dir)
	defer store.Close()
	h, err := web.New(script.Play(script.Text("Hi!")), store,
		web.WithStreamBuffer(64),
		web.WithStreamBufferBytes(64<<10),
		web.WithWriteTimeout(10*time.Second),
		web.WithLoopOptions(loop.WithObserverBuffer(32)),
	)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer h.Close()
	srv := httptest.NewServer(h)
	defer srv.Close()

	resp, err := srv.Client().Post(srv.URL+"/api/chat", "application/json",
		strings.NewReader(`{"messages":[{"role":"user","parts":[{"type":"text","text":"Hello"}]}]}`))
	if err != nil {
		fmt.Println(err)
		return
	}
	resp.Body.Close()
	fmt.Println(resp.Header.Get("X-Frame-Options"))
	fmt.Println(strings.Contains(resp.Header.Get("Content-Security-Policy"), "frame-ancestors 'none'"))
	// Output:
	// DENY
	// true
}
