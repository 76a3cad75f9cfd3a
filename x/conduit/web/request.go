package web

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
)

// chatRequest is the body useChat's default transport sends: the chat's
// ID and its messages. Only the last message is read: the store, not the
// browser, holds the history.
type chatRequest struct {
	ID       string      `json:"id"`
	Messages []uiMessage `json:"messages"`
	// Trigger is "submit-message" or "regenerate-message"; MessageID, on
	// a regenerate, names the message to answer again.
	Trigger   string `json:"trigger"`
	MessageID string `json:"messageId"`
}

func (h *Handler) decode(w http.ResponseWriter, r *http.Request, v any) bool {
	if r.ContentLength > h.cfg.maxBody {
		httpError(w, http.StatusRequestEntityTooLarge, fmt.Sprintf("web: request body of %d bytes exceeds the limit of %d", r.ContentLength, h.cfg.maxBody))
		return false
	}
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, h.cfg.maxBody))
	err := dec.Decode(v)
	if err == nil && dec.More() {
		err = errors.New("more than one JSON value")
	}
	if err != nil {
		if mbe, ok := errors.AsType[*http.MaxBytesError](err); ok {
			httpError(w, http.StatusRequestEntityTooLarge, fmt.Sprintf("web: request body exceeds the limit of %d bytes", mbe.Limit))
			return false
		}
		httpError(w, http.StatusBadRequest, "web: the body is not valid JSON: "+err.Error())
		return false
	}
	return true
}

// userText returns the text of the last message, which must be the
// user's.
func (c *chatRequest) userText() (string, error) {
	if len(c.Messages) == 0 {
		return "", errors.New("web: no messages: send {\"id\": THREAD, \"messages\": [{\"role\": \"user\", \"parts\": [{\"type\": \"text\", \"text\": ...}]}]}")
	}
	m := c.Messages[len(c.Messages)-1]
	if m.Role != "user" {
		return "", fmt.Errorf("web: the last message has role %q: want \"user\"", m.Role)
	}
	var b strings.Builder
	for _, p := range m.Parts {
		if p.Type == "text" {
			b.WriteString(p.Text)
		}
	}
	if strings.TrimSpace(b.String()) == "" {
		return "", errors.New("web: the last message has no text")
	}
	return b.String(), nil
}
