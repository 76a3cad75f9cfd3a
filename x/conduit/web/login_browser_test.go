package web_test

import (
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/lodeworks/lode/x/provider/script"
)

const loginShown = `!document.getElementById("login").hidden && document.body.classList.contains("locked")`

// TestLoginInChromium: a server with tokens shows the login form, not
// "Loading…"; a wrong token is refused; the right one opens the page,
// which then chats and keeps the session across a reload; Log out asks
// for the token again, also after a reload; and a session that expires
// asks again at the next request, which runs nothing.
func TestLoginInChromium(t *testing.T) {
	b := newBrowser(t)
	clk := &testClock{now: time.Date(2026, 12, 5, 9, 0, 0, 0, time.UTC)}
	a := newAuthServer(t, t.TempDir(), clk, tokenSet(t, aliceToken), nil, script.Text("Hello, **alice**."), script.Text("never sent"))
	tab := b.tab
	b.do(tab, "first screen", chromedp.Navigate(a.srv.URL+"/"), waitFor(loginShown))
	b.shot(tab, "login")
	if got := eval[string](b, tab, `document.getElementById("model").textContent + "|" + document.querySelectorAll("#log .msg, #threads li").length`); got != "|0" {
		t.Errorf("before the login the page shows %q", got)
	}

	b.do(tab, "wrong token", chromedp.SendKeys(chromedp.CSS("#token"), "not-the-token"), chromedp.Click(chromedp.CSS("#login-send")),
		waitFor(`document.getElementById("login-error").textContent !== ""`))
	b.shot(tab, "wrong-token")
	if got := eval[string](b, tab, `document.getElementById("login-error").textContent`); got != "That token is not valid." {
		t.Errorf("a wrong token: %q", got)
	}

	b.do(tab, "right token",
		chromedp.Evaluate[chromedp.Void](`document.getElementById("token").value = ""`),
		chromedp.SendKeys(chromedp.CSS("#token"), aliceToken), chromedp.Click(chromedp.CSS("#login-send")),
		waitFor(`document.getElementById("login").hidden && !!document.querySelector("#welcome .welcome-tools") && !document.getElementById("logout").hidden`))
	b.shot(tab, "logged-in")
	if got := eval[string](b, tab, `document.getElementById("token").value + "|" + document.cookie`); got != "|" {
		t.Errorf("after the login the page holds %q: the token field should be empty and the cookie out of script's reach", got)
	}
	b.do(tab, "chat", sendMessage("hi")...)
	if got := eval[string](b, tab, `document.querySelector(".msg.assistant .text").textContent`); got != "Hello, alice." {
		t.Errorf("answer %q", got)
	}
	b.do(tab, "reload", chromedp.Reload(), waitFor(`!!document.querySelector(".msg.assistant .text strong") && document.getElementById("login").hidden`))
	b.shot(tab, "reloaded")

	b.do(tab, "logout", chromedp.Click(chromedp.CSS("#logout")), waitFor(loginShown))
	b.shot(tab, "logged-out")
	if got := eval[int](b, tab, `document.querySelectorAll("#log .msg, #threads li").length`); got != 0 {
		t.Errorf("after the logout the page still shows %d messages and threads", got)
	}
	b.do(tab, "reload after the logout", chromedp.Reload(), waitFor(loginShown))

	b.do(tab, "log in again", chromedp.SendKeys(chromedp.CSS("#token"), aliceToken), chromedp.Click(chromedp.CSS("#login-send")),
		waitFor(`document.getElementById("login").hidden && document.querySelectorAll("#threads button.thread").length === 1`))
	clk.Add(time.Hour)
	b.do(tab, "send after expiry",
		chromedp.SendKeys(chromedp.CSS("#input"), "are you there?"),
		chromedp.Click(chromedp.CSS("#send")),
		waitFor(loginShown))
	b.shot(tab, "expired")
	if n := len(a.prov.Requests()); n != 1 {
		t.Errorf("the model got %d requests, want 1: a message after expiry must run nothing", n)
	}
	b.do(tab, "log in after expiry", chromedp.SendKeys(chromedp.CSS("#token"), aliceToken), chromedp.Click(chromedp.CSS("#login-send")),
		waitFor(`document.getElementById("login").hidden && document.querySelectorAll("#threads button.thread").length === 1`))
}
