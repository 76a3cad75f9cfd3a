package gemini

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"sync"
	"testing"

	"github.com/lodeworks/lode/artifact"
	"github.com/lodeworks/lode/x/provider/internal/providertest"
)

// A server that sends the start of an answer and then holds the stream
// open: a cancelled context and a consumer that stops both end the
// invocation at once.
func TestStopMidStream(t *testing.T) {
	f := newFake(t)
	f.srv.Config.Handler = providertest.Holding(t, sse(`{"candidates":[{"content":{"parts":[{"text":"a"}],"role":"model"}}]}`))
	providertest.StopMidStream(t, newTestProvider(t, f), userText("x"), artifact.TextDelta{Content: "a"})
}

// closeCounter counts the response bodies closed.
type closeCounter struct {
	mu             sync.Mutex
	opened, closed int
}

type countedBody struct {
	io.Reader
	c *closeCounter
}

func (b countedBody) Close() error {
	b.c.mu.Lock()
	b.c.closed++
	b.c.mu.Unlock()
	return nil
}

// Every response body is closed: whole answers, refusals that are retried,
// the last refusal, and a stream the consumer abandons.
func TestBodiesClosed(t *testing.T) {
	replies := []reply{
		{sse: true, body: sse(okText)},
		{status: 503, body: errOverloaded}, {sse: true, body: sse(okText)},
		{status: 400, body: errBadKey},
		{sse: true, body: sse(`{"candidates":[{"content":{"parts":[{"text":"a"}]}}]}`, okText)},
	}
	var c closeCounter
	n := 0
	client := &http.Client{Transport: roundTripFunc(func(r *http.Request) (*http.Response, error) {
		io.Copy(io.Discard, r.Body)
		r.Body.Close()
		rep := replies[n]
		n++
		c.mu.Lock()
		c.opened++
		c.mu.Unlock()
		status := rep.status
		if status == 0 {
			status = 200
		}
		return &http.Response{StatusCode: status, Header: http.Header{}, Body: countedBody{bytes.NewReader([]byte(rep.body)), &c}, Request: r}, nil
	})}
	p := newTestProvider(t, newFake(t), WithHTTPClient(client))
	for range 3 {
		for range p.Invoke(context.Background(), userText("x")) {
		}
	}
	for range p.Invoke(context.Background(), userText("x")) {
		break
	}
	if c.opened != 5 || c.closed != 5 {
		t.Fatalf("%d bodies opened, %d closed", c.opened, c.closed)
	}
}
