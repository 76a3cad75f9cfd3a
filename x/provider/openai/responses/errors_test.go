package responses

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/lodeworks/lode/x/provider/openai/openaitest"

	"github.com/lodeworks/lode/x/provider/internal/providertest"
)

const (
	err429   = `{"error":{"message":"Rate limit reached for gpt-test in organization org-1 on tokens per min (TPM): Limit 30000, Used 30000, Requested 500.","type":"tokens","param":null,"code":"rate_limit_exceeded"}}`
	err500   = `{"error":{"message":"The server had an error while processing your request. Sorry about that!","type":"server_error","param":null,"code":null}}`
	err401   = `{"error":{"message":"Incorrect API key provided: sk-test. You can find your API key at https://platform.openai.com/account/api-keys.","type":"invalid_request_error","param":null,"code":"invalid_api_key"}}`
	err400   = `{"error":{"message":"Invalid type for 'input[0].content': expected one of an array of input item objects or a string, but got an object instead.","type":"invalid_request_error","param":"input[0].content","code":"invalid_type"}}`
	errQuota = `{"error":{"message":"You exceeded your current quota, please check your plan and billing details.","type":"insufficient_quota","param":null,"code":"insufficient_quota"}}`
)

func TestHTTPErrors(t *testing.T) {
	cases := []struct {
		name     string
		replies  []http.HandlerFunc
		is       error
		status   int
		attempts int
		code     string
		param    string
		hint     string
	}{
		{"401 is not retried", []http.HandlerFunc{jsonReply(401, err401)}, ErrUnauthorized, 401, 1, "invalid_api_key", "", "check the API key"},
		{"400 says what and where", []http.HandlerFunc{jsonReply(400, err400)}, ErrInvalidRequest, 400, 1, "invalid_type", "input[0].content", ""},
		{"404", []http.HandlerFunc{jsonReply(404, `{"error":{"message":"The model 'gpt-nope' does not exist","type":"invalid_request_error","param":null,"code":"model_not_found"}}`)},
			ErrNotFound, 404, 1, "model_not_found", "", "check the model name"},
		{"5xx until the retries run out", []http.HandlerFunc{jsonReply(500, err500), jsonReply(502, err500), jsonReply(503, err500)}, ErrServer, 503, 3, "", "", "try again later"},
		{"429 until the retries run out", []http.HandlerFunc{jsonReply(429, err429), jsonReply(429, err429), jsonReply(429, err429, "Retry-After", "2")},
			ErrRateLimited, 429, 3, "rate_limit_exceeded", "", "asked to wait 2s"},
		{"no quota is not retried", []http.HandlerFunc{jsonReply(429, errQuota)}, ErrRateLimited, 429, 1, "insufficient_quota", "", "out of quota"},
		{"a body that is not OpenAI's", []http.HandlerFunc{jsonReply(400, `{"detail":"bad things"}`)}, ErrInvalidRequest, 400, 1, "", "", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			for _, stream := range []bool{true, false} {
				f := newFake(t, c.replies...)
				_, _, err := providertest.CollectContext(t.Context(), f.provider(t, WithStreaming(stream)), userReq("x"))
				var ae *APIError
				if !errors.As(err, &ae) || !errors.Is(err, c.is) {
					t.Fatalf("stream %v: err = %v; want %v", stream, err, c.is)
				}
				if ae.StatusCode != c.status || ae.Attempts != c.attempts || ae.Code != c.code || ae.Param != c.param || ae.Message == "" {
					t.Errorf("stream %v: %#v", stream, ae)
				}
				if !strings.Contains(ae.Hint, c.hint) || !strings.HasPrefix(err.Error(), "responses: ") || strings.Count(err.Error(), "responses:") != 1 {
					t.Errorf("stream %v: text %q", stream, err)
				}
				if n := len(f.requests()); n != c.attempts {
					t.Errorf("stream %v: %d requests", stream, n)
				}
			}
		})
	}
}

func TestRetryThenAnswer(t *testing.T) {
	var waits []time.Duration
	f := newFake(t, jsonReply(429, err429, "x-ratelimit-remaining-tokens", "0", "x-ratelimit-reset-tokens", "1.5s"),
		jsonReply(500, err500, "retry-after-ms", "20"), sse(textAnswer("ok")...))
	p := f.provider(t, withSleep(func(_ context.Context, d time.Duration) error { waits = append(waits, d); return nil }))
	_, arts, err := providertest.CollectContext(t.Context(), p, userReq("x"))
	if err != nil {
		t.Fatal(err)
	}
	if len(arts) != 3 || len(waits) != 2 || waits[0] < 1500*time.Millisecond || waits[1] < 20*time.Millisecond {
		t.Errorf("arts %#v, waits %v", arts, waits)
	}
	reqs := f.requests()
	if len(reqs) != 3 || string(reqs[0].Raw) != string(reqs[2].Raw) {
		t.Errorf("the retried body differs")
	}
}

func TestRetryWaitTooLong(t *testing.T) {
	f := newFake(t, jsonReply(429, err429, "Retry-After", "3600"))
	_, _, err := providertest.CollectContext(t.Context(), f.provider(t), userReq("x"))
	var ae *APIError
	if !errors.As(err, &ae) || ae.RetryAfter != time.Hour || ae.Attempts != 1 {
		t.Fatalf("err = %#v", err)
	}
}

func TestNoRetryAfterStreamBegan(t *testing.T) {
	f := newFake(t, sse(created(), `{"type":"error","code":"server_error","message":"oops"}`))
	_, _, err := providertest.CollectContext(t.Context(), f.provider(t), userReq("x"))
	if !errors.Is(err, ErrServer) || len(f.requests()) != 1 {
		t.Fatalf("err = %v after %d requests", err, len(f.requests()))
	}
}

func TestNew(t *testing.T) {
	env := func(m map[string]string) Option { return WithEnv(func(k string) string { return m[k] }) }
	cases := []struct {
		name string
		opts []Option
		want error
		text string
	}{
		{"no model", []Option{WithAPIKey("k"), env(nil)}, ErrNoModel, ""},
		{"no key", []Option{WithModel("m"), env(nil)}, ErrNoAPIKey, ""},
		{"bad URL", []Option{WithModel("m"), WithBaseURL("ftp://x"), env(nil)}, nil, "not an http(s) URL"},
		{"bad summary", []Option{WithModel("m"), WithAPIKey("k"), WithReasoningSummary("long"), env(nil)}, ErrOption, "WithReasoningSummary"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := New(c.opts...)
			if err == nil || (c.want != nil && !errors.Is(err, c.want)) || !strings.Contains(err.Error(), c.text) {
				t.Fatalf("err = %v", err)
			}
		})
	}
	p, err := New(WithModel("m"), env(map[string]string{EnvAPIKey: "k", EnvBaseURL: "http://127.0.0.1:9/v1/"}))
	if err != nil || p.BaseURL() != "http://127.0.0.1:9/v1" || p.Model() != "m" {
		t.Fatalf("%v %v", p, err)
	}
	_ = openaitest.Raw
}

func TestHeaders(t *testing.T) {
	f := newFake(t, sse(textAnswer("ok")...))
	p := f.provider(t, WithOrganization("org-7"), WithHeader("X-Gateway-Route", "eu"), WithHeader("X-Gateway-Route", "fallback"))
	if _, _, err := providertest.CollectContext(t.Context(), p, userReq("x")); err != nil {
		t.Fatal(err)
	}
	h := f.requests()[0].Header
	if h.Get("OpenAI-Organization") != "org-7" || strings.Join(h.Values("X-Gateway-Route"), ",") != "eu,fallback" || h.Get("Accept") != "text/event-stream" {
		t.Errorf("headers = %v", h)
	}
}
