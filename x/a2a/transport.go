package a2a

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync/atomic"

	"go.opentelemetry.io/otel/propagation"
)

// traceProp writes W3C trace context and baggage into each request's
// headers, so the remote agent's spans join the caller's trace.
var traceProp = propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{})

// ErrTooLarge is wrapped when one response of the remote agent passes
// DefaultMaxResponse bytes; the call is stopped.
var ErrTooLarge = errors.New("a2a: the remote agent's response is too large")

// transport is the http.RoundTripper of every request a Remote makes. It
// adds the configured headers (credentials) to requests for the card's
// origin only, so that a card naming another host as its endpoint, or a
// redirect, never receives them; it adds trace context; it numbers
// JSON-RPC requests in order, so that a recorded session replays (the
// SDK's own IDs are random); and it bounds each response.
type transport struct {
	base    http.RoundTripper
	origin  string
	header  http.Header
	seq     atomic.Uint64
	maxBody int64
}

func newTransport(hc *http.Client, base *url.URL, header http.Header) *transport {
	rt := http.DefaultTransport
	if hc != nil && hc.Transport != nil {
		rt = hc.Transport
	}
	return &transport{base: rt, origin: originOf(base), header: header, maxBody: DefaultMaxResponse}
}

// originOf is u's scheme, host and port, with the scheme's default port
// written out, in lower case.
func originOf(u *url.URL) string {
	scheme := strings.ToLower(u.Scheme)
	host := strings.ToLower(u.Hostname())
	port := u.Port()
	if port == "" {
		switch scheme {
		case "http":
			port = "80"
		case "https":
			port = "443"
		}
	}
	return scheme + "://" + host + ":" + port
}

func (t *transport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	if originOf(r.URL) == t.origin {
		for k, vs := range t.header {
			r.Header[k] = append([]string(nil), vs...)
		}
	} else {
		// Whatever set them, credentials stay with the card's origin.
		for k := range t.header {
			r.Header.Del(k)
		}
	}
	traceProp.Inject(r.Context(), propagation.HeaderCarrier(r.Header))
	if r.Method == http.MethodPost && r.Body != nil && strings.HasPrefix(r.Header.Get("Content-Type"), "application/json") {
		if err := t.renumber(r); err != nil {
			return nil, err
		}
	}
	resp, err := t.base.RoundTrip(r)
	if err != nil {
		return nil, err
	}
	resp.Body = &boundedBody{rc: resp.Body, left: t.maxBody, max: t.maxBody}
	return resp, nil
}

// renumber gives a JSON-RPC request the next ID of this Remote's own
// sequence in place of the SDK's random one. A body that is not a
// JSON-RPC request goes as it was.
func (t *transport) renumber(r *http.Request) error {
	body, err := io.ReadAll(r.Body)
	r.Body.Close()
	if err != nil {
		return err
	}
	var m map[string]json.RawMessage
	if json.Unmarshal(body, &m) == nil && m["jsonrpc"] != nil && m["id"] != nil {
		m["id"] = json.RawMessage(strconv.Quote("lode-" + strconv.FormatUint(t.seq.Add(1), 10)))
		if b, err := json.Marshal(m); err == nil {
			body = b
		}
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	r.ContentLength = int64(len(body))
	r.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(body)), nil }
	return nil
}

// boundedBody fails a read past its limit with ErrTooLarge.
type boundedBody struct {
	rc        io.ReadCloser
	left, max int64
}

func (b *boundedBody) Read(p []byte) (int, error) {
	if b.left <= 0 {
		var one [1]byte
		if n, err := b.rc.Read(one[:]); n == 0 && err != nil {
			return 0, err
		}
		return 0, fmt.Errorf("%w: over %d bytes", ErrTooLarge, b.max)
	}
	if int64(len(p)) > b.left {
		p = p[:b.left]
	}
	n, err := b.rc.Read(p)
	b.left -= int64(n)
	return n, err
}

func (b *boundedBody) Close() error { return b.rc.Close() }
