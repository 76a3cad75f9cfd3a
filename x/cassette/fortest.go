package cassette

import (
	"fmt"
	"net/http"
	"os"
	"strconv"
)

// EnvRecord is the environment variable that makes ForTest record: "1"
// (or any true value strconv.ParseBool reads) records, unset or false
// replays.
const EnvRecord = "LODE_RECORD"

// T is the part of *testing.T that ForTest uses.
type T interface {
	Helper()
	Fatalf(format string, args ...any)
	Errorf(format string, args ...any)
	Cleanup(func())
}

// ForTest returns an HTTP client that replays the cassette at path for
// the test t, or records it when EnvRecord says so; the cassette is
// written when the test ends. A missing or corrupted cassette in replay,
// or a value of EnvRecord that is not a boolean, fails the test at once
// with what to do. Options come after the mode EnvRecord picks, so
// WithMode pins one.
func ForTest(t T, path string, opts ...Option) *http.Client {
	t.Helper()
	mode := Replay
	if v := os.Getenv(EnvRecord); v != "" {
		on, err := strconv.ParseBool(v)
		if err != nil {
			t.Fatalf("cassette: %s=%q: want 1 to record or 0 to replay", EnvRecord, v)
			return nil
		}
		if on {
			mode = Record
		}
	}
	r, err := New(path, append([]Option{WithMode(mode)}, opts...)...)
	if err != nil {
		t.Fatalf("%v", err)
		return nil
	}
	t.Cleanup(func() {
		if err := r.Stop(); err != nil {
			t.Errorf("%v", err)
		}
	})
	if r.Mode() == Record {
		fmt.Fprintf(os.Stderr, "cassette: recording %s\n", path)
	}
	return r.Client()
}
