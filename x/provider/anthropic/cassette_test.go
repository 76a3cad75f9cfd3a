package anthropic

import (
	"context"
	"errors"
	"net"
	"net/http"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/lodeworks/lode/artifact"
	"github.com/lodeworks/lode/ledger"
	"github.com/lodeworks/lode/loop"
	"github.com/lodeworks/lode/x/cassette"
)

// lazyFake is the transport a cassette records from: the fake server,
// started on the first request, so that replay starts none.
type lazyFake struct {
	t       *testing.T
	replies []reply
	once    sync.Once
	rt      http.RoundTripper
}

func (l *lazyFake) RoundTrip(req *http.Request) (*http.Response, error) {
	l.once.Do(func() {
		addr := newFake(l.t, l.replies...).srv.Listener.Addr().String()
		var d net.Dialer
		l.rt = &http.Transport{DialContext: func(ctx context.Context, network, _ string) (net.Conn, error) {
			return d.DialContext(ctx, network, addr)
		}}
	})
	return l.rt.RoundTrip(req)
}

// A recorded code execution session replays with its container: the
// cassette holds the answer that reports it and the request that names
// it. Replayed after the container expired, the request names none, and
// the cassette has no answer for it unless the provider is given the
// recording's clock, which the cassette's Clock is.
func TestCassetteContainer(t *testing.T) {
	path := filepath.Join("testdata", "cassettes", "container.yaml")
	run := func(client *http.Client, opts ...Option) error {
		p, err := New(append([]Option{WithAPIKey("test-key"), WithModel("claude-sonnet-4-5"),
			WithBaseURL("http://anthropic.test"), WithHTTPClient(client), WithMaxRetries(0),
			WithEnv(func(string) string { return "" })}, opts...)...)
		if err != nil {
			t.Fatal(err)
		}
		th := ledger.NewThread()
		_ = th.Append(ledger.RoleUser, artifact.Text{Content: "Write 4 to n.txt."})
		if _, err := loop.New().Run(t.Context(), th, p); err != nil {
			t.Fatal(err)
		}
		_ = th.Append(ledger.RoleUser, artifact.Text{Content: "Is it still there?"})
		_, err = loop.New().Run(t.Context(), th, p)
		return err
	}
	pinned := WithClock(func() time.Time { return beforeExpiry })
	t.Run("the recording's clock", func(t *testing.T) {
		client := cassette.ForTest(t, path, cassette.WithTransport(&lazyFake{t: t, replies: []reply{execStream(containerObj), textAnswer("Yes.")}}))
		if err := run(client, pinned); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("the cassette's clock", func(t *testing.T) {
		// The recording's responses carry their Date, an hour before the
		// container expires; the cassette's clock replays it.
		client := cassette.ForTest(t, path, cassette.WithMode(cassette.Replay))
		if err := run(client, WithClock(client.Transport.(*cassette.Recorder).Clock())); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("after the container expired", func(t *testing.T) {
		client := cassette.ForTest(t, path, cassette.WithMode(cassette.Replay))
		late := WithClock(func() time.Time { return beforeExpiry.Add(2 * time.Hour) })
		if err := run(client, late); !errors.Is(err, cassette.ErrNoInteraction) {
			t.Fatalf("err = %v, want cassette.ErrNoInteraction", err)
		}
	})
}
