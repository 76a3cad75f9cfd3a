package gemini

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"time"

	"google.golang.org/genai"

	"github.com/lodeworks/lode/x/provider/internal/idle"
	"github.com/lodeworks/lode/x/provider/internal/retry"
)

// The SDK builds each request (the contents and config mapped to the
// backend's wire format, the URL, the API key or Vertex AI's credentials)
// and sends it through roundTripper. The answer is not left to the SDK:
// callTransport keeps the real response for this package, which reads the
// stream itself, and gives the SDK an empty one. The SDK's stream decoder
// turns every event into a map, converts it and encodes and decodes it once
// more into its types (see BENCHMARKS.md); reading the wire format directly
// is several times cheaper and keeps what the SDK's types cannot hold, such
// as function-call arguments as sent and parts of kinds it does not know.

type callKey struct{}

func withCall(ctx context.Context, ct *callTransport) context.Context {
	return context.WithValue(ctx, callKey{}, ct)
}

// roundTripper hands each request to the invocation that made it.
type roundTripper struct{ p *Provider }

func (rt roundTripper) RoundTrip(req *http.Request) (*http.Response, error) {
	ct, _ := req.Context().Value(callKey{}).(*callTransport)
	if ct == nil {
		if req.Body != nil {
			req.Body.Close()
		}
		return nil, errors.New("gemini: a request outside an invocation")
	}
	resp, err := ct.do(req)
	if err != nil {
		ct.err = err
		return nil, err
	}
	if ct.resp != nil {
		resp.Body.Close()
		return nil, errors.New("gemini: the SDK sent a second request")
	}
	ct.resp = resp
	return &http.Response{
		Status: "200 OK", StatusCode: http.StatusOK, Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header: http.Header{"Content-Type": {"application/json"}}, Body: http.NoBody, Request: req,
	}, nil
}

// callTransport is one invocation's sending. It retries 429 and 5xx answers
// itself (the SDK's retries are off) so that the server's wait is honoured
// within WithMaxRetryWait, the wait is cancellable and testable, and the
// error can say how many attempts were made.
type callTransport struct {
	p       *Provider
	outcome retry.Outcome
	idle    *idle.Guard
	resp    *http.Response
	err     error
	fixes   sigFixes
}

// send has the SDK build and send the request and returns the server's
// answer, whatever its status.
func (t *callTransport) send(ctx context.Context, client *genai.Client, model string, contents []*genai.Content, cfg *genai.GenerateContentConfig, stream bool) (*http.Response, error) {
	var sdkErr error
	if stream {
		for _, err := range client.Models.GenerateContentStream(ctx, model, contents, cfg) {
			if err != nil {
				sdkErr = err
				break
			}
		}
	} else {
		_, sdkErr = client.Models.GenerateContent(ctx, model, contents, cfg)
	}
	if t.err != nil {
		return nil, t.err
	}
	if t.resp == nil {
		if sdkErr == nil {
			sdkErr = errors.New("the SDK sent nothing")
		}
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, &RequestError{Turn: -1, Reason: "not sent", Err: sdkErr}
	}
	return t.resp, nil
}

func (t *callTransport) do(req *http.Request) (*http.Response, error) {
	ctx := req.Context()
	body, err := retry.ReadBody(req)
	if err != nil {
		return nil, err
	}
	resp, err := t.sender().Send(ctx, req, t.fixes.apply(body), &t.outcome)
	if err != nil || resp.StatusCode/100 != 2 {
		return resp, err
	}
	resp.Body = idle.CloseOnDone(ctx, resp.Body)
	return resp, nil
}

// sender sends the invocation's request: a 429 or 5xx is retried, and the
// idle limit counts the wait for the response headers.
func (t *callTransport) sender() *retry.Sender {
	c := &t.p.core
	return &retry.Sender{
		Client: c.HTTPClient, MaxRetries: c.MaxRetries, Plan: c.Plan(retryBase, retryCap), Now: c.Now,
		Idle: t.idle, IdleHeaders: true,
		Delay:     func(h http.Header, now time.Time, _ int) (time.Duration, bool) { return retry.After(h, now) },
		BodyDelay: retryInfoDelay,
		Retry:     func(resp *http.Response, _ []byte) bool { return retry.Retryable(resp.StatusCode) },
	}
}

// retryInfoDelay reads the wait a refusal's body asks for when its headers
// name none: the retryDelay of a google.rpc.RetryInfo in the error's
// details ("37s").
func retryInfoDelay(body []byte) (time.Duration, bool) {
	var e struct {
		Error struct {
			Details []struct {
				Type       string `json:"@type"`
				RetryDelay string `json:"retryDelay"`
			} `json:"details"`
		} `json:"error"`
	}
	if json.Unmarshal(body, &e) != nil {
		return 0, false
	}
	for _, d := range e.Error.Details {
		if !strings.HasSuffix(d.Type, "google.rpc.RetryInfo") || d.RetryDelay == "" {
			continue
		}
		if wait, err := time.ParseDuration(d.RetryDelay); err == nil && wait >= 0 {
			return wait, true
		}
	}
	return 0, false
}
