package openai

import "testing"

func TestHTTPStatus(t *testing.T) {
	for _, n := range []int{0, 400, 429, 503} {
		if got := (&APIError{StatusCode: n}).HTTPStatus(); got != n {
			t.Errorf("HTTPStatus = %d, want %d", got, n)
		}
	}
}
