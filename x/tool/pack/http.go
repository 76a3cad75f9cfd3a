package pack

import (
	"context"
	"errors"
	"net/http"
)

// ErrNoHTTPClient is the error of every request made through the client
// HTTPClient returns when the context carries none.
var ErrNoHTTPClient = errors.New("pack: no HTTP client was given to this tool call (the application passes one with pack.WithHTTPClient); the network is closed")

type httpClientKey struct{}

// WithHTTPClient gives tool calls made with ctx the client c. It is the only
// way a pack reaches the network, so the application decides where traffic
// goes (proxies, allow lists, test servers). A nil c gives none.
func WithHTTPClient(ctx context.Context, c *http.Client) context.Context {
	return context.WithValue(ctx, httpClientKey{}, c)
}

// HTTPClient returns the client given by WithHTTPClient. When there is none
// it returns a client that refuses every request with ErrNoHTTPClient: a
// pack fails closed rather than falling back to a default client.
func HTTPClient(ctx context.Context) *http.Client {
	if c, ok := ctx.Value(httpClientKey{}).(*http.Client); ok && c != nil {
		return c
	}
	return &http.Client{Transport: refuse{}}
}

type refuse struct{}

func (refuse) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Body != nil {
		req.Body.Close()
	}
	return nil, ErrNoHTTPClient
}
