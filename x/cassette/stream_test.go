package cassette_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/lodeworks/lode/x/cassette"
)

// eventServer streams the given events, flushing after each.
func eventServer(t *testing.T, events ...string) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		for _, e := range events {
			fmt.Fprint(w, e)
			w.(http.Flusher).Flush()
		}
	}))
	t.Cleanup(srv.Close)
	return srv
}

// reads returns what each Read of the body gave, with a buffer larger
// than the whole body.
func reads(t *testing.T, resp *http.Response) []string {
	t.Helper()
	defer resp.Body.Close()
	var out []string
	buf := make([]byte, 1<<16)
	for {
		n, err := resp.Body.Read(buf)
		if n > 0 {
			out = append(out, string(buf[:n]))
		}
		if err != nil {
			return out
		}
	}
}

func TestReplayStreamsEventByEvent(t *testing.T) {
	events := []string{"data: {\"n\":1}\n\n", ": keep-alive\r\n\r\n", "event: x\ndata: {\"n\":2}\n\n", "data: [DONE]\n\n"}
	srv := eventServer(t, events...)
	for _, timing := range []bool{false, true} {
		t.Run(fmt.Sprintf("timing=%v", timing), func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "s.yaml")
			rec, err := cassette.New(path, cassette.WithMode(cassette.Record), cassette.WithTiming(timing))
			if err != nil {
				t.Fatal(err)
			}
			resp, err := rec.Client().Get(srv.URL + "/stream")
			if err != nil {
				t.Fatal(err)
			}
			if got := strings.Join(reads(t, resp), ""); got != strings.Join(events, "") {
				t.Fatalf("live body = %q", got)
			}
			if err := rec.Stop(); err != nil {
				t.Fatal(err)
			}
			data, _ := os.ReadFile(path)
			times := regexp.MustCompile(`Lode-Cassette-Event-Ms:\s*- "?([0-9,]+)"?`).FindStringSubmatch(string(data))
			switch {
			case timing && (times == nil || len(strings.Split(times[1], ",")) != len(events)):
				t.Errorf("timing: the cassette notes no time for each of %d events:\n%s", len(events), data)
			case !timing && strings.Contains(string(data), "Lode-Cassette"):
				t.Errorf("no timing asked, yet the cassette holds lode's headers:\n%s", data)
			}

			rep, err := cassette.New(path, cassette.WithTiming(timing))
			if err != nil {
				t.Fatal(err)
			}
			defer rep.Stop()
			resp, err = rep.Client().Get(srv.URL + "/stream")
			if err != nil {
				t.Fatal(err)
			}
			if resp.Header.Get("Lode-Cassette-Event-Ms") != "" {
				t.Errorf("replay shows lode's timing header to the client")
			}
			if got := reads(t, resp); fmt.Sprint(got) != fmt.Sprint(events) {
				t.Errorf("replayed reads = %q, want one per event %q", got, events)
			}
		})
	}
}

func TestReplayHoldsACutResponse(t *testing.T) {
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprint(w, "data: first\n\n")
		w.(http.Flusher).Flush()
		select {
		case <-r.Context().Done():
		case <-release:
		}
	}))
	defer srv.Close()
	defer close(release)
	path := filepath.Join(t.TempDir(), "cut.yaml")

	// get reads the first event and then gives up on the response, as an
	// MCP client does with a stream that stays open.
	get := func(client *http.Client) error {
		ctx, cancel := context.WithCancel(context.Background())
		req, _ := http.NewRequestWithContext(ctx, "GET", srv.URL+"/listen", nil)
		resp, err := client.Do(req)
		if err != nil {
			cancel()
			return err
		}
		defer resp.Body.Close()
		buf := make([]byte, 1<<10)
		n, err := resp.Body.Read(buf)
		if err != nil || string(buf[:n]) != "data: first\n\n" {
			cancel()
			return fmt.Errorf("first read = %q, %v", buf[:n], err)
		}
		cancel()
		_, err = resp.Body.Read(buf)
		return err
	}
	rec, err := cassette.New(path, cassette.WithMode(cassette.Record))
	if err != nil {
		t.Fatal(err)
	}
	if err := get(rec.Client()); !errors.Is(err, context.Canceled) {
		t.Fatalf("live: read after cancel = %v, want context.Canceled", err)
	}
	if err := rec.Stop(); err != nil {
		t.Fatal(err)
	}
	rep, err := cassette.New(path)
	if err != nil {
		t.Fatal(err)
	}
	defer rep.Stop()
	if err := get(rep.Client()); !errors.Is(err, context.Canceled) {
		t.Errorf("replay: read after cancel = %v, want context.Canceled (held open, not ended)", err)
	}
}

// TestRecordKeepsRequestOrder: the first response ends only after the
// second request is answered; the cassette still lists the first request
// first.
func TestRecordKeepsRequestOrder(t *testing.T) {
	secondDone := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprintf(w, "data: %s\n\n", r.URL.Path)
		w.(http.Flusher).Flush()
		if r.URL.Path == "/first" {
			select {
			case <-secondDone:
			case <-r.Context().Done():
			}
		}
	}))
	defer srv.Close()
	path := filepath.Join(t.TempDir(), "order.yaml")
	rec, err := cassette.New(path, cassette.WithMode(cassette.Record))
	if err != nil {
		t.Fatal(err)
	}
	first, err := rec.Client().Get(srv.URL + "/first")
	if err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 64)
	if n, err := first.Body.Read(buf); err != nil || string(buf[:n]) != "data: /first\n\n" {
		t.Fatalf("first event = %q, %v", buf[:n], err)
	}
	second, err := rec.Client().Get(srv.URL + "/second")
	if err != nil {
		t.Fatal(err)
	}
	reads(t, second)
	// go-vcr has recorded the second interaction by the time its body ends.
	close(secondDone)
	reads(t, first)
	if err := rec.Stop(); err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(path)
	i, j := strings.Index(string(data), "url: "+srv.URL+"/first"), strings.Index(string(data), "url: "+srv.URL+"/second")
	if i < 0 || j < 0 || i > j {
		t.Errorf("the cassette does not list /first before /second:\n%s", data)
	}
}
