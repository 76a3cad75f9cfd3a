package retry

import (
	"context"
	"net/http"
	"time"

	"github.com/lodeworks/lode/x/provider/internal/idle"
)

// Sender sends one request of an adapter, again while the server refuses
// it in a way worth retrying, within the adapter's limits. What differs
// between APIs (extra headers, where a wait is named, which refusals are
// retried) are its functions.
type Sender struct {
	Client     *http.Client
	MaxRetries int
	Plan       Plan
	Now        func() time.Time
	// Idle, when not nil, is armed while a response body is read, and
	// while its headers are awaited when IdleHeaders is set (a streaming
	// server answers at once; a whole answer's headers wait for the model).
	Idle        *idle.Guard
	IdleHeaders bool
	// Prepare, when not nil, sets what each attempt's request adds.
	Prepare func(*http.Request)
	// Delay reads the wait a refusal with status asks for.
	Delay func(h http.Header, now time.Time, status int) (time.Duration, bool)
	// BodyDelay, when not nil, reads the wait a refusal's body names (the
	// start of it, as Retry gets it) where Delay found none in the headers.
	BodyDelay func(data []byte) (time.Duration, bool)
	// Retry reports whether a refusal is worth another attempt; data is
	// the start of its body (Drain).
	Retry func(resp *http.Response, data []byte) bool
}

// Outcome is what Send learned beside the response: how many attempts were
// made and the last wait the server asked for.
type Outcome struct {
	Attempts   int
	RetryAfter time.Duration
}

// Send sends body as req's body until the server accepts it (a 2xx, whose
// body is left to the caller), refuses it for good (the last refusal is
// returned with its body drained), the retries run out, or a wait does not
// fit the plan or the context. An error is the transport's or the
// context's.
func (s *Sender) Send(ctx context.Context, req *http.Request, body []byte, o *Outcome) (*http.Response, error) {
	for attempt := 0; ; attempt++ {
		// Not every HTTP client an adapter is given checks the context
		// before it sends.
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		r := Clone(ctx, req, body)
		if s.Prepare != nil {
			s.Prepare(r)
		}
		if s.IdleHeaders {
			s.Idle.Arm()
		}
		resp, err := s.Client.Do(r)
		s.Idle.Disarm()
		o.Attempts = attempt + 1
		if err != nil {
			return nil, err
		}
		resp.Body = s.Idle.Body(resp.Body)
		if resp.StatusCode/100 == 2 {
			return resp, nil
		}
		data := Drain(resp)
		wait, asked := s.Delay(resp.Header, s.Now(), resp.StatusCode)
		if !asked && s.BodyDelay != nil {
			wait, asked = s.BodyDelay(data)
		}
		if asked {
			o.RetryAfter = wait
		}
		if attempt >= s.MaxRetries || !s.Retry(resp, data) {
			return resp, nil
		}
		again, err := s.Plan.Wait(ctx, attempt, resp.StatusCode, wait, asked)
		if err != nil {
			return nil, err
		}
		if !again {
			return resp, nil
		}
	}
}
