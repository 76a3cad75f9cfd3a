package core

import (
	"context"
	"errors"
	"net/url"
	"reflect"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/lodeworks/lode/artifact"
	"github.com/lodeworks/lode/provider"
	"github.com/lodeworks/lode/x/provider/internal/genaispan"
)

var (
	errNoModel = errors.New("x: no model")
	errNoKey   = errors.New("x: no key")
	testEnd    = Endpoint{Prefix: "x", EnvAPIKey: "X_KEY", EnvBaseURL: "X_URL", DefaultBaseURL: "https://api.x.test/v1",
		ErrNoModel: errNoModel, ErrNoAPIKey: errNoKey}
)

func TestResolve(t *testing.T) {
	env := func(m map[string]string) func(string) string { return func(k string) string { return m[k] } }
	cases := []struct {
		name         string
		s            Settings
		wantErr      error
		wantText     string
		wantKey, url string
	}{
		{name: "no model", s: Settings{APIKey: "k"}, wantErr: errNoModel},
		{name: "blank model", s: Settings{APIKey: "k", Model: " \t"}, wantErr: errNoModel},
		{name: "no key for the API's server", s: Settings{Model: "m", Getenv: env(nil)}, wantErr: errNoKey},
		{name: "key from the environment", s: Settings{Model: "m", Getenv: env(map[string]string{"X_KEY": "ek"})},
			wantKey: "ek", url: "https://api.x.test/v1"},
		{name: "no key for another server", s: Settings{Model: "m", BaseURL: "http://127.0.0.1:8000/v1", Getenv: env(nil)},
			url: "http://127.0.0.1:8000/v1"},
		{name: "server from the environment", s: Settings{Model: "m", Getenv: env(map[string]string{"X_URL": "http://h:1"})}, url: "http://h:1"},
		{name: "option over environment", s: Settings{Model: "m", APIKey: "ok", BaseURL: "http://o", Getenv: env(map[string]string{"X_KEY": "ek", "X_URL": "http://e"})},
			wantKey: "ok", url: "http://o"},
		{name: "not http", s: Settings{Model: "m", BaseURL: "ftp://h"}, wantText: `x: base URL "ftp://h" is not an http(s) URL`},
		{name: "no host", s: Settings{Model: "m", BaseURL: "http:///v1"}, wantText: `x: base URL "http:///v1" is not an http(s) URL`},
		{name: "unparsable", s: Settings{Model: "m", BaseURL: "http://h\x7f"}, wantText: `x: base URL "http://h\x7f" is not an http(s) URL`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			u, err := testEnd.Resolve(&tc.s)
			switch {
			case tc.wantErr != nil:
				if err != tc.wantErr {
					t.Fatalf("err = %v, want %v", err, tc.wantErr)
				}
				return
			case tc.wantText != "":
				if err == nil || err.Error() != tc.wantText {
					t.Fatalf("err = %v, want %s", err, tc.wantText)
				}
				return
			case err != nil:
				t.Fatal(err)
			}
			if u.String() != tc.url || tc.s.APIKey != tc.wantKey {
				t.Errorf("url %s key %q, want %s %q", u, tc.s.APIKey, tc.url, tc.wantKey)
			}
		})
	}
}

func TestNewConn(t *testing.T) {
	d := Defaults{MaxRetries: 2, MaxRetryWait: time.Minute, IdleTimeout: 2 * time.Minute}
	u, _ := url.Parse("https://h.test/v1/")
	c := NewConn(&Settings{Model: "m", BaseURL: "https://h.test/v1/"}, u, d)
	if c.Model != "m" || c.BaseURL != "https://h.test/v1" || c.ServerAddr != "h.test" || c.ServerPort != 443 ||
		c.MaxRetries != 2 || c.MaxRetryWait != time.Minute || c.IdleTimeout != 2*time.Minute || !c.Stream ||
		c.HTTPClient == nil || c.Sleep == nil || c.Now == nil || c.Timeout != 0 {
		t.Errorf("defaults: %+v", c)
	}

	var s Settings
	s.Model, s.BaseURL, s.NoStream = "m", "http://h:8080", true
	s.SetMaxRetries(-3)
	s.MaxRetryWait, s.IdleTimeout, s.Timeout = -time.Second, -1, time.Second
	s.AddHeader("X-A", "1")
	s.AddHeader("X-A", "2")
	u, _ = url.Parse(s.BaseURL)
	c = NewConn(&s, u, d)
	if c.MaxRetries != 0 || c.MaxRetryWait != time.Minute || c.IdleTimeout != -1 || c.Timeout != time.Second || c.Stream || c.ServerPort != 8080 {
		t.Errorf("set: %+v", c)
	}
	if got := c.Headers.Values("X-A"); !reflect.DeepEqual(got, []string{"1", "2"}) {
		t.Errorf("headers = %v", got)
	}
	p := c.Plan(time.Millisecond, time.Second)
	if p.Base != time.Millisecond || p.Cap != time.Second || p.MaxWait != time.Minute || p.Trace || p.Sleep == nil {
		t.Errorf("plan = %+v", p)
	}
}

type limitErr struct {
	idle  bool
	limit time.Duration
}

func (e *limitErr) Error() string { return "limit" }

func TestLimits(t *testing.T) {
	mk := func(idle bool, d time.Duration) error { return &limitErr{idle, d} }

	ctx, g, stop := Limits(t.Context(), 0, 0, mk)
	if g != nil || ctx != t.Context() {
		t.Error("no limits set, yet a guard or a new context")
	}
	stop()

	ctx, g, stop = Limits(t.Context(), time.Nanosecond, 0, mk)
	<-ctx.Done()
	if le, ok := context.Cause(ctx).(*limitErr); !ok || le.idle || le.limit != time.Nanosecond || g != nil {
		t.Errorf("cause = %v, guard %v", context.Cause(ctx), g)
	}
	stop()

	ctx, g, stop = Limits(t.Context(), 0, time.Nanosecond, mk)
	g.Arm()
	<-ctx.Done()
	if le, ok := context.Cause(ctx).(*limitErr); !ok || !le.idle || le.limit != time.Nanosecond {
		t.Errorf("cause = %v", context.Cause(ctx))
	}
	stop()

	ctx, _, stop = Limits(t.Context(), time.Hour, time.Hour, mk)
	stop()
	if !errors.Is(ctx.Err(), context.Canceled) {
		t.Errorf("after stop: %v", ctx.Err())
	}
}

func TestInvocationRun(t *testing.T) {
	boom := errors.New("boom")
	cases := []struct {
		name     string
		err      error
		wantFail error
		status   string
	}{
		{"answered", nil, nil, ""},
		{"consumer stopped", ErrStopped, nil, ""},
		{"failed", boom, boom, "kind"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			rec := tracetest.NewSpanRecorder()
			c := Conn{Model: "m", ServerAddr: "h", ServerPort: 1,
				Tracer: sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec)).Tracer("t")}
			inv := Invocation{Provider: "x", ErrorType: func(error) string { return "kind" }}
			var failed []error
			inv.Run(t.Context(), &c, &provider.Request{}, func(_ artifact.Artifact, err error) bool { failed = append(failed, err); return false },
				func(ctx context.Context, _ Yield) (*genaispan.Result, error) {
					return &genaispan.Result{Model: "m-1"}, tc.err
				})
			if tc.wantFail == nil && len(failed) != 0 || tc.wantFail != nil && (len(failed) != 1 || failed[0] != tc.wantFail) {
				t.Errorf("failed with %v, want %v", failed, tc.wantFail)
			}
			spans := rec.Ended()
			if len(spans) != 1 || spans[0].Name() != "chat m" || spans[0].Status().Description != tc.status {
				t.Fatalf("spans = %v", spans)
			}
		})
	}

	ran := false
	Invocation{Provider: "x"}.Run(t.Context(), &Conn{}, &provider.Request{}, func(artifact.Artifact, error) bool { t.Error("failed"); return false },
		func(ctx context.Context, _ Yield) (*genaispan.Result, error) { ran = true; return nil, nil })
	if !ran {
		t.Error("without a tracer, run was not called")
	}
}
