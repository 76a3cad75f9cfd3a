package openaitest

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
)

// TB is the part of testing.TB the server uses; a *testing.T is one.
type TB interface {
	Helper()
	Errorf(format string, args ...any)
	Cleanup(func())
}

// Server is a loopback chat-completions server that replays canned
// replies in order. Its embedded httptest.Server gives URL, Client and
// Close.
type Server struct {
	*httptest.Server
	tb      TB
	replies []http.HandlerFunc

	mu   sync.Mutex
	reqs []Request
}

// Request is one request the server received.
type Request struct {
	Path   string
	Header http.Header
	// Raw is the body as sent; Body is it decoded.
	Raw  []byte
	Body map[string]any
}

// NewServer starts a server that answers request n with replies[n]; it
// closes when tb's test ends.
func NewServer(tb TB, replies ...http.HandlerFunc) *Server {
	tb.Helper()
	s := &Server{tb: tb, replies: replies}
	s.Server = httptest.NewServer(http.HandlerFunc(s.serve))
	tb.Cleanup(s.Close)
	return s
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	raw, _ := io.ReadAll(r.Body)
	var body map[string]any
	if err := json.Unmarshal(raw, &body); err != nil {
		s.tb.Errorf("openaitest: request body is not JSON: %v: %s", err, raw)
	}
	s.mu.Lock()
	n := len(s.reqs)
	s.reqs = append(s.reqs, Request{Path: r.URL.Path, Header: r.Header.Clone(), Raw: raw, Body: body})
	s.mu.Unlock()
	if n >= len(s.replies) {
		s.tb.Errorf("openaitest: unexpected request %d (%d replies): %s", n+1, len(s.replies), raw)
		http.Error(w, `{"error":{"message":"no reply scripted"}}`, http.StatusTeapot)
		return
	}
	s.replies[n](w, r)
}

// BaseURL is the URL to give openai.WithBaseURL: the server's URL with
// "/v1".
func (s *Server) BaseURL() string { return s.URL + "/v1" }

// Requests returns a copy of the requests received so far, in order.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.reqs...)
}

// Stream sends each chunk (the JSON of a chat.completion.chunk) as a
// "data:" event and ends with "data: [DONE]".
func Stream(chunks ...string) http.HandlerFunc {
	var b strings.Builder
	for _, c := range chunks {
		b.WriteString("data: ")
		b.WriteString(c)
		b.WriteString("\n\n")
	}
	b.WriteString("data: [DONE]\n\n")
	return Raw(b.String())
}

// Raw sends body as an event stream exactly as given.
func Raw(body string) http.HandlerFunc {
	return func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = io.WriteString(w, body)
	}
}

// JSON answers with status and body as application/json, and with the
// headers given as name, value pairs (a Retry-After, a rate-limit reset).
func JSON(status int, body string, headers ...string) http.HandlerFunc {
	return func(w http.ResponseWriter, _ *http.Request) {
		for i := 0; i+1 < len(headers); i += 2 {
			w.Header().Set(headers[i], headers[i+1])
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		_, _ = io.WriteString(w, body)
	}
}

// Chunk is a chat.completion.chunk with one choice, its delta and
// finish_reason given as JSON ("null" for no finish reason).
func Chunk(delta, finish string) string {
	return `{"id":"chatcmpl-test","object":"chat.completion.chunk","created":1,"model":"test",` +
		`"choices":[{"index":0,"delta":` + delta + `,"finish_reason":` + finish + `}]}`
}

// Text streams an answer of text, finished with "stop".
func Text(text string) http.HandlerFunc {
	b, _ := json.Marshal(text)
	return Stream(
		Chunk(`{"role":"assistant","content":`+string(b)+`}`, "null"),
		Chunk(`{}`, `"stop"`),
	)
}

// Call streams one call of tool name with id and the JSON arguments args,
// finished with "tool_calls".
func Call(id, name, args string) http.HandlerFunc {
	i, _ := json.Marshal(id)
	n, _ := json.Marshal(name)
	a, _ := json.Marshal(args)
	return Stream(
		Chunk(fmt.Sprintf(`{"role":"assistant","tool_calls":[{"index":0,"id":%s,"type":"function","function":{"name":%s,"arguments":%s}}]}`, i, n, a), "null"),
		Chunk(`{}`, `"tool_calls"`),
	)
}
