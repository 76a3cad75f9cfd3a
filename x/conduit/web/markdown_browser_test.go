package web_test

// Chromium tests of the page's Markdown renderer (page/markdown.js) at
// scale: its work grows linearly with its input and its depth is bounded,
// a message it cannot nest hides nothing after it, and a growing answer is
// not rendered again on every frame.

import (
	"context"
	"encoding/json"
	"fmt"
	"iter"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/lodeworks/lode/artifact"
	"github.com/lodeworks/lode/provider"
	"github.com/lodeworks/lode/x/provider/script"
)

// renderCost is what one render of a generated input took in the page.
type renderCost struct {
	Len   int     // the input's length
	Ops   int     // lodeMarkdown.ops(): the renderer's steps
	MS    float64 // the least time of three renders
	Depth int     // how deep the elements it built nest
	Text  int     // the length of their textContent
	Err   string  // what render threw, if it did
}

// TestMarkdownLinearInChromium renders inputs that made the old renderer
// recurse once per level or scan again for every delimiter, each at n and
// 4n. The renderer's step count for 4n must be under five times that for
// n (linear work gives four; a quadratic renderer sixteen), and its time,
// the least of three runs, under ten times plus 250 ms: a bound a loaded
// machine keeps and a quadratic renderer misses by far (the old one took
// 2.5 s for 60 KB of "**a "). The elements nest no
// deeper than the limits allow, and the text is all still shown.
func TestMarkdownLinearInChromium(t *testing.T) {
	b := newBrowser(t)
	f := serve(t, script.Play())
	tab := b.tab
	b.do(tab, "load", chromedp.Navigate(f.srv.URL+"/"), waitFor(`!!window.lodeMarkdown`))
	limit := eval[int](b, tab, `lodeMarkdown.MAX_DEPTH`)
	maxDepth := 2*(limit+1) + eval[int](b, tab, `lodeMarkdown.MAX_INLINE_DEPTH`) + 4
	lost := 2*(limit+1) + 2 // "- " or "> " per level shown, and a newline
	cases := []struct {
		name, gen string // gen is a JavaScript function of n
		n         int
		text      bool // whether every character but the markers of the levels shown stays as text
	}{
		{"nested quotes", `n => ">".repeat(n)`, 6000, true},
		{"nested quotes, spaced, then text", `n => "> ".repeat(n) + "x\ny"`, 6000, true},
		{"nested lists", `n => "- ".repeat(n) + "x\ny"`, 6000, true},
		{"unclosed strong", `n => "**a ".repeat(n)`, 15000, true},
		{"unopened strong", `n => "a** ".repeat(n)`, 15000, true},
		{"nested emphasis", `n => "*_".repeat(n) + "a" + "_*".repeat(n)`, 15000, false},
		{"brackets", `n => "[".repeat(n)`, 50000, true},
		{"brackets before an unclosed address", `n => "[".repeat(n) + "a](" + "b".repeat(n)`, 50000, true},
		{"backticks", "n => \"`\".repeat(n)", 50000, false}, // a fence: an empty code block
		{"backticks in a paragraph", "n => \"a \" + \"`\".repeat(n)", 50000, true},
		{"backtick runs of two lengths", "n => \"` ``\".repeat(n / 4)", 50000, false},
		{"bare addresses", `n => "http://a.example/" + ".".repeat(n)`, 50000, true},
		{"links", `n => "[a](http://a.example/) ".repeat(n / 25)`, 50000, false},
		{"lines", `n => "a *b*\n".repeat(n / 6)`, 50000, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var got struct{ Small, Big renderCost }
			raw := eval[string](b, tab, `((gen, n) => {
				const depth = root => {
					let max = 0;
					const stack = [[root, 0]];
					while (stack.length) {
						const [e, d] = stack.pop();
						if (d > max) max = d;
						for (const k of e.children) stack.push([k, d + 1]);
					}
					return max;
				};
				const measure = s => {
					const r = { Len: s.length, MS: Infinity };
					for (let k = 0; k < 3; k++) {
						const t0 = performance.now();
						let f;
						try { f = lodeMarkdown.render(s); } catch (e) { r.Err = String(e); return r; }
						r.MS = Math.min(r.MS, performance.now() - t0);
						r.Ops = lodeMarkdown.ops();
						r.Depth = depth(f);
						r.Text = f.textContent.length;
					}
					return r;
				};
				return JSON.stringify({ Small: measure(gen(n)), Big: measure(gen(4 * n)) });
			})(`+c.gen+`, `+strconv.Itoa(c.n)+`)`)
			if err := json.Unmarshal([]byte(raw), &got); err != nil {
				t.Fatalf("%s: %v", raw, err)
			}
			s, g := got.Small, got.Big
			t.Logf("n: %d chars, %d steps, %.1f ms; 4n: %d chars, %d steps, %.1f ms (×%.2f steps, ×%.2f time); depth %d",
				s.Len, s.Ops, s.MS, g.Len, g.Ops, g.MS, float64(g.Ops)/float64(s.Ops), g.MS/s.MS, g.Depth)
			for _, r := range []renderCost{s, g} {
				if r.Err != "" {
					t.Fatalf("render of %d characters threw: %s", r.Len, r.Err)
				}
				if r.Ops > 64*r.Len+64 {
					t.Errorf("render of %d characters took %d steps, more than 64 a character", r.Len, r.Ops)
				}
				if r.Depth > maxDepth {
					t.Errorf("render of %d characters nests %d deep, more than %d", r.Len, r.Depth, maxDepth)
				}
				if c.text && r.Text < r.Len-lost {
					t.Errorf("render of %d characters shows %d characters of text, want all but the markers of %d levels", r.Len, r.Text, limit+1)
				}
			}
			if g.Ops >= 5*s.Ops {
				t.Errorf("steps grew ×%.2f from n to 4n, want about ×4 (linear)", float64(g.Ops)/float64(s.Ops))
			}
			if g.MS > 10*s.MS+250 {
				t.Errorf("time grew from %.1f ms to %.1f ms from n to 4n, want about ×4 (linear)", s.MS, g.MS)
			}
		})
	}
}

// TestDeepQuoteThreadInChromium: an answer of 6,000 nested quotes, then a
// call waiting for approval. Live and after a reload the page shows the
// answer (the levels past the limit as text) and the approval card; the
// call is approved and another message answered. Then, with a renderer
// that throws on everything, a new answer and the whole thread replayed
// show each text as written with a note, and the card, Approve and the
// composer still work.
func TestDeepQuoteThreadInChromium(t *testing.T) {
	b := newBrowser(t)
	deep := strings.Repeat(">", 6000)
	f := serveTools(t, script.Play(
		script.Reply(artifact.Text{Content: deep}, artifact.ToolCall{ID: "c1", Name: "add", Arguments: `{"a":2,"b":3}`}),
		script.Text("The sum is 5."),
		script.Text("Hello again."),
		script.Reply(artifact.Text{Content: "**once more**"}, artifact.ToolCall{ID: "c2", Name: "add", Arguments: `{"a":1,"b":1}`}),
		script.Text("Done."),
	), askForAdd)
	tab := b.tab
	card := func(id string) chromedp.Action[chromedp.Void] {
		return chromedp.WaitVisible(chromedp.CSS(`.approval[data-tool-call-id="` + id + `"] button.approve`))
	}
	shown := `(() => { const e = document.querySelector(".msg.assistant .text"); const q = e.querySelectorAll("blockquote").length;
		return q + " " + e.textContent.length + " " + !!document.querySelector(".render-failed"); })()`
	b.do(tab, "live", chromedp.Navigate(f.srv.URL+"/"), chromedp.SendKeys(chromedp.CSS("#input"), "add 2 and 3"),
		chromedp.Click(chromedp.CSS("#send")), card("c1"))
	// MAX_DEPTH+1 quotes, each taking one ">"; the rest is text.
	limit := eval[int](b, tab, `lodeMarkdown.MAX_DEPTH`)
	wantShown := fmt.Sprintf("%d %d false", limit+1, 6000-limit-1)
	b.shot(tab, "deep-live")
	if got := eval[string](b, tab, shown); got != wantShown {
		t.Errorf("live: quotes, text and failure note %q, want %q", got, wantShown)
	}
	b.do(tab, "reload", chromedp.Reload(), card("c1"))
	b.shot(tab, "deep-reloaded")
	if got := eval[string](b, tab, shown); got != wantShown {
		t.Errorf("after a reload: quotes, text and failure note %q, want %q", got, wantShown)
	}
	done := `document.querySelector(".msg.assistant:last-of-type").dataset.done === "true" && !!document.querySelector(".msg.assistant:last-of-type .text")`
	b.do(tab, "approve", chromedp.Click(chromedp.CSS(`.approval button.approve`)),
		waitFor(done+` && document.querySelector(".msg.assistant:last-of-type").textContent.includes("The sum is 5.")`))
	b.do(tab, "composer", sendMessage("and again")...)
	if got := eval[string](b, tab, `document.querySelector(".msg.assistant:last-of-type .text").textContent`); got != "Hello again." {
		t.Errorf("the next answer reads %q", got)
	}

	// A renderer that throws: the page's own is replaced in this tab.
	eval[bool](b, tab, `(() => { lodeMarkdown.render = () => { throw new RangeError("Maximum call stack size exceeded"); }; return true; })()`)
	b.do(tab, "live, renderer broken", sendMessage("once more")...)
	b.do(tab, "card, renderer broken", card("c2"))
	b.shot(tab, "broken-live")
	plainText := `[...document.querySelectorAll(".msg.assistant:last-of-type .text.unformatted")].map(e => e.querySelector(".plain").textContent + " / " + e.querySelector(".render-failed").textContent).join("|")`
	const note = "This text could not be formatted; it is shown as written."
	if got := eval[string](b, tab, plainText); got != "**once more** / "+note {
		t.Errorf("live, a text the renderer throws on: %q", got)
	}
	id := onlyThread(t, f)
	b.do(tab, "new chat", chromedp.Click(chromedp.CSS("#new")), waitFor(`!!document.getElementById("welcome")`))
	eval[string](b, tab, `location.hash = `+jsString(id))
	b.do(tab, "replay, renderer broken", card("c2"))
	b.shot(tab, "broken-replay")
	if got := eval[string](b, tab, `[...document.querySelectorAll(".msg.assistant .text")].map(e => e.classList.contains("unformatted") + ":" + e.querySelector(".plain").textContent.length).join(",")`); got != "true:6000,true:13,true:12,true:13" {
		t.Errorf("replayed with a renderer that throws, the texts are %q, want each shown as written", got)
	}
	if got := eval[string](b, tab, `document.querySelector('.approval[data-tool-call-id="c2"] .approval-question').textContent + " " + document.getElementById("send").disabled`); got != "Run add? false" {
		t.Errorf("replayed with a renderer that throws: card and composer %q", got)
	}
	b.do(tab, "approve, renderer broken", chromedp.Click(chromedp.CSS(`.approval[data-tool-call-id="c2"] button.approve`)),
		waitFor(done+` && document.querySelector(".msg.assistant:last-of-type").textContent.includes("Done.")`))
	if got := eval[string](b, tab, `[...document.querySelectorAll(".msg.assistant:last-of-type .text")].pop().querySelector(".plain").textContent`); got != "Done." {
		t.Errorf("after Approve with a renderer that throws: %q", got)
	}
}

// slowText is a provider that streams one answer in many small deltas, a
// few milliseconds apart, as a model does.
type slowText struct {
	text  string
	piece int
	gap   time.Duration
}

func (s slowText) Invoke(ctx context.Context, _ *provider.Request) iter.Seq2[artifact.Artifact, error] {
	return func(yield func(artifact.Artifact, error) bool) {
		for rest := s.text; rest != ""; {
			n := min(s.piece, len(rest))
			select {
			case <-ctx.Done():
				yield(nil, ctx.Err())
				return
			case <-time.After(s.gap):
			}
			if !yield(artifact.TextDelta{Content: rest[:n]}, nil) {
				return
			}
			rest = rest[n:]
		}
		yield(artifact.Text{Content: s.text}, nil)
	}
}

// TestStreamingRenderIsThrottledInChromium: while a long answer streams
// in small deltas, the page renders it at most once per 100 ms (the old
// page rendered on every animation frame, so that the work grew with the
// square of the answer), and the render at its end is of the whole text.
func TestStreamingRenderIsThrottledInChromium(t *testing.T) {
	b := newBrowser(t)
	answer := strings.Repeat("Some **bold** words and `code`.\n\n", 400) // 13 KB
	f := serve(t, slowText{text: answer, piece: 40, gap: 2 * time.Millisecond})
	tab := b.tab
	b.do(tab, "load", chromedp.Navigate(f.srv.URL+"/"), waitFor(`!!window.lodeMarkdown`))
	eval[bool](b, tab, `(() => {
		const render = lodeMarkdown.render;
		window.__renders = [];
		lodeMarkdown.render = s => { __renders.push([performance.now(), s.length]); return render(s); };
		return true;
	})()`)
	b.do(tab, "send", sendMessage("write a lot")...)
	var renders [][2]float64
	if err := json.Unmarshal([]byte(eval[string](b, tab, `JSON.stringify(__renders)`)), &renders); err != nil {
		t.Fatal(err)
	}
	t.Logf("%d renders of an answer streamed in %d deltas", len(renders), (len(answer)+39)/40)
	if len(renders) == 0 || int(renders[len(renders)-1][1]) != len(answer) {
		t.Fatalf("renders %v: the last is not of the whole answer (%d characters)", renders, len(answer))
	}
	// Every render but the last, at the end of the stream, comes at least
	// 100 ms after the one before (less a little for the clocks).
	for i := 1; i < len(renders)-1; i++ {
		if gap := renders[i][0] - renders[i-1][0]; gap < 95 {
			t.Errorf("render %d came %.1f ms after the one before, want at least 100 ms", i, gap)
		}
	}
	if got := eval[int](b, tab, `document.querySelectorAll(".msg.assistant .text strong").length`); got != 400 {
		t.Errorf("the finished answer shows %d bold words, want 400", got)
	}
}
