package web_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"

	"github.com/lodeworks/lode/x/provider/script"
)

// stripFraming lets another page frame h: it drops the headers that
// forbid it, so the test can show what framing looks like when allowed.
type stripFraming struct{ h http.Handler }

func (s stripFraming) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.h.ServeHTTP(unframed{w}, r)
}

type unframed struct{ http.ResponseWriter }

func (u unframed) WriteHeader(code int) {
	u.Header().Del("Content-Security-Policy")
	u.Header().Del("X-Frame-Options")
	u.ResponseWriter.WriteHeader(code)
}

func (u unframed) Write(b []byte) (int, error) {
	u.Header().Del("Content-Security-Policy")
	u.Header().Del("X-Frame-Options")
	return u.ResponseWriter.Write(b)
}

func (u unframed) Unwrap() http.ResponseWriter { return u.ResponseWriter }

// TestChatPageCannotBeFramed serves a page on another origin (another
// port) that frames the chat page, in chromium. The handler's answer is
// refused by the browser: the frame holds chromium's error page, and the
// chat page's script is never fetched, so its Approve button cannot be
// clicked through an overlay. The same page framed without the headers
// loads its script, which shows the check can see a frame that works.
func TestChatPageCannotBeFramed(t *testing.T) {
	bin := requireBrowser(t)
	f := serve(t, script.Play())
	// A guard against a browser that never answers, not a speed check.
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	actx, cancelAlloc := chromedp.NewExecAllocator(ctx, chromedp.ExecPath(bin), chromedp.Flag("headless", true),
		chromedp.Flag("no-sandbox", true), chromedp.Flag("disable-gpu", true), chromedp.Flag("no-first-run", true),
		chromedp.Flag("disable-background-networking", true), chromedp.UserDataDir(t.TempDir()))
	defer cancelAlloc()
	bctx, cancelBrowser := chromedp.NewContext(actx)
	defer cancelBrowser()

	cases := []struct {
		name    string
		allowed bool
	}{
		{"the handler's headers", false},
		{"headers stripped", true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var pages, scripts atomic.Int32
			var h http.Handler = f.h
			if c.allowed {
				h = stripFraming{h}
			}
			chat := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				switch r.URL.Path {
				case "/":
					pages.Add(1)
				case "/app.js":
					scripts.Add(1)
				}
				h.ServeHTTP(w, r)
			}))
			defer chat.Close()
			attacker := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "text/html; charset=utf-8")
				fmt.Fprintf(w, `<!doctype html><title>attacker</title><iframe id="victim" src="%s/" width="800" height="600"></iframe>`, chat.URL)
			}))
			defer attacker.Close()

			// Navigate returns once the attacker's page has loaded, and a
			// page's load waits for its frames: by then the chat page
			// would have asked for its script.
			var child *cdp.Frame
			err := chromedp.Do(bctx, chromedp.Navigate(attacker.URL+"/"), chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
				tree, err := cdp.Call(ctx, tg, page.GetFrameTree, cdp.Empty{})
				if err != nil {
					return err
				}
				if len(tree.FrameTree.ChildFrames) != 1 {
					return fmt.Errorf("the attacker's page has %d frames, want 1", len(tree.FrameTree.ChildFrames))
				}
				child = tree.FrameTree.ChildFrames[0].Frame
				return nil
			}))
			if err != nil {
				t.Fatal(err)
			}
			if pages.Load() != 1 {
				t.Fatalf("the chat page was asked for %d times, want once, by the frame", pages.Load())
			}
			t.Logf("frame at %q, unreachable %q", child.URL, child.UnreachableURL)
			framed := child.URL == chat.URL+"/" && child.UnreachableURL == ""
			if framed != c.allowed || (scripts.Load() > 0) != c.allowed {
				t.Errorf("frame at %q (unreachable %q), app.js fetched %d times; want the page framed: %v", child.URL, child.UnreachableURL, scripts.Load(), c.allowed)
			}
		})
	}
}
