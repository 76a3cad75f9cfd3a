package openai

import "testing"

// TestHTTPStatus: a refusal's status is its own; an error event inside a
// stream (status 0) takes the status of its type or code, and an unknown
// or missing one is the server failing.
func TestHTTPStatus(t *testing.T) {
	cases := []struct {
		err  APIError
		want int
	}{
		{APIError{StatusCode: 400}, 400},
		{APIError{StatusCode: 429}, 429},
		{APIError{StatusCode: 503, Type: "invalid_request_error"}, 503},
		{APIError{}, 500},
		{APIError{Type: "server_error"}, 500},
		{APIError{Type: "upstream_fell_over"}, 500},
		{APIError{Type: "rate_limit_exceeded"}, 429},
		{APIError{Type: "tokens", Code: "rate_limit_exceeded"}, 429},
		{APIError{Code: "insufficient_quota"}, 429},
		{APIError{Type: "invalid_request_error", Code: "context_length_exceeded"}, 400},
		{APIError{Code: "invalid_api_key"}, 401},
		{APIError{Code: "model_not_found"}, 404},
	}
	for _, c := range cases {
		if got := c.err.HTTPStatus(); got != c.want {
			t.Errorf("%+v.HTTPStatus() = %d, want %d", c.err, got, c.want)
		}
	}
}
