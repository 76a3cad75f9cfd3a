package responses

import (
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/lodeworks/lode/x/provider/internal/providertest"
)

// closeCount is a body that notes whether it was closed.
type closeCount struct {
	io.Reader
	mu     *sync.Mutex
	closed *int
}

func (b closeCount) Close() error {
	b.mu.Lock()
	*b.closed++
	b.mu.Unlock()
	return nil
}

// TestBodiesClosed: whatever way an invocation ends, every response body
// it opened is closed — retried refusals, a consumer that stops early, a
// broken stream, a whole answer.
func TestBodiesClosed(t *testing.T) {
	type reply struct {
		status int
		body   string
	}
	cases := []struct {
		name    string
		replies []reply
		stream  bool
		stop    bool
	}{
		{"answer", []reply{{200, string(stream(textAnswer("a", "b")...))}}, true, false},
		{"retried then answered", []reply{{500, err500}, {429, err429}, {200, string(stream(textAnswer("a")...))}}, true, false},
		{"refused", []reply{{401, err401}}, true, false},
		{"stopped early", []reply{{200, string(stream(textAnswer("a", "b", "c")...))}}, true, true},
		{"malformed", []reply{{200, "data: {oops\n\n"}}, true, false},
		{"whole", []reply{{200, `{` + respHead + `,"status":"completed","output":[]}`}}, false, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var mu sync.Mutex
			opened, closed := 0, 0
			client := &http.Client{Transport: providertest.RoundTripFunc(func(r *http.Request) (*http.Response, error) {
				mu.Lock()
				rep := c.replies[min(opened, len(c.replies)-1)]
				opened++
				mu.Unlock()
				ctype := "text/event-stream"
				if rep.status != 200 || !c.stream {
					ctype = "application/json"
				}
				return &http.Response{StatusCode: rep.status, Header: http.Header{"Content-Type": {ctype}},
					Body: closeCount{Reader: strings.NewReader(rep.body), mu: &mu, closed: &closed}, Request: r}, nil
			})}
			p, err := New(WithAPIKey("k"), WithModel("m"), WithBaseURL("http://127.0.0.1:1/v1"), WithHTTPClient(client),
				WithStreaming(c.stream), withSleep(noSleep), WithEnv(func(string) string { return "" }))
			if err != nil {
				t.Fatal(err)
			}
			for _, err := range p.Invoke(t.Context(), userReq("x")) {
				if c.stop || err != nil {
					break
				}
			}
			mu.Lock()
			defer mu.Unlock()
			if opened != len(c.replies) || closed < opened {
				t.Errorf("%d bodies opened, %d closed", opened, closed)
			}
		})
	}
}
