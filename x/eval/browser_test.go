package eval_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/lodeworks/lode/internal/browsertest"
	"github.com/lodeworks/lode/x/eval"
	"github.com/lodeworks/lode/x/provider/script"
)

// TestHTMLReportInChromium loads the HTML report in headless chromium:
// it renders, it has one section per case with the case's calls and
// transcript, and the hostile case's script and image never run — the
// title stays, no script or img element exists, and the payload reads as
// text.
func TestHTMLReportInChromium(t *testing.T) {
	bin := browsertest.Require(t, "the eval HTML report")
	r := sampleReport()
	// A real run whose model answers with markup, after a real tool call.
	run := eval.RunSuite(t.Context(), &eval.Suite{Cases: []eval.Case{{Name: "hostile model", Prompt: "2+3?", Tools: calcTools,
		Model: eval.Scripted("", script.Call("c1", "calculator__eval", `{"expression":"2+3"}`), script.Text(xss))}}})
	r.Cases = append(r.Cases, run.Cases...)
	var page strings.Builder
	if err := r.WriteHTML(&page); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		_, _ = w.Write([]byte(page.String()))
	}))
	defer srv.Close()
	ctx := browsertest.Context(t, bin)
	if err := chromedp.Do(ctx, chromedp.Navigate(srv.URL), chromedp.WaitVisible(chromedp.CSS("#case-4"))); err != nil {
		t.Fatalf("loading the report: %v", err)
	}
	js := func(expr string) string {
		t.Helper()
		v, err := chromedp.Run(ctx, chromedp.Evaluate[string](expr))
		if err != nil {
			t.Fatalf("%s: %v", expr, err)
		}
		return v
	}
	checks := []struct{ expr, want string }{
		{`document.title`, "sample — lode eval"},
		{`String(document.querySelectorAll("section.case").length)`, "4"},
		{`Array.from(document.querySelectorAll("section.case")).map(s => s.id + ":" + s.dataset.status).join(",")`,
			"case-1:pass,case-2:fail,case-3:skip,case-4:pass"},
		{`Array.from(document.querySelectorAll("section.case h2")).map(h => h.textContent).join("|")`,
			"adds pass|hostile <b>name</b> fail|live skip|hostile model pass"},
		{`String(document.querySelectorAll("script, img, b").length)`, "0"},
		{`String(document.querySelectorAll("#summary tr").length)`, "5"},
		{`Array.from(document.querySelectorAll("#case-4 .transcript pre")).map(p => p.textContent).join("|")`,
			"2+3?|calculator__eval {\"expression\":\"2+3\"}|calculator__eval: 5|" + xss},
		{`String(document.querySelector("#case-1 .calls").innerText.includes("calculator__eval"))`, "true"},
		{`String(document.querySelector("#case-2 .transcript").textContent.includes('<script>document.title="pwned"</script>'))`, "true"},
		{`document.querySelector("#case-2 .answer").textContent`, `{"html":"</pre><script>alert(1)</script>"}`},
		{`String(document.querySelector("#case-2 .failures li").textContent.startsWith('text "<script>'))`, "true"},
		{`document.querySelector("#case-3 p.skip").textContent`, "skipped: eval: case skipped: a live model runs only with LODE_EVAL_LIVE=1"},
	}
	for _, c := range checks {
		if got := js(c.expr); got != c.want {
			t.Errorf("%s = %q, want %q", c.expr, got, c.want)
		}
	}
}
