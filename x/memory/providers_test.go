package memory_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/lodeworks/lode/artifact"
	"github.com/lodeworks/lode/ledger"
	"github.com/lodeworks/lode/provider"
	"github.com/lodeworks/lode/x/memory"
	"github.com/lodeworks/lode/x/provider/anthropic"
	"github.com/lodeworks/lode/x/provider/gemini"
	"github.com/lodeworks/lode/x/provider/openai"
	"github.com/lodeworks/lode/x/provider/openai/responses"
)

// TestRecallTurnOnTheWire sends a thread with a recall turn through each
// adapter to a server that records the body and refuses it: every
// adapter builds the request (no request error), puts the facts in the
// last user message, after the user's own text, and not in the system
// prompt.
func TestRecallTurnOnTheWire(t *testing.T) {
	const fact = "Alice's dog is called Biscuit."
	th := ledger.NewThread()
	_ = th.Append(ledger.RoleUser, artifact.Text{Content: "What is my dog called?"})
	recall := memory.RecallTurn([]memory.Fact{{Text: fact}})
	_ = th.Append(recall.Role, recall.Artifacts...)
	req := &provider.Request{Turns: th.Turns()}
	if err := provider.WithSystemPrompt("You are helpful.").ApplyInvoke(context.Background(), th, req); err != nil {
		t.Fatal(err)
	}

	type wire struct {
		system   func(body map[string]any) any
		lastUser func(body map[string]any) any
	}
	last := func(key string) func(map[string]any) any {
		return func(b map[string]any) any {
			l, _ := b[key].([]any)
			if len(l) == 0 {
				return nil
			}
			return l[len(l)-1]
		}
	}
	for _, tc := range []struct {
		name string
		new  func(url string, c *http.Client) (provider.Provider, error)
		wire wire
	}{
		{"openai", func(url string, c *http.Client) (provider.Provider, error) {
			return openai.New(openai.WithBaseURL(url), openai.WithHTTPClient(c), openai.WithAPIKey("k"), openai.WithModel("m"), openai.WithMaxRetries(0))
		}, wire{func(b map[string]any) any { return b["messages"].([]any)[0] }, last("messages")}},
		{"responses", func(url string, c *http.Client) (provider.Provider, error) {
			return responses.New(responses.WithBaseURL(url), responses.WithHTTPClient(c), responses.WithAPIKey("k"), responses.WithModel("m"), responses.WithMaxRetries(0))
		}, wire{func(b map[string]any) any { return b["instructions"] }, last("input")}},
		{"anthropic", func(url string, c *http.Client) (provider.Provider, error) {
			return anthropic.New(anthropic.WithBaseURL(url), anthropic.WithHTTPClient(c), anthropic.WithAPIKey("k"), anthropic.WithModel("m"), anthropic.WithMaxRetries(0))
		}, wire{func(b map[string]any) any { return b["system"] }, last("messages")}},
		{"gemini", func(url string, c *http.Client) (provider.Provider, error) {
			return gemini.New(gemini.WithBaseURL(url), gemini.WithHTTPClient(c), gemini.WithAPIKey("k"), gemini.WithModel("m"), gemini.WithMaxRetries(0))
		}, wire{func(b map[string]any) any { return b["systemInstruction"] }, last("contents")}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var mu sync.Mutex
			var body []byte
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				b, _ := io.ReadAll(r.Body)
				mu.Lock()
				body = b
				mu.Unlock()
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(http.StatusBadRequest)
				_, _ = io.WriteString(w, `{"error":{"message":"recorded","type":"invalid_request_error"}}`)
			}))
			defer srv.Close()
			prov, err := tc.new(srv.URL, srv.Client())
			if err != nil {
				t.Fatal(err)
			}
			for _, err := range prov.Invoke(context.Background(), req) {
				if err != nil && !strings.Contains(err.Error(), "recorded") && !strings.Contains(err.Error(), "400") {
					t.Fatalf("the adapter refused the request: %v", err)
				}
			}
			mu.Lock()
			defer mu.Unlock()
			var b map[string]any
			if err := json.Unmarshal(body, &b); err != nil {
				t.Fatalf("body %q: %v", body, err)
			}
			sys, _ := json.Marshal(tc.wire.system(b))
			user, _ := json.Marshal(tc.wire.lastUser(b))
			if strings.Contains(string(sys), "Biscuit") {
				t.Errorf("the system prompt holds the fact: %s", sys)
			}
			if !strings.Contains(string(user), "Biscuit") || !strings.Contains(string(user), `"user"`) {
				t.Errorf("the last message does not carry the fact as the user's: %s", user)
			}
		})
	}
}
