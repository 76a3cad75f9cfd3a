package cassette_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lodeworks/lode/x/cassette"
)

// TestClock records two exchanges whose responses carry set Dates, then
// replays them: the replay's clock starts at the earliest Date and follows
// the Date of each response served, so that code judging the server's
// times (a container's expiry) sees the recording's; recording, the clock
// is the machine's.
func TestClock(t *testing.T) {
	dates := []time.Time{
		time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC),
		time.Date(2026, 3, 1, 10, 5, 0, 0, time.UTC),
	}
	n := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Date", dates[n].Format(http.TimeFormat))
		n++
		io.WriteString(w, `{"ok":true}`)
	}))
	defer srv.Close()
	path := filepath.Join(t.TempDir(), "dates.yaml")
	rec, err := cassette.New(path, cassette.WithMode(cassette.Record))
	if err != nil {
		t.Fatal(err)
	}
	before := time.Now()
	if now := rec.Clock()(); now.Before(before) || now.After(time.Now()) {
		t.Errorf("recording, the clock says %v, want the machine's time", now)
	}
	post := func(c *http.Client, body string) {
		t.Helper()
		resp, err := c.Post(srv.URL+"/v1/x", "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	post(rec.Client(), `{"n":1}`)
	post(rec.Client(), `{"n":2}`)
	if err := rec.Stop(); err != nil {
		t.Fatal(err)
	}

	rep, err := cassette.New(path)
	if err != nil {
		t.Fatal(err)
	}
	clock := rep.Clock()
	for i, body := range []string{"", `{"n":1}`, `{"n":2}`} {
		if body != "" {
			post(rep.Client(), body)
		}
		want := dates[max(i-1, 0)]
		if got := clock(); !got.Equal(want) {
			t.Errorf("after %d responses the replay's clock says %v, want %v", i, got, want)
		}
	}
	if err := rep.Stop(); err != nil {
		t.Fatal(err)
	}
}
