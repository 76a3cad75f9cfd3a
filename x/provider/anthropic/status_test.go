package anthropic

import "testing"

// HTTPStatus is the refusal's status, or for an error event in a stream
// the status the API documents for its type.
func TestHTTPStatus(t *testing.T) {
	cases := []struct {
		e    APIError
		want int
	}{
		{APIError{StatusCode: 503}, 503},
		{APIError{StatusCode: 529, Type: "overloaded_error"}, 529},
		{APIError{Type: "overloaded_error"}, 529},
		{APIError{Type: "rate_limit_error"}, 429},
		{APIError{Type: "api_error"}, 500},
		{APIError{Type: "timeout_error"}, 504},
		{APIError{Type: "invalid_request_error"}, 400},
		{APIError{Type: "authentication_error"}, 401},
		{APIError{Type: "permission_error"}, 403},
		{APIError{Type: "not_found_error"}, 404},
		{APIError{Type: "request_too_large"}, 413},
		{APIError{Type: "something_new"}, 0},
		{APIError{}, 0},
	}
	for _, tc := range cases {
		if got := tc.e.HTTPStatus(); got != tc.want {
			t.Errorf("%+v: HTTPStatus = %d, want %d", tc.e, got, tc.want)
		}
	}
}
