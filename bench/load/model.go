package main

import (
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
)

// toolWord in a user message makes the fake model call the tool before it
// answers.
const toolWord = "calculate"

// toolName is the tool both servers offer: lode's calculator pack and the
// AI SDK server's copy of it.
const toolName = "calculator__eval"

// model is a fake OpenAI-compatible chat completions server. Every answer
// is chunks text chunks, one every interval; each chunk carries its own
// send time (stamp), so the client measures how long the server under test
// took to pass it on. A user message holding toolWord is first answered
// with a call of toolName.
type model struct {
	epoch    time.Time
	chunks   int
	interval time.Duration
	requests atomic.Int64
	failures atomic.Int64
}

// stamp is a chunk's text: " ~NANOS~", NANOS the time since epoch when
// it leaves the model.
func (m *model) stamp() string {
	return " ~" + strconv.FormatInt(int64(time.Since(m.epoch)), 10) + "~"
}

type chatRequest struct {
	Stream   bool `json:"stream"`
	Messages []struct {
		Role    string          `json:"role"`
		Content json.RawMessage `json:"content"`
	} `json:"messages"`
}

func (m *model) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost || !strings.HasSuffix(r.URL.Path, "/chat/completions") {
		http.NotFound(w, r)
		return
	}
	m.requests.Add(1)
	var req chatRequest
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil || len(req.Messages) == 0 || !req.Stream {
		m.failures.Add(1)
		http.Error(w, "fake model: a streamed request with messages, please", http.StatusBadRequest)
		return
	}
	last := req.Messages[len(req.Messages)-1]
	callTool := last.Role == "user" && strings.Contains(string(last.Content), toolWord)
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	rc := http.NewResponseController(w)
	// Chunks are written by hand: at a thousand streams the harness's own
	// CPU competes with the server's, so it spends as little as it can.
	var buf []byte
	write := func() bool {
		if _, err := w.Write(buf); err != nil {
			return false
		}
		return rc.Flush() == nil
	}
	send := func(delta any, finish string) bool {
		choice := map[string]any{"index": 0, "delta": delta, "finish_reason": nil}
		if finish != "" {
			choice["finish_reason"] = finish
		}
		b, _ := json.Marshal(map[string]any{"id": "chatcmpl-load", "object": "chat.completion.chunk", "created": 0, "model": "fake", "choices": []any{choice}})
		buf = append(append(append(buf[:0], "data: "...), b...), "\n\n"...)
		return write()
	}
	sendText := func() bool {
		buf = append(buf[:0], `data: {"id":"chatcmpl-load","object":"chat.completion.chunk","created":0,"model":"fake","choices":[{"index":0,"delta":{"content":"`...)
		buf = append(buf, m.stamp()...)
		buf = append(buf, `"},"finish_reason":null}]}`+"\n\n"...)
		return write()
	}
	timer := time.NewTimer(m.interval)
	defer timer.Stop()
	wait := func() bool {
		timer.Reset(m.interval)
		select {
		case <-timer.C:
			return true
		case <-r.Context().Done():
			return false
		}
	}
	if !send(map[string]any{"role": "assistant", "content": ""}, "") || !wait() {
		return
	}
	finish := "stop"
	if callTool {
		call := map[string]any{"index": 0, "id": "call_" + strconv.FormatInt(m.requests.Load(), 36), "type": "function",
			"function": map[string]any{"name": toolName, "arguments": `{"expression":"40 + 2"}`}}
		if !send(map[string]any{"tool_calls": []any{call}}, "") {
			return
		}
		finish = "tool_calls"
	} else {
		for i := range m.chunks {
			if i > 0 && !wait() {
				return
			}
			if !sendText() {
				return
			}
		}
	}
	if !send(map[string]any{}, finish) {
		return
	}
	usage, _ := json.Marshal(map[string]any{"id": "chatcmpl-load", "object": "chat.completion.chunk", "created": 0, "model": "fake", "choices": []any{},
		"usage": map[string]int{"prompt_tokens": 10 * len(req.Messages), "completion_tokens": m.chunks, "total_tokens": 10*len(req.Messages) + m.chunks}})
	fmt.Fprintf(w, "data: %s\n\ndata: [DONE]\n\n", usage)
	rc.Flush()
}

// serveModel starts m on a loopback port and returns its base URL (…/v1)
// and a function that stops it.
func serveModel(m *model) (string, func(), error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, err
	}
	srv := &http.Server{Handler: m}
	go srv.Serve(ln)
	return "http://" + ln.Addr().String() + "/v1", func() { srv.Close() }, nil
}
