package providertest

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"iter"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"

	"go.opentelemetry.io/otel/attribute"

	"github.com/lodeworks/lode/artifact"
	"github.com/lodeworks/lode/provider"
)

// seq is a provider that yields its items, stopping at the first error.
type seq []any

func (s seq) Invoke(context.Context, *provider.Request) iter.Seq2[artifact.Artifact, error] {
	return func(yield func(artifact.Artifact, error) bool) {
		for _, it := range s {
			var ok bool
			if err, isErr := it.(error); isErr {
				ok = yield(nil, err)
			} else {
				ok = yield(it.(artifact.Artifact), nil)
			}
			if !ok {
				return
			}
		}
	}
}

func TestCollect(t *testing.T) {
	boom := errors.New("boom")
	cases := []struct {
		name          string
		p             seq
		deltas, whole []artifact.Artifact
		err           error
	}{
		{name: "nothing", p: seq{}},
		{name: "deltas apart from whole", p: seq{artifact.TextDelta{Content: "a"}, artifact.Text{Content: "a"}, artifact.TextDelta{Content: "b"}},
			deltas: []artifact.Artifact{artifact.TextDelta{Content: "a"}, artifact.TextDelta{Content: "b"}},
			whole:  []artifact.Artifact{artifact.Text{Content: "a"}}},
		{name: "the first error ends it", p: seq{artifact.Text{Content: "a"}, boom, artifact.Text{Content: "never"}},
			whole: []artifact.Artifact{artifact.Text{Content: "a"}}, err: boom},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			deltas, whole, err := Collect(tc.p, &provider.Request{})
			if !reflect.DeepEqual(deltas, tc.deltas) || !reflect.DeepEqual(whole, tc.whole) || err != tc.err {
				t.Fatalf("got %v, %v, %v; want %v, %v, %v", deltas, whole, err, tc.deltas, tc.whole, tc.err)
			}
		})
	}
}

func TestDig(t *testing.T) {
	var v any
	if err := json.Unmarshal([]byte(`{"a":[{"b":"x"},2],"n":null}`), &v); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		path []any
		want any
	}{
		{name: "empty path", path: nil, want: v},
		{name: "into an object and an array", path: []any{"a", 0, "b"}, want: "x"},
		{name: "a number", path: []any{"a", 1}, want: 2.0},
		{name: "missing key", path: []any{"z", 0}, want: nil},
		{name: "index past the end", path: []any{"a", 2}, want: nil},
		{name: "negative index", path: []any{"a", -1}, want: nil},
		{name: "key into an array", path: []any{"a", "b"}, want: nil},
		{name: "index into an object", path: []any{0}, want: nil},
		{name: "step of another type", path: []any{1.5}, want: nil},
		{name: "through null", path: []any{"n", "x"}, want: nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := Dig(v, tc.path...); !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("Dig(%v) = %v, want %v", tc.path, got, tc.want)
			}
		})
	}
}

func TestRecorder(t *testing.T) {
	sr, tr := Recorder()
	_, plain := tr.Start(context.Background(), "plain")
	plain.End()
	_, failed := tr.Start(context.Background(), "failed")
	failed.SetAttributes(attribute.String("error.type", "timeout"), attribute.Int("n", 1))
	failed.End()
	spans := sr.Ended()
	if len(spans) != 2 || spans[0].Name() != "plain" {
		t.Fatalf("%d spans", len(spans))
	}
	if got := ErrorType(spans[0]); got != "" {
		t.Errorf("error.type of a span without one = %q", got)
	}
	if got := len(Attributes(spans[0])); got != 0 {
		t.Errorf("%d attributes", got)
	}
	if got := ErrorType(spans[1]); got != "timeout" {
		t.Errorf("error.type = %q", got)
	}
	want := map[attribute.Key]attribute.Value{"error.type": attribute.StringValue("timeout"), "n": attribute.IntValue(1)}
	if got := Attributes(spans[1]); !reflect.DeepEqual(got, want) {
		t.Errorf("attributes = %v", got)
	}
}

func TestBytesClient(t *testing.T) {
	c := BytesClient("text/event-stream", []byte("data: 1\n\n"))
	for range 2 {
		resp, err := c.Post("http://h.test/x", "application/json", strings.NewReader(`{}`))
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "text/event-stream" || string(b) != "data: 1\n\n" {
			t.Fatalf("%d %v %q", resp.StatusCode, resp.Header, b)
		}
	}
}

// Holding sends its start at once and ends the response only when the
// request does.
func TestHolding(t *testing.T) {
	srv := httptest.NewServer(Holding(t, "data: a\n\n"))
	t.Cleanup(srv.Close)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	r, _ := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL, nil)
	resp, err := srv.Client().Do(r)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	buf := make([]byte, len("data: a\n\n"))
	if _, err := io.ReadFull(resp.Body, buf); err != nil || string(buf) != "data: a\n\n" || resp.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("start %q, %v, %v", buf, err, resp.Header)
	}
	cancel()
	if _, err := io.ReadAll(resp.Body); !errors.Is(err, context.Canceled) {
		t.Fatalf("after the request ended: %v", err)
	}
}

func TestAnswer(t *testing.T) {
	cases := []struct {
		name       string
		a          Answer
		status     int
		ctype      string
		body       string
		cut        bool
		wantHeader string // X-Test
	}{
		{name: "zero status is 200", a: Answer{Body: "ok"}, status: 200, body: "ok"},
		{name: "status and headers", a: Answer{Status: 429, Header: map[string]string{"X-Test": "1"}, Body: "slow"}, status: 429, body: "slow", wantHeader: "1"},
		{name: "content type wins over the header's", a: Answer{Header: map[string]string{"Content-Type": "text/plain"}, ContentType: "application/json", Body: "{}"},
			status: 200, ctype: "application/json", body: "{}"},
		{name: "partial is cut", a: Answer{Body: "data: a", Partial: true}, status: 200, body: "data: a", cut: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { tc.a.Write(w) }))
			defer srv.Close()
			resp, err := srv.Client().Get(srv.URL)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			b, err := io.ReadAll(resp.Body)
			if resp.StatusCode != tc.status || string(b) != tc.body || resp.Header.Get("X-Test") != tc.wantHeader {
				t.Fatalf("%d %q %v", resp.StatusCode, b, resp.Header)
			}
			if tc.ctype != "" && resp.Header.Get("Content-Type") != tc.ctype {
				t.Errorf("Content-Type %q", resp.Header.Get("Content-Type"))
			}
			if cut := errors.Is(err, io.ErrUnexpectedEOF); cut != tc.cut {
				t.Errorf("read error %v, want cut %v", err, tc.cut)
			}
		})
	}
}
