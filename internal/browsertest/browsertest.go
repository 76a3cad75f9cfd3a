// Package browsertest starts Debian's chromium, headless, for the tests
// that check a page lode serves or writes, the way x/conduit/web's chat
// page test does. LODE_TEST_BROWSER=off skips; a missing browser skips
// too, naming the step that installs it, except in CI (CI set), where
// scripts/test installs it and its absence fails the test. It is imported
// by tests only, so chromedp stays out of every build.
package browsertest

import (
	"context"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// Require returns the path of chromium, or skips (or in CI fails) t as
// the package doc says. what names the test's subject in the message.
func Require(t testing.TB, what string) string {
	t.Helper()
	if os.Getenv("LODE_TEST_BROWSER") == "off" {
		t.Skip("LODE_TEST_BROWSER=off: skipping the test of " + what + " in chromium")
	}
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	msg := "chromium is not installed, so " + what + " is not checked in a browser: run scripts/setup-web.sh (Debian: apt-get install chromium), or set LODE_TEST_BROWSER=off"
	if os.Getenv("CI") != "" {
		t.Fatal(msg)
	}
	t.Skip(msg)
	return ""
}

// Context starts the browser at bin, headless with a profile of its own,
// and returns a chromedp context for one tab; it ends with the test.
func Context(t testing.TB, bin string) context.Context {
	t.Helper()
	// A guard against a browser that never answers, not a speed check.
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
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
	bctx, cancelBrowser := chromedp.NewContext(actx)
	t.Cleanup(func() {
		cancelBrowser()
		cancelAlloc()
		cancel()
	})
	return bctx
}
