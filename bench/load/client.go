package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
)

// uiMessage is a message of the AI SDK's UI message list, as useChat
// keeps it and DefaultChatTransport sends it: the whole list each time.
type uiMessage struct {
	ID    string `json:"id"`
	Role  string `json:"role"`
	Parts []any  `json:"parts"`
}

// conversations is one measurement's client side: n conversations, each
// sending turns messages (every second one asks for the tool), reading
// each answer's stream to its end and thinking before the next.
type conversations struct {
	url    string // the chat endpoint
	epoch  time.Time
	n      int
	turns  int
	chunks int
	think  time.Duration
	ramp   time.Duration // the conversations start spread over this
	prefix string        // the conversations' IDs start with it
	client *http.Client

	mu        sync.Mutex
	latencies []int64 // chunk added latency, ns
	arrivals  []int64 // when each of latencies' chunks arrived, ns since epoch
	firstByte []int64 // request sent to the stream's first part, ns
	firstText []int64 // request sent to first text, ns
	delivered int64   // text chunks that reached the client
	errs      map[string]int
	samples   map[string]string // an example of each kind of error
	open      int               // streams open now
	maxOpen   int
}

func (c *conversations) fail(err error) {
	kind := err.Error()
	var se *sampleError
	if errors.As(err, &se) {
		kind = se.kind
	}
	c.mu.Lock()
	c.errs[kind]++
	if _, ok := c.samples[kind]; !ok && se != nil {
		c.samples[kind] = se.sample
	}
	c.mu.Unlock()
}

// sampleError is an error of a kind the table counts, with what the
// server said the first time, for -v.
type sampleError struct{ kind, sample string }

func (e *sampleError) Error() string { return e.kind }

// run runs every conversation to its end.
func (c *conversations) run(ctx context.Context) {
	c.errs, c.samples = map[string]int{}, map[string]string{}
	var wg sync.WaitGroup
	for i := range c.n {
		wg.Go(func() {
			if c.n > 1 {
				select {
				case <-time.After(c.ramp * time.Duration(i) / time.Duration(c.n)):
				case <-ctx.Done():
					return
				}
			}
			c.converse(ctx, fmt.Sprintf("%s-%d", c.prefix, i))
		})
	}
	wg.Wait()
}

func (c *conversations) converse(ctx context.Context, id string) {
	var messages []uiMessage
	for k := range c.turns {
		text := "question " + strconv.Itoa(k)
		if k%2 == 1 {
			text += ": " + toolWord + " 40 + 2"
		}
		messages = append(messages, uiMessage{ID: fmt.Sprintf("u%d", k), Role: "user", Parts: []any{map[string]string{"type": "text", "text": text}}})
		answer, err := c.send(ctx, id, messages, k%2 == 1)
		if err != nil {
			c.fail(err)
			return
		}
		answer.ID = fmt.Sprintf("a%d", k)
		messages = append(messages, answer)
		if k < c.turns-1 {
			select {
			case <-time.After(c.think):
			case <-ctx.Done():
				c.fail(errors.New("cancelled"))
				return
			}
		}
	}
}

// part is one UI message stream part, the fields the client reads.
type part struct {
	Type       string          `json:"type"`
	Delta      string          `json:"delta"`
	ToolCallID string          `json:"toolCallId"`
	ToolName   string          `json:"toolName"`
	Input      json.RawMessage `json:"input"`
	Output     json.RawMessage `json:"output"`
	ErrorText  string          `json:"errorText"`
}

// send posts the conversation and reads the answer's stream to its end,
// timing every stamped chunk; it returns the answer as a UI message.
func (c *conversations) send(ctx context.Context, id string, messages []uiMessage, tool bool) (uiMessage, error) {
	body, _ := json.Marshal(map[string]any{"id": id, "messages": messages, "trigger": "submit-message"})
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, c.url, bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	sent := time.Since(c.epoch)
	resp, err := c.client.Do(req)
	if err != nil {
		return uiMessage{}, &sampleError{"request failed", err.Error()}
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 300))
		return uiMessage{}, &sampleError{fmt.Sprintf("status %d", resp.StatusCode), string(b)}
	}
	c.mu.Lock()
	c.open++
	c.maxOpen = max(c.maxOpen, c.open)
	c.mu.Unlock()
	defer func() {
		c.mu.Lock()
		c.open--
		c.mu.Unlock()
	}()
	answer := uiMessage{Role: "assistant"}
	var lat, arr []int64
	first, firstByte := int64(-1), int64(-1)
	finished, done := false, false
	toolParts := map[string]map[string]any{}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 0, 4096), 1<<20)
	for sc.Scan() {
		line := sc.Bytes()
		if !bytes.HasPrefix(line, []byte("data: ")) {
			continue
		}
		data := line[len("data: "):]
		if string(data) == "[DONE]" {
			done = true
			break
		}
		now := int64(time.Since(c.epoch))
		if firstByte < 0 {
			firstByte = now - int64(sent)
		}
		// Text deltas, most of the parts, are read without decoding:
		// a stamp's digits and tildes pass through JSON as they are.
		if bytes.Contains(data, []byte(`"type":"text-delta"`)) {
			if first < 0 {
				first = now - int64(sent)
			}
			n := len(lat)
			lat = appendStamps(lat, string(data), now)
			if len(lat) > n {
				arr = arrivedAt(arr, len(lat)-n, now)
				continue
			}
		}
		var p part
		if err := json.Unmarshal(data, &p); err != nil {
			return answer, errors.New("bad part")
		}
		switch p.Type {
		case "text-delta":
			if first < 0 {
				first = now - int64(sent)
			}
			n := len(lat)
			lat = appendStamps(lat, p.Delta, now)
			arr = arrivedAt(arr, len(lat)-n, now)
		case "tool-input-available":
			tp := map[string]any{"type": "tool-" + p.ToolName, "toolCallId": p.ToolCallID, "state": "input-available", "input": p.Input}
			toolParts[p.ToolCallID] = tp
			answer.Parts = append(answer.Parts, tp)
		case "tool-output-available":
			if tp, ok := toolParts[p.ToolCallID]; ok {
				tp["state"], tp["output"] = "output-available", p.Output
			}
		case "start-step":
			answer.Parts = append(answer.Parts, map[string]string{"type": "step-start"})
		case "error":
			return answer, &sampleError{"error part", p.ErrorText}
		case "finish":
			finished = true
		}
	}
	if err := sc.Err(); err != nil {
		return answer, &sampleError{"stream broken", err.Error()}
	}
	if !finished || !done {
		return answer, errors.New("stream ended early")
	}
	if tool && len(toolParts) != 1 {
		return answer, errors.New("no tool call")
	}
	// The answer's text is the stamps' (what the model sent), rebuilt.
	answer.Parts = append(answer.Parts, map[string]string{"type": "text", "text": strings.Repeat(" ~0~", len(lat))})
	if len(lat) != c.chunks {
		return answer, fmt.Errorf("chunks lost")
	}
	c.mu.Lock()
	c.latencies = append(c.latencies, lat...)
	c.arrivals = append(c.arrivals, arr...)
	c.firstText = append(c.firstText, first)
	c.firstByte = append(c.firstByte, firstByte)
	c.delivered += int64(len(lat))
	c.mu.Unlock()
	return answer, nil
}

// arrivedAt appends now n times: the arrival of n chunks read together.
func arrivedAt(arr []int64, n int, now int64) []int64 {
	for range n {
		arr = append(arr, now)
	}
	return arr
}

// appendStamps adds now minus the send time of every whole stamp in delta
// (" ~NANOS~" each; the fake model sends one per chunk and a server may
// join chunks, never split one across deltas it has not sent whole).
func appendStamps(lat []int64, delta string, now int64) []int64 {
	for i := 0; i < len(delta); i++ {
		if delta[i] != '~' {
			continue
		}
		j := i + 1
		for j < len(delta) && delta[j] >= '0' && delta[j] <= '9' {
			j++
		}
		if j < len(delta) && delta[j] == '~' && j > i+1 {
			ns, _ := strconv.ParseInt(delta[i+1:j], 10, 64)
			lat = append(lat, now-ns)
			i = j
		}
	}
	return lat
}
