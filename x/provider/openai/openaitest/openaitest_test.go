package openaitest

import (
	"fmt"
	"io"
	"net/http"
	"reflect"
	"strings"
	"testing"
)

// fakeTB records what the server reports, so that a test can check it
// without failing itself.
type fakeTB struct {
	cleanups []func()
	errs     []string
}

func (*fakeTB) Helper() {}
func (f *fakeTB) Errorf(format string, args ...any) {
	f.errs = append(f.errs, fmt.Sprintf(format, args...))
}
func (f *fakeTB) Cleanup(fn func()) { f.cleanups = append(f.cleanups, fn) }

func (f *fakeTB) close() {
	for _, fn := range f.cleanups {
		fn()
	}
}

func post(t *testing.T, s *Server, path, body string) (int, string, string) {
	t.Helper()
	resp, err := s.Client().Post(s.URL+path, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, resp.Header.Get("Content-Type"), string(b)
}

func TestReplies(t *testing.T) {
	cases := []struct {
		name       string
		reply      http.HandlerFunc
		wantStatus int
		wantType   string
		wantBody   string
	}{
		{"stream", Stream(`{"a":1}`, `{"b":2}`), 200, "text/event-stream",
			"data: {\"a\":1}\n\ndata: {\"b\":2}\n\ndata: [DONE]\n\n"},
		{"raw", Raw("data: {oops\n\n"), 200, "text/event-stream", "data: {oops\n\n"},
		{"json", JSON(429, `{"error":{"message":"slow down"}}`), 429, "application/json", `{"error":{"message":"slow down"}}`},
		{"text", Text(`say "hi"`), 200, "text/event-stream",
			"data: " + Chunk(`{"role":"assistant","content":"say \"hi\""}`, "null") + "\n\n" +
				"data: " + Chunk(`{}`, `"stop"`) + "\n\ndata: [DONE]\n\n"},
		{"call", Call("call_1", "f", `{"x":1}`), 200, "text/event-stream",
			"data: " + Chunk(`{"role":"assistant","tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"f","arguments":"{\"x\":1}"}}]}`, "null") + "\n\n" +
				"data: " + Chunk(`{}`, `"tool_calls"`) + "\n\ndata: [DONE]\n\n"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := NewServer(t, tc.reply)
			status, ct, body := post(t, s, "/v1/chat/completions", `{"model":"m"}`)
			if status != tc.wantStatus || ct != tc.wantType || body != tc.wantBody {
				t.Errorf("got %d %q %q\nwant %d %q %q", status, ct, body, tc.wantStatus, tc.wantType, tc.wantBody)
			}
		})
	}
}

func TestJSONHeaders(t *testing.T) {
	s := NewServer(t, JSON(503, `{}`, "Retry-After", "2", "X-Odd"))
	resp, err := s.Client().Post(s.URL, "application/json", strings.NewReader(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 503 || resp.Header.Get("Retry-After") != "2" || resp.Header.Get("X-Odd") != "" {
		t.Errorf("status %d, headers %v", resp.StatusCode, resp.Header)
	}
}

func TestRecordsRequests(t *testing.T) {
	s := NewServer(t, Text("a"), Text("b"))
	post(t, s, "/v1/chat/completions", `{"model":"m","n":1}`)
	post(t, s, "/other", `{"model":"m","n":2}`)
	got := s.Requests()
	if len(got) != 2 {
		t.Fatalf("%d requests", len(got))
	}
	if got[0].Path != "/v1/chat/completions" || got[1].Path != "/other" ||
		string(got[1].Raw) != `{"model":"m","n":2}` ||
		!reflect.DeepEqual(got[0].Body, map[string]any{"model": "m", "n": float64(1)}) ||
		got[0].Header.Get("Content-Type") != "application/json" {
		t.Errorf("requests %+v", got)
	}
	if s.BaseURL() != s.URL+"/v1" {
		t.Errorf("BaseURL %q", s.BaseURL())
	}
}

// A body that is not JSON and a request after the last reply are reported
// to the test, and the extra request is answered with a 418.
func TestReportsMisuse(t *testing.T) {
	tb := &fakeTB{}
	s := NewServer(tb, Text("a"))
	post(t, s, "/v1/chat/completions", `not json`)
	status, _, body := post(t, s, "/v1/chat/completions", `{"model":"m"}`)
	tb.close()
	if status != http.StatusTeapot || body != "{\"error\":{\"message\":\"no reply scripted\"}}\n" {
		t.Errorf("extra request answered %d %q", status, body)
	}
	want := []string{
		"openaitest: request body is not JSON: invalid character 'o' in literal null (expecting 'u'): not json",
		`openaitest: unexpected request 2 (1 replies): {"model":"m"}`,
	}
	if !reflect.DeepEqual(tb.errs, want) {
		t.Errorf("reported %q\nwant %q", tb.errs, want)
	}
}
