package web_test

// Chromium tests of the page as a person uses it: its first screen, its
// Markdown, its thread list, approvals after a reload, a model that is
// down, and text from a model or a tool that tries to run script.
//
// Each test writes PNG screenshots of what it saw. They go to the
// directory named by LODE_SCREENSHOTS, in a subdirectory per test, when it
// is set, so that a person can look at them after the run; otherwise to the
// test's temporary directory, which is removed when it ends. Either way the
// test logs each file's path (go test -v shows them).

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/lodeworks/lode/artifact"
	"github.com/lodeworks/lode/ledger"
	"github.com/lodeworks/lode/loop"
	"github.com/lodeworks/lode/x/conduit/web"
	"github.com/lodeworks/lode/x/provider/script"
)

// browser starts headless chromium for one test and returns its first
// tab's context; newTab opens another tab, as a second device would.
type browser struct {
	t     *testing.T
	alloc context.Context
	tab   context.Context
	shots string
	n     int
}

func newBrowser(t *testing.T) *browser {
	t.Helper()
	bin := requireBrowser(t)
	// A guard against a browser that never answers, not a speed check.
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	actx, cancelAlloc := chromedp.NewExecAllocator(ctx,
		chromedp.ExecPath(bin),
		chromedp.Flag("headless", true),
		chromedp.Flag("no-sandbox", true),
		chromedp.Flag("disable-gpu", true),
		chromedp.Flag("no-first-run", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.WindowSize(1100, 800),
		chromedp.UserDataDir(t.TempDir()),
	)
	t.Cleanup(cancelAlloc)
	b := &browser{t: t, alloc: actx}
	tab, cancelTab := chromedp.NewContext(actx)
	t.Cleanup(cancelTab)
	b.tab = tab
	b.shots = t.TempDir()
	if dir := os.Getenv("LODE_SCREENSHOTS"); dir != "" {
		b.shots = filepath.Join(dir, strings.ReplaceAll(t.Name(), "/", "_"))
		if err := os.MkdirAll(b.shots, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return b
}

func (b *browser) newTab() context.Context {
	tab, cancel := chromedp.NewContext(b.tab)
	b.t.Cleanup(cancel)
	return tab
}

// do runs steps in tab, failing the test with what.
func (b *browser) do(tab context.Context, what string, steps ...chromedp.Action[chromedp.Void]) {
	b.t.Helper()
	if err := chromedp.Do(tab, steps...); err != nil {
		b.t.Fatalf("%s: %v", what, err)
	}
}

// eval evaluates a JavaScript expression in tab.
func eval[T any](b *browser, tab context.Context, expr string) T {
	b.t.Helper()
	v, err := chromedp.Run(tab, chromedp.Evaluate[T](expr))
	if err != nil {
		b.t.Fatalf("%s: %v", expr, err)
	}
	return v
}

// shot writes a screenshot of tab and logs where.
func (b *browser) shot(tab context.Context, name string) {
	b.t.Helper()
	png, err := chromedp.Run(tab, chromedp.CaptureScreenshot())
	if err != nil {
		b.t.Fatalf("screenshot %s: %v", name, err)
	}
	b.n++
	path := filepath.Join(b.shots, fmt.Sprintf("%02d-%s.png", b.n, name))
	if err := os.WriteFile(path, png, 0o644); err != nil {
		b.t.Fatal(err)
	}
	b.t.Logf("screenshot: %s", path)
}

// waitFor polls a JavaScript condition until it holds.
func waitFor(expr string) chromedp.Action[chromedp.Void] {
	return chromedp.Func(func(ctx context.Context, t *chromedp.Target) error {
		_, err := chromedp.Poll[bool](expr)(ctx, t)
		return err
	})
}

// sendMessage types text, sends it and waits for the answer to end.
func sendMessage(text string) []chromedp.Action[chromedp.Void] {
	return []chromedp.Action[chromedp.Void]{
		chromedp.WaitVisible(chromedp.CSS("#input")),
		waitFor(`!document.getElementById("send").disabled`),
		chromedp.SendKeys(chromedp.CSS("#input"), text),
		chromedp.Click(chromedp.CSS("#send")),
		waitFor(`document.querySelector(".msg.assistant:last-of-type") && document.querySelector(".msg.assistant:last-of-type").dataset.done === "true"`),
	}
}

const markdownAnswer = "## Result\n\n" +
	"The **sum** is *five*, see `add(2, 3)` and [the docs](https://example.com/docs?a=1&b=2).\n\n" +
	"- first\n- second with ~~old~~ text\n\n" +
	"1. one\n2. two\n\n" +
	"> quoted\n\n" +
	"```go\nfmt.Println(\"<b>not bold</b>\")\nx := a < b && c > d\n```\n\n" +
	"A [bad link](javascript:alert(1)) and a [relative one](/api/threads)."

// TestMarkdownInChromium: the first screen names the model and the tools
// offered; an answer in Markdown renders as headings, emphasis, lists, a
// quote, a link and a code block that keeps its text as written, and
// links to anything but http(s) are shown as text.
func TestMarkdownInChromium(t *testing.T) {
	b := newBrowser(t)
	f := serve(t, script.New([]script.Step{script.Text(markdownAnswer)}, script.WithModel("scripted-model")))
	tab := b.tab
	b.do(tab, "first screen", chromedp.Navigate(f.srv.URL+"/"), waitFor(`!!document.querySelector("#welcome .welcome-tools")`))
	b.shot(tab, "first-screen")
	if got := eval[string](b, tab, `document.getElementById("model").textContent + " | " + document.querySelector("#welcome .welcome-model").textContent + " | " + [...document.querySelectorAll("#welcome .welcome-tools li")].map(e => e.textContent).join(", ")`); got != "scripted-model | Model: scripted-model | add — adds a and b, boom — fails" {
		t.Errorf("first screen: %q", got)
	}

	b.do(tab, "send", sendMessage("show me markdown")...)
	b.shot(tab, "markdown")
	checks := []struct{ expr, want string }{
		{`document.querySelector(".msg.assistant .text h4").textContent`, "Result"},
		{`document.querySelector(".msg.assistant .text strong").textContent`, "sum"},
		{`document.querySelector(".msg.assistant .text em").textContent`, "five"},
		{`document.querySelector(".msg.assistant .text p code").textContent`, "add(2, 3)"},
		{`[...document.querySelectorAll(".msg.assistant .text ul > li")].map(e => e.textContent).join("|")`, "first|second with old text"},
		{`document.querySelector(".msg.assistant .text del").textContent`, "old"},
		{`[...document.querySelectorAll(".msg.assistant .text ol > li")].map(e => e.textContent).join("|")`, "one|two"},
		{`document.querySelector(".msg.assistant .text blockquote").textContent.trim()`, "quoted"},
		{`document.querySelector(".msg.assistant pre.code code.language-go").textContent`, "fmt.Println(\"<b>not bold</b>\")\nx := a < b && c > d"},
		{`String(document.querySelectorAll(".msg.assistant pre.code b, .msg.assistant b").length)`, "0"},
		{`[...document.querySelectorAll(".msg.assistant a")].map(a => a.href + " " + a.rel + " " + a.target + " " + a.textContent).join("|")`,
			"https://example.com/docs?a=1&b=2 noopener noreferrer _blank the docs"},
		{`[...document.querySelectorAll(".msg.assistant .link-refused")].map(e => e.textContent).join("|")`, "bad link|relative one"},
	}
	for _, c := range checks {
		if got := eval[string](b, tab, c.expr); got != c.want {
			t.Errorf("%s = %q, want %q", c.expr, got, c.want)
		}
	}
	// A reload renders the stored answer the same way.
	b.do(tab, "reload", chromedp.Reload(), waitFor(`!!document.querySelector(".msg.assistant pre.code code.language-go")`))
	if got := eval[string](b, tab, checks[8].expr); got != checks[8].want {
		t.Errorf("after a reload the code block is %q", got)
	}
}

// xssPayload is text that would run script if the page parsed it as HTML
// or followed it as a link.
const xssPayload = `<img src=x onerror="window.__xss='img'"><script>window.__xss='script'</script>` +
	`<svg onload="window.__xss='svg'"></svg><a href="javascript:window.__xss='a'">a</a><iframe src="javascript:window.__xss='frame'"></iframe>`

// noXSS fails when the page ran script or made an element from payload
// text.
func noXSS(t *testing.T, b *browser, tab context.Context, when string) {
	t.Helper()
	if got := eval[string](b, tab, `String(window.__xss)`); got != "undefined" {
		t.Errorf("%s: a payload ran: window.__xss = %q", when, got)
	}
	if n := eval[int](b, tab, `document.querySelectorAll("#log img, #log script, #log svg, #log iframe, #log [onerror], #log [onload], #log a[href^='javascript']").length`); n != 0 {
		t.Errorf("%s: the log holds %d elements made from a payload", when, n)
	}
}

// TestXSSInChromium: a payload in a model's answer (as HTML and as
// Markdown links), in a tool's name and arguments, and in a tool's result
// is shown as text, live and after a reload, and runs nothing.
func TestXSSInChromium(t *testing.T) {
	b := newBrowser(t)
	badName := `<img src=x onerror="window.__xss='name'">`
	h := loop.HandlerFunc(func(ctx context.Context, a artifact.Artifact, e loop.Emitter) error {
		c, ok := a.(artifact.ToolCall)
		if !ok {
			return nil
		}
		e.Emit(ctx, loop.TurnCompleteEvent{Role: ledger.RoleTool, Artifacts: []artifact.Artifact{
			artifact.ToolResult{ToolCallID: c.ID, Name: c.Name, Content: xssPayload},
		}})
		return nil
	})
	answer := xssPayload + "\n\n[click](javascript:window.__xss='md') [data](data:text/html,<script>window.__xss='data'</script>) " +
		"**<img src=x onerror=window.__xss='bold'>** `<script>window.__xss='code'</script>`\n\n```html\n" + xssPayload + "\n```"
	f := serveHandler(t, script.Play(
		script.Call("c1", badName, `{"html":"<script>window.__xss='input'</script>"}`),
		script.Text(answer),
	), h)
	tab := b.tab
	b.do(tab, "send", append([]chromedp.Action[chromedp.Void]{chromedp.Navigate(f.srv.URL + "/")}, sendMessage("try it")...)...)
	b.shot(tab, "live")
	noXSS(t, b, tab, "live")
	check := func(when string) {
		t.Helper()
		if got := eval[string](b, tab, `document.querySelector("details.tool .tool-name").textContent`); got != badName {
			t.Errorf("%s: tool name shown as %q", when, got)
		}
		if got := eval[string](b, tab, `document.querySelector("details.tool .output").textContent`); got != xssPayload {
			t.Errorf("%s: tool result shown as %q", when, got)
		}
		if got := eval[string](b, tab, `document.querySelector(".msg.assistant pre.code code").textContent`); got != xssPayload {
			t.Errorf("%s: code block shows %q", when, got)
		}
		if got := eval[bool](b, tab, `document.querySelector(".msg.assistant .text p").textContent.startsWith("<img src=x onerror=")`); !got {
			t.Errorf("%s: the answer's HTML is not shown as text", when)
		}
	}
	check("live")
	b.do(tab, "reload", chromedp.Reload(), waitFor(`!!document.querySelector("details.tool .output") && document.querySelector("details.tool .output").textContent.length > 0`))
	b.shot(tab, "reloaded")
	noXSS(t, b, tab, "after a reload")
	check("after a reload")
}

// TestThreadListInChromium: two conversations appear in the list, newest
// first, titled by their first message; choosing one shows it, and New
// chat goes back to the first screen.
func TestThreadListInChromium(t *testing.T) {
	b := newBrowser(t)
	f := serve(t, script.Play(script.Text("The **first** answer."), script.Text("The second answer.")))
	tab := b.tab
	b.do(tab, "first thread", append([]chromedp.Action[chromedp.Void]{chromedp.Navigate(f.srv.URL + "/")}, sendMessage("alpha question")...)...)
	first := eval[string](b, tab, `location.hash.slice(1)`)
	b.do(tab, "new chat", chromedp.Click(chromedp.CSS("#new")), waitFor(`!!document.getElementById("welcome") && !document.querySelector(".msg")`))
	b.do(tab, "second thread", sendMessage("beta question")...)
	second := eval[string](b, tab, `location.hash.slice(1)`)
	if first == "" || second == "" || first == second {
		t.Fatalf("threads %q and %q", first, second)
	}
	b.do(tab, "list", waitFor(`document.querySelectorAll("#threads button.thread").length === 2`))
	b.shot(tab, "two-threads")
	if got := eval[string](b, tab, `[...document.querySelectorAll("#threads button.thread")].map(e => e.textContent + (e.classList.contains("current") ? "*" : "")).join("|")`); got != "beta question*|alpha question" {
		t.Errorf("thread list %q, want the newest first, the current marked", got)
	}
	b.do(tab, "switch", chromedp.Click(chromedp.CSS(`#threads button.thread[data-thread-id="`+first+`"]`)),
		waitFor(`!!document.querySelector(".msg.assistant strong")`))
	b.shot(tab, "switched")
	if got := eval[string](b, tab, `location.hash.slice(1) + " " + [...document.querySelectorAll(".msg")].map(e => e.textContent).join("|")`); got != first+" alpha question|The first answer." {
		t.Errorf("after switching: %q", got)
	}
	if got := eval[string](b, tab, `document.querySelector("#threads button.current").dataset.threadId`); got != first {
		t.Errorf("current thread in the list: %q, want %q", got, first)
	}
}

// TestApproveAfterReloadInChromium: a call waits for approval; after a
// reload the card is shown again, from the server's thread, and Approve
// runs the call and continues the same answer; a second tab, as another
// device, then shows the answer and no card.
func TestApproveAfterReloadInChromium(t *testing.T) {
	b := newBrowser(t)
	f := serveTools(t, script.Play(script.Call("c1", "add", `{"a":2,"b":3}`), script.Text("The sum is 5.")), askForAdd)
	tab := b.tab
	b.do(tab, "pause", chromedp.Navigate(f.srv.URL+"/"),
		chromedp.SendKeys(chromedp.CSS("#input"), "add 2 and 3"),
		chromedp.Click(chromedp.CSS("#send")),
		chromedp.WaitVisible(chromedp.CSS(`.approval[data-tool-call-id="c1"] button.approve`)),
	)
	b.do(tab, "reload", chromedp.Reload(), chromedp.WaitVisible(chromedp.CSS(`.approval[data-tool-call-id="c1"] button.approve`)))
	b.shot(tab, "approval-after-reload")
	if got := eval[string](b, tab, `document.querySelector("details.tool").dataset.state + " " + document.querySelector(".approval .approval-question").textContent`); got != "waiting Run add?" {
		t.Errorf("after a reload: %q", got)
	}
	if n := results(t, f, onlyThread(t, f), "c1"); n != 0 {
		t.Fatalf("c1 ran before its approval: %d results", n)
	}
	b.do(tab, "approve", chromedp.Click(chromedp.CSS(`.approval button.approve`)),
		waitFor(`document.querySelector(".msg.assistant:last-of-type").dataset.done === "true" && !!document.querySelector(".msg.assistant:last-of-type .text")`))
	b.shot(tab, "approved")
	if got := eval[string](b, tab, `document.querySelectorAll(".msg.assistant").length + " " + document.querySelector("details.tool .tool-state").textContent + " " + document.querySelector("details.tool .output").textContent + " " + document.querySelector(".msg.assistant .text").textContent`); got != "1  ✓ 5 The sum is 5." {
		t.Errorf("after Approve: %q, want one answer with the call's output and the text", got)
	}
	if n := results(t, f, onlyThread(t, f), "c1"); n != 1 {
		t.Errorf("c1 has %d results, want 1", n)
	}
	other := b.newTab()
	b.do(other, "other device", chromedp.Navigate(f.srv.URL+"/#"+onlyThread(t, f)), waitFor(`!!document.querySelector(".msg.assistant .text")`))
	b.shot(other, "other-device")
	if got := eval[string](b, other, `document.querySelectorAll(".approval").length + " " + document.querySelector(".msg.assistant .text").textContent`); got != "0 The sum is 5." {
		t.Errorf("another tab shows %q, want the answer and no approval card", got)
	}
}

// TestModelDownInChromium: a model server that cannot be reached is one
// sentence on the page; the error chain is behind a toggle, closed.
func TestModelDownInChromium(t *testing.T) {
	b := newBrowser(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	_, dialErr := net.Dial("tcp", addr)
	if dialErr == nil {
		t.Skip("something listens on the closed port again")
	}
	down := fmt.Errorf("openai: cannot reach the server at http://%s/v1: %w", addr, dialErr)
	f := serve(t, script.Play(script.Fail(down)), quiet())
	tab := b.tab
	b.do(tab, "send", append([]chromedp.Action[chromedp.Void]{chromedp.Navigate(f.srv.URL + "/")}, sendMessage("hello")...)...)
	b.shot(tab, "model-down")
	if got := eval[string](b, tab, `document.querySelector(".msg.assistant").innerText.trim().replace(/\n+/g, "\n")`); got != "The model server could not be reached.\nDetails" {
		t.Errorf("the page shows %q, want one sentence and a closed Details toggle", got)
	}
	b.do(tab, "open details", chromedp.Click(chromedp.CSS(".error-detail summary")), waitFor(`document.querySelector(".error-detail").open`))
	b.shot(tab, "model-down-details")
	if got := eval[string](b, tab, `document.querySelector(".error-detail pre").innerText`); !strings.Contains(got, "loop: provider: openai: cannot reach the server at http://"+addr) || !strings.Contains(got, "connection refused") {
		t.Errorf("details: %q", got)
	}
}

// TestReloadWhileRunningInChromium: a reload while an answer streams
// follows the running turn again (its text so far, then live); Stop then
// ends it, and the page and a later reload say "Stopped." once.
func TestReloadWhileRunningInChromium(t *testing.T) {
	b := newBrowser(t)
	f := serve(t, script.Play(script.Hang(artifact.Text{Content: "still *thinking*"})))
	tab := b.tab
	b.do(tab, "send", chromedp.Navigate(f.srv.URL+"/"),
		chromedp.SendKeys(chromedp.CSS("#input"), "think"),
		chromedp.Click(chromedp.CSS("#send")),
		waitFor(`!!document.querySelector(".msg.assistant .text em")`))
	b.do(tab, "reload", chromedp.Reload(), waitFor(`!!document.querySelector(".msg.assistant .text em") && !document.getElementById("stop").disabled`))
	b.shot(tab, "following")
	if got := eval[string](b, tab, `document.querySelectorAll(".msg.assistant").length + " " + document.querySelector(".msg.assistant .text").textContent`); got != "1 still thinking" {
		t.Errorf("after a reload: %q, want the running answer once", got)
	}
	b.do(tab, "stop", chromedp.Click(chromedp.CSS("#stop")), waitFor(`document.querySelector(".msg.assistant:last-of-type").dataset.done === "true" && !!document.querySelector(".msg.assistant .stopped")`))
	b.do(tab, "reload after stop", chromedp.Reload(), waitFor(`!!document.querySelector(".msg.assistant .stopped")`))
	b.shot(tab, "stopped")
	if got := eval[string](b, tab, `document.querySelectorAll(".msg.assistant").length + " " + document.querySelector(".msg.assistant").innerText.trim().replace(/\n+/g, "\n")`); got != "1 still thinking\nStopped." {
		t.Errorf("after stop and a reload: %q", got)
	}
}

// TestMarkdownRendererInChromium runs the page's renderer on each input
// and compares the HTML it built; then on many generated strings of
// Markdown's punctuation, none of which may throw or make an element the
// renderer does not make.
func TestMarkdownRendererInChromium(t *testing.T) {
	b := newBrowser(t)
	f := serve(t, script.Play())
	tab := b.tab
	b.do(tab, "load", chromedp.Navigate(f.srv.URL+"/"), waitFor(`!!window.lodeMarkdown`))
	cases := []struct{ in, want string }{
		{"", ""},
		{"a *b* c", "<p>a <em>b</em> c</p>"},
		{"**bold** and __bold__", "<p><strong>bold</strong> and <strong>bold</strong></p>"},
		{"**unclosed", "<p>**unclosed</p>"},
		{"snake_case_name and 2*3*4", "<p>snake_case_name and 2<em>3</em>4</p>"},
		{`\*not em\*`, "<p>*not em*</p>"},
		{"<b>x</b> & <script>y</script>", "<p>&lt;b&gt;x&lt;/b&gt; &amp; &lt;script&gt;y&lt;/script&gt;</p>"},
		{"line1\nline2", "<p>line1<br>line2</p>"},
		{"one\n\ntwo", "<p>one</p><p>two</p>"},
		{"# T", "<h3>T</h3>"},
		{"###### deep", "<h6>deep</h6>"},
		{"- a\n- b", "<ul><li>a</li><li>b</li></ul>"},
		{"3. c\n4. d", `<ol start="3"><li>c</li><li>d</li></ol>`},
		{"> q\n> r", "<blockquote><p>q<br>r</p></blockquote>"},
		{"---", "<hr>"},
		{"`a<b`", "<p><code>a&lt;b</code></p>"},
		{"``a ` b``", "<p><code>a ` b</code></p>"},
		{"```\nunterminated", `<pre class="code"><code>unterminated</code></pre>`},
		{"```js\nlet x = `<i>`;\n```", `<pre class="code" data-lang="js"><code class="language-js">let x = ` + "`&lt;i&gt;`" + `;</code></pre>`},
		{"```\"><img src=x>\nx\n```", `<pre class="code"><code>x</code></pre>`},
		{"~~~\n```\n~~~", `<pre class="code"><code>` + "```" + `</code></pre>`},
		{"[x](https://a.example/p?q=1)", `<p><a href="https://a.example/p?q=1" rel="noopener noreferrer" target="_blank">x</a></p>`},
		{"[x](javascript:alert(1))", `<p><span class="link-refused">x</span></p>`},
		{"[x](JaVaScRiPt:alert(1))", `<p><span class="link-refused">x</span></p>`},
		{"[x](data:text/html,hi)", `<p><span class="link-refused">x</span></p>`},
		{"[x](//evil.example)", `<p><span class="link-refused">x</span></p>`},
		{"[**b**](http://a.example)", `<p><a href="http://a.example/" rel="noopener noreferrer" target="_blank"><strong>b</strong></a></p>`},
		{"see https://a.example/x.", `<p>see <a href="https://a.example/x" rel="noopener noreferrer" target="_blank">https://a.example/x</a>.</p>`},
		{`[a "q"](https://a.example/"onmouseover="x)`, `<p><a href="https://a.example/%22onmouseover=%22x" rel="noopener noreferrer" target="_blank">a "q"</a></p>`},
	}
	for _, c := range cases {
		expr := fmt.Sprintf(`(() => { const d = document.createElement("div"); d.append(lodeMarkdown.render(%s)); return d.innerHTML; })()`, jsString(c.in))
		if got := eval[string](b, tab, expr); got != c.want {
			t.Errorf("render(%q)\n got %s\nwant %s", c.in, got, c.want)
		}
	}
	// Generated input: a fixed linear congruential sequence, so a failure
	// repeats.
	bad := eval[string](b, tab, `(() => {
		const chars = "*_~`+"`"+`[]()<>#-+.1 \n\\h:/ab\"";
		const ok = new Set(["P","EM","STRONG","DEL","CODE","PRE","A","SPAN","BR","H3","H4","H5","H6","UL","OL","LI","BLOCKQUOTE","HR"]);
		let seed = 1;
		for (let n = 0; n < 3000; n++) {
			let s = "";
			const len = n % 60;
			for (let i = 0; i < len; i++) { seed = (seed * 1103515245 + 12345) % 2147483648; s += chars[seed % chars.length]; }
			let f;
			try { f = lodeMarkdown.render(s); } catch (e) { return "throws on " + JSON.stringify(s) + ": " + e; }
			const d = document.createElement("div"); d.append(f);
			for (const e of d.querySelectorAll("*")) {
				if (!ok.has(e.tagName)) return "makes <" + e.tagName + "> from " + JSON.stringify(s);
				if (e.tagName === "A" && !/^https?:/.test(e.getAttribute("href"))) return "links to " + e.getAttribute("href") + " from " + JSON.stringify(s);
			}
		}
		return "";
	})()`)
	if bad != "" {
		t.Error(bad)
	}
}

// jsString quotes s as a JavaScript string literal.
func jsString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// TestDenyAndStaleCardInChromium: two tabs show the same waiting call;
// one denies it, and its card says Denied before the model's answer; the
// other tab's card, now stale, refuses in one sentence when clicked.
func TestDenyAndStaleCardInChromium(t *testing.T) {
	b := newBrowser(t)
	f := serveTools(t, script.Play(script.Call("c1", "add", `{"a":2,"b":3}`), script.Text("Not adding, then.")), askForAdd)
	tab := b.tab
	b.do(tab, "pause", chromedp.Navigate(f.srv.URL+"/"),
		chromedp.SendKeys(chromedp.CSS("#input"), "add 2 and 3"),
		chromedp.Click(chromedp.CSS("#send")),
		chromedp.WaitVisible(chromedp.CSS(`.approval[data-tool-call-id="c1"] button.deny`)))
	other := b.newTab()
	b.do(other, "other device", chromedp.Navigate(f.srv.URL+"/#"+onlyThread(t, f)), chromedp.WaitVisible(chromedp.CSS(`.approval button.approve`)))
	b.do(tab, "deny", chromedp.Click(chromedp.CSS(`.approval button.deny`)),
		waitFor(`document.querySelector(".msg.assistant:last-of-type").dataset.done === "true" && !!document.querySelector(".msg.assistant .text")`))
	b.shot(tab, "denied")
	if got := eval[string](b, tab, `[...document.querySelectorAll("details.tool .label")].map(e => e.textContent).join(",") + " " + document.querySelector(".msg.assistant .text").textContent + document.querySelector(".approval .approval-outcome").textContent`); got != "Input,Denied Not adding, then. Denied." {
		t.Errorf("after Deny: %q", got)
	}
	b.do(other, "stale approve", chromedp.Click(chromedp.CSS(`.approval button.approve`)),
		waitFor(`document.querySelector(".msg.assistant:last-of-type").dataset.done === "true" && !!document.querySelector(".msg.assistant .error")`))
	b.shot(other, "stale-card")
	b.do(other, "outcome", waitFor(`document.querySelector(".approval .approval-outcome").textContent === " Not decided here."`))
	msg := eval[string](b, other, `document.querySelector(".msg.assistant .error .error-message").textContent`)
	if strings.HasPrefix(msg, "web:") || !strings.HasSuffix(msg, ".") || strings.Contains(msg, "\n") {
		t.Errorf("the stale card says %q, want one sentence", msg)
	}
	if n := results(t, f, onlyThread(t, f), "c1"); n != 1 {
		t.Errorf("c1 has %d results, want the denial only", n)
	}
}

// TestUsageInChromium: each answer shows what it used and cost on a line
// under it, an unpriced model named instead of a cost, and none for a
// model that reported no usage; the header shows the thread's total; a
// reload shows the same.
func TestUsageInChromium(t *testing.T) {
	b := newBrowser(t)
	f := serve(t, script.New([]script.Step{
		script.Reply(artifact.Text{Content: "First."}, artifact.Usage{InputTokens: 1280, CachedInputTokens: 640, OutputTokens: 64}),
		script.Reply(artifact.Text{Content: "Second."}, artifact.Usage{InputTokens: 10, OutputTokens: 2, Model: "mystery-model"}),
		script.Text("Third."),
	}, script.WithModel("priced-model")), web.WithLoopOptions(loop.WithPricer(perToken{})))
	tab := b.tab
	lines := `[...document.querySelectorAll(".msg.assistant")].map(m => { const u = m.querySelector(":scope > .usage"); return u ? u.textContent : "-" }).join(" | ")`
	total := `document.getElementById("spent").textContent`
	const first = "1,280 tokens in (640 cached), 64 out, $22.0000"
	const second = "10 tokens in, 2 out; no price for mystery-model"

	b.do(tab, "first answer", append([]chromedp.Action[chromedp.Void]{chromedp.Navigate(f.srv.URL + "/")}, sendMessage("one")...)...)
	if got := eval[string](b, tab, lines); got != first {
		t.Errorf("after the first answer the lines read %q, want %q", got, first)
	}
	if got := eval[string](b, tab, total); got != "Thread: "+first {
		t.Errorf("after the first answer the header reads %q", got)
	}
	if got := eval[string](b, tab, `document.querySelector(".msg.assistant").lastElementChild.className`); got != "usage" {
		t.Errorf("the answer ends with %q, want its usage line", got)
	}
	b.do(tab, "second answer", sendMessage("two")...)
	b.do(tab, "third answer", sendMessage("three")...)
	b.shot(tab, "usage")
	wantLines := first + " | " + second + " | -"
	wantTotal := "Thread: 1,290 tokens in (640 cached), 66 out; no price for mystery-model, $22.0000 for the rest"
	check := func(when string) {
		t.Helper()
		if got := eval[string](b, tab, lines); got != wantLines {
			t.Errorf("%s: the lines read %q, want %q", when, got, wantLines)
		}
		if got := eval[string](b, tab, total); got != wantTotal {
			t.Errorf("%s: the header reads %q, want %q", when, got, wantTotal)
		}
	}
	check("live")
	b.do(tab, "reload", chromedp.Reload(), waitFor(`document.querySelectorAll(".msg.assistant").length === 3`))
	b.shot(tab, "usage-after-reload")
	check("after a reload")
	b.do(tab, "new chat", chromedp.Click(chromedp.CSS("#new")), waitFor(`!!document.getElementById("welcome")`))
	if got := eval[string](b, tab, total); got != "" {
		t.Errorf("a new chat's header reads %q, want nothing", got)
	}
}

// TestEditAndBranchesInChromium: an edited message is answered on a new
// branch; "‹ 1/2 ›" at the message shows the branch left, with its
// answer, and both are still there after a reload; Regenerate makes a
// branch at the answer, and its arrows show the answer it replaced.
func TestEditAndBranchesInChromium(t *testing.T) {
	b := newBrowser(t)
	f := serve(t, script.Play(script.Text("The old answer."), script.Text("The new answer."), script.Text("The third answer.")))
	tab := b.tab
	b.do(tab, "first question", append([]chromedp.Action[chromedp.Void]{chromedp.Navigate(f.srv.URL + "/")}, sendMessage("first question")...)...)
	shown := func() string {
		return eval[string](b, tab, `[...document.querySelectorAll(".msg")].map(e => e.querySelector(":scope > .text").textContent + (e.querySelector(".branch-index") ? " " + e.querySelector(".branch-index").textContent : "")).join("|")`)
	}
	b.do(tab, "edit", chromedp.Click(chromedp.CSS(`.msg.user button.edit[aria-label="Edit this message"]`)),
		chromedp.WaitVisible(chromedp.CSS(`.msg.user .edit-input`)))
	if got := eval[string](b, tab, `document.querySelector(".msg.user .edit-input").value`); got != "first question" {
		t.Errorf("the editor holds %q, want the message", got)
	}
	b.shot(tab, "editing")
	b.do(tab, "send the edit",
		chromedp.Evaluate[chromedp.Void](`document.querySelector(".msg.user .edit-input").value = "second question"`),
		chromedp.Click(chromedp.CSS(`.msg.user .edit-save`)),
		waitFor(`!!document.querySelector(".msg.user .branch-index") && document.querySelector(".msg.assistant .text").textContent === "The new answer."`))
	b.shot(tab, "edited")
	if got, want := shown(), "second question 2/2|The new answer."; got != want {
		t.Errorf("after the edit: %q, want %q", got, want)
	}
	if got := eval[string](b, tab, `document.querySelector(".branch-prev").getAttribute("aria-label") + "; next disabled " + document.querySelector(".branch-next").disabled`); got != "Show version 1 of 2; next disabled true" {
		t.Errorf("the controls: %q", got)
	}
	b.do(tab, "back to 1/2", chromedp.Click(chromedp.CSS(`.msg.user .branch-prev`)),
		waitFor(`document.querySelector(".msg.user .branch-index") && document.querySelector(".msg.user .branch-index").textContent === "1/2"`))
	b.shot(tab, "first-branch")
	if got, want := shown(), "first question 1/2|The old answer."; got != want {
		t.Errorf("the branch left: %q, want %q", got, want)
	}
	b.do(tab, "reload", chromedp.Reload(), waitFor(`document.querySelector(".msg.user .branch-index") && document.querySelector(".msg.user .branch-index").textContent === "1/2"`))
	b.shot(tab, "after-reload")
	if got, want := shown(), "first question 1/2|The old answer."; got != want {
		t.Errorf("after a reload: %q, want %q", got, want)
	}
	b.do(tab, "forward to 2/2", chromedp.Click(chromedp.CSS(`.msg.user .branch-next`)),
		waitFor(`document.querySelector(".msg.user .branch-index").textContent === "2/2"`))
	if got, want := shown(), "second question 2/2|The new answer."; got != want {
		t.Errorf("the edit's branch after a reload: %q, want %q", got, want)
	}
	b.do(tab, "regenerate", chromedp.Click(chromedp.CSS(`.msg.assistant button.regenerate[aria-label="Answer again"]`)),
		waitFor(`!!document.querySelector(".msg.assistant .branch-index") && document.querySelector(".msg.assistant .text").textContent === "The third answer."`))
	b.shot(tab, "regenerated")
	if got, want := shown(), "second question 2/2|The third answer. 2/2"; got != want {
		t.Errorf("after Regenerate: %q, want %q", got, want)
	}
	if got := eval[string](b, tab, `document.querySelector(".msg.assistant").lastElementChild.className`); got != "regenerate" && got != "usage" {
		t.Errorf("the answer ends with %q", got)
	}
	b.do(tab, "the answer replaced", chromedp.Click(chromedp.CSS(`.msg.assistant .branch-prev`)),
		waitFor(`document.querySelector(".msg.assistant .branch-index").textContent === "1/2"`))
	if got, want := shown(), "second question 2/2|The new answer. 1/2"; got != want {
		t.Errorf("the answer replaced: %q, want %q", got, want)
	}
	if got := eval[int](b, tab, `document.querySelectorAll("#threads button.thread").length`); got != 1 {
		t.Errorf("the list shows %d conversations, want 1", got)
	}
}
