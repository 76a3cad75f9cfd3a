package web_test

import (
	"context"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/lodeworks/lode/artifact"
	"github.com/lodeworks/lode/ledger"
	"github.com/lodeworks/lode/loop"
	"github.com/lodeworks/lode/x/provider/script"
)

// requireBrowser returns Debian's chromium. LODE_TEST_BROWSER=off skips;
// otherwise a missing browser fails with the step that installs it.
func requireBrowser(t *testing.T) string {
	t.Helper()
	if os.Getenv("LODE_TEST_BROWSER") == "off" {
		t.Skip("LODE_TEST_BROWSER=off: skipping the test of the chat page in chromium")
	}
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	t.Fatal("chromium is not installed: run scripts/setup-web.sh (Debian: apt-get install chromium), or set LODE_TEST_BROWSER=off to skip")
	return ""
}

// TestChatPageInChromium loads the embedded page in headless chromium,
// sends a message, sees the streamed answer and its tool card, then sends
// another whose turn never ends and presses stop; after a reload the
// stopped answer's text and "Stopped." are still shown.
func TestChatPageInChromium(t *testing.T) {
	bin := requireBrowser(t)
	f := serve(t, script.Play(
		script.Call("c1", "add", `{"a":2,"b":3}`),
		script.Text("The sum is 5."),
		script.Hang(artifact.Text{Content: "thinking forever"}),
	))
	// A guard against a browser that never answers, not a speed check.
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	actx, cancelAlloc := chromedp.NewExecAllocator(ctx,
		chromedp.ExecPath(bin),
		chromedp.Flag("headless", true),
		chromedp.Flag("no-sandbox", true),
		chromedp.Flag("disable-gpu", true),
		chromedp.Flag("no-first-run", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.UserDataDir(t.TempDir()),
	)
	defer cancelAlloc()
	bctx, cancelBrowser := chromedp.NewContext(actx)
	defer cancelBrowser()

	css := func(s string) chromedp.CSS { return chromedp.CSS(s) }
	text := func(sel string) string {
		t.Helper()
		v, err := chromedp.Run(bctx, chromedp.TextContent(css(sel)))
		if err != nil {
			t.Fatalf("%s: %v", sel, err)
		}
		return v
	}
	if err := chromedp.Do(bctx,
		chromedp.Navigate(f.srv.URL+"/"),
		chromedp.WaitVisible(css("#input")),
		chromedp.SendKeys(css("#input"), "add 2 and 3"),
		chromedp.Click(css("#send")),
		chromedp.WaitVisible(css(`.msg.assistant[data-done="true"]`)),
	); err != nil {
		t.Fatalf("first message: %v", err)
	}
	if answer, card, out := text(".msg.assistant .text"), text("details.tool summary"), text("details.tool .output"); answer != "The sum is 5." || card != "add ✓" || out != "5" {
		t.Errorf("page shows answer %q, card %q with output %q", answer, card, out)
	}

	if err := chromedp.Do(bctx,
		chromedp.SendKeys(css("#input"), "keep going"),
		chromedp.Click(css("#send")),
		func(ctx context.Context, t *chromedp.Target) (chromedp.Void, error) {
			_, err := chromedp.Poll[bool](`document.body.innerText.includes("thinking forever")`)(ctx, t)
			return chromedp.Void{}, err
		},
		chromedp.Click(css("#stop")),
		chromedp.WaitVisible(css(`.msg.assistant:last-of-type[data-done="true"]`)),
	); err != nil {
		t.Fatalf("stop: %v", err)
	}
	stopped, err := chromedp.Run(bctx, chromedp.Evaluate[bool](`[...document.querySelectorAll(".msg.assistant:last-of-type .note")].some(e => e.textContent === "Stopped.")`))
	if err != nil || !stopped {
		t.Errorf("the page does not say the turn stopped (%v)", err)
	}
	got := turns(t, f.store, onlyThread(t, f))
	var roles []string
	for _, tn := range got {
		roles = append(roles, string(tn.Role))
	}
	want := []string{"user", "assistant", "tool", "assistant", "user", "assistant"}
	if strings.Join(roles, ",") != strings.Join(want, ",") {
		t.Errorf("stored roles %v, want %v (the stopped answer is stored)", roles, want)
	}
	// After a reload the stopped answer is still there, and says so.
	if err := chromedp.Do(bctx, chromedp.Reload(), chromedp.WaitVisible(css(`.msg.assistant:last-of-type .stopped`))); err != nil {
		t.Fatalf("reload: %v", err)
	}
	if got, err := chromedp.Run(bctx, chromedp.Evaluate[string](`document.querySelector(".msg.assistant:last-of-type").innerText.trim().replace(/\n+/g, "\n")`)); err != nil || got != "thinking forever\nStopped." {
		t.Errorf("after a reload the stopped answer reads %q (%v)", got, err)
	}
}

// TestApproveInChromium: a turn pauses on a call that needs approval, the
// page shows its card, and clicking Approve runs it and shows the answer.
func TestApproveInChromium(t *testing.T) {
	bin := requireBrowser(t)
	f := serveTools(t, script.Play(script.Call("c1", "add", `{"a":2,"b":3}`), script.Text("The sum is 5.")), askForAdd)
	// A guard against a browser that never answers, not a speed check.
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	actx, cancelAlloc := chromedp.NewExecAllocator(ctx, chromedp.ExecPath(bin), chromedp.Flag("headless", true),
		chromedp.Flag("no-sandbox", true), chromedp.Flag("disable-gpu", true), chromedp.Flag("no-first-run", true),
		chromedp.UserDataDir(t.TempDir()))
	defer cancelAlloc()
	bctx, cancelBrowser := chromedp.NewContext(actx)
	defer cancelBrowser()
	if err := chromedp.Do(bctx,
		chromedp.Navigate(f.srv.URL+"/"),
		chromedp.WaitVisible(chromedp.CSS("#input")),
		chromedp.SendKeys(chromedp.CSS("#input"), "add 2 and 3"),
		chromedp.Click(chromedp.CSS("#send")),
		chromedp.WaitVisible(chromedp.CSS(`.approval[data-tool-call-id="c1"] button.approve`)),
		chromedp.Click(chromedp.CSS(`.approval button.approve`)),
		chromedp.WaitVisible(chromedp.CSS(`.msg.assistant:last-of-type[data-done="true"]`)),
	); err != nil {
		t.Fatalf("approve: %v", err)
	}
	answer, err := chromedp.Run(bctx, chromedp.TextContent(chromedp.CSS(".msg.assistant:last-of-type .text")))
	if err != nil || answer != "The sum is 5." {
		t.Errorf("after Approve the page shows %q (%v), want the answer", answer, err)
	}
	if n := results(t, f, onlyThread(t, f), "c1"); n != 1 {
		t.Errorf("c1 has %d results, want 1", n)
	}
}

// TestNotificationInChromium: a tool posts a notification and waits; the
// page shows its line under the running card, and drops it when the
// result arrives.
func TestNotificationInChromium(t *testing.T) {
	bin := requireBrowser(t)
	release := make(chan struct{})
	h := loop.HandlerFunc(func(ctx context.Context, a artifact.Artifact, e loop.Emitter) error {
		c, ok := a.(artifact.ToolCall)
		if !ok {
			return nil
		}
		loop.Notify(ctx, note{"half way"})
		select {
		case <-release:
		case <-ctx.Done():
		}
		e.Emit(ctx, loop.TurnCompleteEvent{Role: ledger.RoleTool, Artifacts: []artifact.Artifact{
			artifact.ToolResult{ToolCallID: c.ID, Name: c.Name, Content: "done"},
		}})
		return nil
	})
	f := serveHandler(t, script.Play(script.Call("c1", "slow", "{}"), script.Text("ok")), h)
	// A guard against a browser that never answers, not a speed check.
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	actx, cancelAlloc := chromedp.NewExecAllocator(ctx,
		chromedp.ExecPath(bin),
		chromedp.Flag("headless", true),
		chromedp.Flag("no-sandbox", true),
		chromedp.Flag("disable-gpu", true),
		chromedp.Flag("no-first-run", true),
		chromedp.UserDataDir(t.TempDir()),
	)
	defer cancelAlloc()
	bctx, cancelBrowser := chromedp.NewContext(actx)
	defer cancelBrowser()
	released := false
	defer func() {
		if !released {
			close(release)
		}
	}()
	if err := chromedp.Do(bctx,
		chromedp.Navigate(f.srv.URL+"/"),
		chromedp.WaitVisible(chromedp.CSS("#input")),
		chromedp.SendKeys(chromedp.CSS("#input"), "go"),
		chromedp.Click(chromedp.CSS("#send")),
		chromedp.WaitVisible(chromedp.CSS("details.tool + .notification")),
	); err != nil {
		t.Fatalf("notification: %v", err)
	}
	line, err := chromedp.Run(bctx, chromedp.TextContent(chromedp.CSS("details.tool + .notification")))
	if err != nil || line != "half way" {
		t.Errorf("notification line %q (%v), want %q", line, err, "half way")
	}
	close(release)
	released = true
	if err := chromedp.Do(bctx, chromedp.WaitVisible(chromedp.CSS(`.msg.assistant[data-done="true"]`))); err != nil {
		t.Fatalf("answer: %v", err)
	}
	left, err := chromedp.Run(bctx, chromedp.Evaluate[int](`document.querySelectorAll(".notification").length`))
	if err != nil || left != 0 {
		t.Errorf("%d notification lines left after the result (%v)", left, err)
	}
}
