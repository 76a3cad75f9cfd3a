package fallback_test

import (
	"context"
	"errors"
	"io"
	"iter"
	"net"
	"reflect"
	"syscall"
	"testing"
	"time"

	"github.com/lodeworks/lode/artifact"
	"github.com/lodeworks/lode/provider"
	"github.com/lodeworks/lode/x/provider/anthropic"
	"github.com/lodeworks/lode/x/provider/fallback"
	"github.com/lodeworks/lode/x/provider/openai"
)

func TestFallback(t *testing.T) {
	e503 := &openai.APIError{StatusCode: 503, Message: "unavailable"}
	e429 := &openai.APIError{StatusCode: 429}
	e400 := &openai.APIError{StatusCode: 400, Message: "bad"}
	e401 := &openai.APIError{StatusCode: 401}
	timeout := &openai.TimeoutError{Idle: true}
	refused := &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}
	overloaded := &anthropic.APIError{Type: "overloaded_error", Message: "Overloaded"}
	eof := io.ErrUnexpectedEOF
	b := answer("b", 10, 2)
	bArts := []artifact.Artifact{
		artifact.TextDelta{Content: "b"}, artifact.Text{Content: "b"},
		artifact.Usage{InputTokens: 10, OutputTokens: 2}, artifact.Finish{Reason: "stop"},
	}

	cases := []struct {
		name    string
		first   []step
		second  []step
		opts    []fallback.Option
		want    []artifact.Artifact
		wantErr []error // each must match with errors.Is; nil: no error
		// exact, when set, is the error that must come back as it is.
		exact error
		// notErr must not match.
		notErr      []error
		secondCalls int32
	}{
		{name: "503 before streaming", first: []step{{err: e503}}, second: b, want: bArts, secondCalls: 1},
		{name: "429 before streaming", first: []step{{err: e429}}, second: b, want: bArts, secondCalls: 1},
		{name: "idle timeout", first: []step{{err: timeout}}, second: b, want: bArts, secondCalls: 1},
		{name: "connection refused", first: []step{{err: refused}}, second: b, want: bArts, secondCalls: 1},
		{name: "connection cut before the answer", first: []step{{err: eof}}, second: b, want: bArts, secondCalls: 1},
		{name: "overloaded in the stream", first: []step{{err: overloaded}}, second: b, want: bArts, secondCalls: 1},
		{name: "a plain status error", first: []step{{err: &statusErr{502}}}, second: b, want: bArts, secondCalls: 1},
		{
			name:  "the failed attempt's usage comes before the answer",
			first: []step{{art: artifact.Usage{InputTokens: 7}}, {err: e503}}, second: b,
			want:        append([]artifact.Artifact{artifact.Usage{InputTokens: 7}}, bArts...),
			secondCalls: 1,
		},
		{
			name: "400 does not fall back", first: []step{{err: e400}}, second: b,
			exact: e400, wantErr: []error{e400}, secondCalls: 0,
		},
		{
			name: "401 does not fall back", first: []step{{err: e401}}, second: b,
			exact: e401, wantErr: []error{openai.ErrUnauthorized}, secondCalls: 0,
		},
		{
			name: "400 falls back when asked", first: []step{{err: e400}}, second: b,
			opts: []fallback.Option{fallback.WithFallbackOn(fallback.ClassRequest)}, want: bArts, secondCalls: 1,
		},
		{
			name: "503 does not fall back when only 400 is asked", first: []step{{err: e503}}, second: b,
			opts:  []fallback.Option{fallback.WithFallbackOn(fallback.ClassRequest)},
			exact: e503, wantErr: []error{openai.ErrServer}, secondCalls: 0,
		},
		{
			name:  "a failure after a delta surfaces as it is",
			first: []step{{art: artifact.TextDelta{Content: "a"}}, {err: e503}}, second: b,
			want: []artifact.Artifact{artifact.TextDelta{Content: "a"}}, exact: e503, wantErr: []error{openai.ErrServer}, secondCalls: 0,
		},
		{
			name:  "a failure after a whole artifact surfaces as it is",
			first: []step{{art: artifact.Text{Content: "a"}}, {err: timeout}}, second: b,
			want: []artifact.Artifact{artifact.Text{Content: "a"}}, exact: timeout, wantErr: []error{openai.ErrIdleTimeout}, secondCalls: 0,
		},
		{
			name: "all fail", first: []step{{err: e503}}, second: []step{{art: artifact.Usage{InputTokens: 3}}, {err: e429}},
			want:        []artifact.Artifact{artifact.Usage{InputTokens: 3}},
			wantErr:     []error{fallback.ErrExhausted, openai.ErrServer, openai.ErrRateLimited, e503, e429},
			secondCalls: 1,
		},
		{
			name: "the second refuses the request", first: []step{{err: e503}}, second: []step{{err: e400}},
			wantErr: []error{openai.ErrServer, e400}, notErr: []error{fallback.ErrExhausted}, secondCalls: 1,
		},
		{
			name: "an empty answer is an answer", first: []step{}, second: b, want: nil, secondCalls: 0,
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			first, second := newFake("a", tc.first...), newFake("b", tc.second...)
			p, err := fallback.New([]provider.Provider{first, second}, tc.opts...)
			if err != nil {
				t.Fatal(err)
			}
			arts, err := collect(p.Invoke(context.Background(), req))
			if !reflect.DeepEqual(unmodel(arts), tc.want) {
				t.Errorf("artifacts = %#v, want %#v", arts, tc.want)
			}
			if tc.wantErr == nil && err != nil {
				t.Fatalf("err = %v", err)
			}
			if tc.wantErr != nil && err == nil {
				t.Fatal("no error")
			}
			for _, w := range tc.wantErr {
				if !errors.Is(err, w) {
					t.Errorf("errors.Is(%v, %v) = false", err, w)
				}
			}
			for _, w := range tc.notErr {
				if errors.Is(err, w) {
					t.Errorf("errors.Is(%v, %v) = true", err, w)
				}
			}
			if tc.exact != nil && err != tc.exact {
				t.Errorf("err = %#v, want the attempt's own %#v", err, tc.exact)
			}
			if got := first.calls.Load(); got != 1 {
				t.Errorf("first called %d times", got)
			}
			if got := second.calls.Load(); got != tc.secondCalls {
				t.Errorf("second called %d times, want %d", got, tc.secondCalls)
			}
		})
	}
}

func TestAllFailError(t *testing.T) {
	e1, e2, e3 := &statusErr{500}, &statusErr{529}, &statusErr{429}
	p, err := fallback.New([]provider.Provider{
		newFake("m1", step{err: e1}), newFake("m2", step{err: e2}), newFake("m3", step{err: e3}),
	})
	if err != nil {
		t.Fatal(err)
	}
	_, err = collect(p.Invoke(context.Background(), req))
	var fe *fallback.Error
	if !errors.As(err, &fe) {
		t.Fatalf("err = %v, want a *fallback.Error", err)
	}
	want := "fallback: every provider failed (3 attempts); attempt 1 to provider 0 (m1): fake: status 500; " +
		"attempt 2 to provider 1 (m2): fake: status 529; attempt 3 to provider 2 (m3): fake: status 429"
	if err.Error() != want {
		t.Errorf("err = %q\nwant  %q", err, want)
	}
	classes := []fallback.Class{fallback.ClassServer, fallback.ClassOverloaded, fallback.ClassRateLimit}
	for i, a := range fe.Attempts {
		if a.Attempt != i || a.Provider != i || a.Class != classes[i] {
			t.Errorf("attempt %d = %+v", i, a)
		}
	}
	for _, e := range []error{e1, e2, e3, fallback.ErrExhausted} {
		if !errors.Is(err, e) {
			t.Errorf("errors.Is(err, %v) = false", e)
		}
	}
}

// A caller that cancels never gets a fallback: the attempt's error comes
// back as it is and the next provider is not called.
func TestCallerCancelDoesNotFallBack(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	never := make(chan struct{})
	first := newFake("a", step{do: cancel}, step{wait: never})
	second := newFake("b", answer("b", 1, 1)...)
	p, _ := fallback.New([]provider.Provider{first, second})
	arts, err := collect(p.Invoke(ctx, req))
	if !errors.Is(err, context.Canceled) || len(arts) != 0 {
		t.Fatalf("arts %v, err %v; want the cancellation alone", arts, err)
	}
	var fe *fallback.Error
	if errors.As(err, &fe) {
		t.Errorf("err = %v, want the attempt's own error", err)
	}
	if n := second.calls.Load(); n != 0 {
		t.Errorf("second called %d times", n)
	}
}

// A caller that stops reading stops the attempt, and no other is made.
func TestCallerBreak(t *testing.T) {
	first := newFake("a", answer("a", 1, 1)...)
	second := newFake("b", answer("b", 1, 1)...)
	p, _ := fallback.New([]provider.Provider{first, second})
	n := 0
	for range p.Invoke(context.Background(), req) {
		n++
		break
	}
	if n != 1 || second.calls.Load() != 0 {
		t.Errorf("read %d, second called %d times", n, second.calls.Load())
	}
}

func TestNew(t *testing.T) {
	if _, err := fallback.New(nil); !errors.Is(err, fallback.ErrNoProviders) {
		t.Errorf("New(nil) = %v", err)
	}
	if _, err := fallback.New([]provider.Provider{newFake("a"), nil}); err == nil || err.Error() != "fallback: provider 1 is nil" {
		t.Errorf("New with a nil provider = %v", err)
	}
}

func TestClassify(t *testing.T) {
	live := context.Background()
	done, cancel := context.WithCancel(context.Background())
	cancel()
	cases := []struct {
		ctx  context.Context
		err  error
		want fallback.Class
	}{
		{live, &openai.APIError{StatusCode: 500}, fallback.ClassServer},
		{live, &openai.APIError{StatusCode: 503}, fallback.ClassServer},
		{live, &openai.APIError{StatusCode: 429}, fallback.ClassRateLimit},
		{live, &openai.APIError{StatusCode: 408}, fallback.ClassTimeout},
		{live, &openai.APIError{StatusCode: 400}, fallback.ClassRequest},
		{live, &openai.APIError{StatusCode: 404}, fallback.ClassRequest},
		{live, &openai.APIError{StatusCode: 401}, fallback.ClassAuth},
		{live, &openai.APIError{StatusCode: 403}, fallback.ClassAuth},
		// An error event inside a stream is the server failing unless its type says otherwise.
		{live, &openai.APIError{StatusCode: 0, Message: "in stream"}, fallback.ClassServer},
		{live, &openai.APIError{Type: "rate_limit_exceeded"}, fallback.ClassRateLimit},
		{live, &openai.APIError{Type: "invalid_request_error"}, fallback.ClassRequest},
		{live, &anthropic.APIError{StatusCode: 529}, fallback.ClassOverloaded},
		{live, &anthropic.APIError{Type: "overloaded_error"}, fallback.ClassOverloaded},
		{live, &anthropic.APIError{Type: "rate_limit_error"}, fallback.ClassRateLimit},
		{live, &anthropic.APIError{Type: "api_error"}, fallback.ClassServer},
		{live, &anthropic.APIError{Type: "invalid_request_error"}, fallback.ClassRequest},
		{live, &anthropic.APIError{Type: "authentication_error"}, fallback.ClassAuth},
		{live, &openai.TimeoutError{}, fallback.ClassTimeout},
		{live, &anthropic.TimeoutError{Idle: true}, fallback.ClassTimeout},
		{live, context.DeadlineExceeded, fallback.ClassTimeout},
		{live, &net.OpError{Op: "dial", Err: syscall.ECONNREFUSED}, fallback.ClassConnection},
		{live, &net.DNSError{Err: "no such host", Name: "x"}, fallback.ClassConnection},
		{live, syscall.ECONNRESET, fallback.ClassConnection},
		{live, io.EOF, fallback.ClassConnection},
		{live, errors.New("something"), fallback.ClassOther},
		{live, context.Canceled, fallback.ClassOther},
		// The caller's own end is never a reason to try elsewhere.
		{done, &openai.APIError{StatusCode: 503}, fallback.ClassOther},
		{done, context.DeadlineExceeded, fallback.ClassOther},
	}
	for _, tc := range cases {
		if got := fallback.Classify(tc.ctx, tc.err); got != tc.want {
			t.Errorf("Classify(%v) = %v, want %v", tc.err, got, tc.want)
		}
	}
	if s := fallback.DefaultClasses.String(); s != "server|rate_limit|overloaded|timeout|connection" {
		t.Errorf("DefaultClasses = %s", s)
	}
	if s := fallback.Class(0).String(); s != "none" {
		t.Errorf("Class(0) = %s", s)
	}
}

// windowed is a provider that knows its window and its formats.
type windowed struct {
	*fake
	window  int
	formats bool
}

func (w windowed) ContextWindow() (int, bool)         { return w.window, w.window > 0 }
func (w windowed) SupportsResponseFormat(string) bool { return w.formats }

func TestWhatItSaysAboutItself(t *testing.T) {
	cases := []struct {
		name    string
		provs   []provider.Provider
		window  int
		known   bool
		formats bool
		model   string
	}{
		{"the smallest window", []provider.Provider{windowed{newFake("a"), 200000, true}, windowed{newFake("b"), 128000, true}}, 128000, true, true, "a"},
		{"one without a window", []provider.Provider{newFake("a"), windowed{newFake("b"), 32000, true}}, 32000, true, false, "a"},
		{"none knows", []provider.Provider{newFake("a"), newFake("b")}, 0, false, false, "a"},
		{"one cannot send formats", []provider.Provider{windowed{newFake("a"), 1000, true}, windowed{newFake("b"), 0, false}}, 1000, true, false, "a"},
	}
	for _, tc := range cases {
		p, err := fallback.New(tc.provs)
		if err != nil {
			t.Fatal(err)
		}
		w, ok := p.ContextWindow()
		if w != tc.window || ok != tc.known {
			t.Errorf("%s: ContextWindow = %d, %v", tc.name, w, ok)
		}
		if got := p.SupportsResponseFormat(provider.ResponseFormatJSONSchema); got != tc.formats {
			t.Errorf("%s: SupportsResponseFormat = %v", tc.name, got)
		}
		if p.Model() != tc.model {
			t.Errorf("%s: Model = %q", tc.name, p.Model())
		}
	}
}

// rude ignores what its consumer says, and yields nil artifacts.
type rude struct{ arts []artifact.Artifact }

func (r rude) Invoke(context.Context, *provider.Request) iter.Seq2[artifact.Artifact, error] {
	return func(yield func(artifact.Artifact, error) bool) {
		yield(nil, nil)
		for _, a := range r.arts {
			yield(a, nil)
		}
		yield(nil, &statusErr{503})
		yield(artifact.Text{Content: "after the error"}, nil)
	}
}

type noStream struct{}

func (noStream) Invoke(context.Context, *provider.Request) iter.Seq2[artifact.Artifact, error] {
	return nil
}

// Providers that break the contract: no stream at all, nil artifacts,
// yielding on after an error or after the caller stopped.
func TestHostileProviders(t *testing.T) {
	for _, hedge := range []bool{false, true} {
		var opts []fallback.Option
		if hedge {
			opts = append(opts, fallback.WithHedge(time.Hour), fallback.WithClock(newFakeClock()))
		}
		// A rude provider fails with 503 before any artifact: the next answers.
		p, _ := fallback.New([]provider.Provider{rude{}, newFake("b", answer("b", 10, 2)...)}, opts...)
		arts, err := collect(p.Invoke(context.Background(), req))
		if err != nil || len(arts) != 4 {
			t.Errorf("hedge %v: rude then good: %v, %v", hedge, arts, err)
		}
		// A rude provider that started: its error, and nothing after it.
		p, _ = fallback.New([]provider.Provider{rude{arts: []artifact.Artifact{artifact.Text{Content: "a"}}}, newFake("b")}, opts...)
		arts, err = collect(p.Invoke(context.Background(), req))
		if want := []artifact.Artifact{artifact.Text{Content: "a"}}; !reflect.DeepEqual(arts, want) || err == nil || err.Error() != "fake: status 503" {
			t.Errorf("hedge %v: rude after starting: %v, %v", hedge, arts, err)
		}
		// A caller that stops: the rude provider's later yields go nowhere.
		p, _ = fallback.New([]provider.Provider{rude{arts: []artifact.Artifact{artifact.Text{Content: "a"}, artifact.Text{Content: "b"}}}, newFake("b")}, opts...)
		n := 0
		for range p.Invoke(context.Background(), req) {
			n++
			break
		}
		if n != 1 {
			t.Errorf("hedge %v: read %d after break", hedge, n)
		}
		// No stream: an error that does not fall back.
		p, _ = fallback.New([]provider.Provider{noStream{}, newFake("b", answer("b", 1, 1)...)}, opts...)
		_, err = collect(p.Invoke(context.Background(), req))
		if err == nil || err.Error() != "fallback: the provider returned no stream" {
			t.Errorf("hedge %v: no stream: %v", hedge, err)
		}
	}
}
