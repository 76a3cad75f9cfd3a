package gemini_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"

	"github.com/lodeworks/lode/artifact"
	"github.com/lodeworks/lode/ledger"
	"github.com/lodeworks/lode/provider"
	"github.com/lodeworks/lode/x/provider/gemini"
)

// A canned streamGenerateContent answer as the API sends it with alt=sse:
// a thought summary, then text, from a prompt mostly read from the cache.
const cannedStream = "data: {\"candidates\": [{\"content\": {\"parts\": [{\"text\": \"Two and two.\",\"thought\": true}],\"role\": \"model\"},\"index\": 0}],\"usageMetadata\": {\"promptTokenCount\": 4020,\"totalTokenCount\": 4020},\"modelVersion\": \"gemini-2.5-flash\",\"responseId\": \"r1\"}\r\n\r\n" +
	"data: {\"candidates\": [{\"content\": {\"parts\": [{\"text\": \"4\",\"thoughtSignature\": \"c2lnbmVk\"}],\"role\": \"model\"},\"finishReason\": \"STOP\",\"index\": 0}],\"usageMetadata\": {\"promptTokenCount\": 4020,\"candidatesTokenCount\": 1,\"thoughtsTokenCount\": 11,\"cachedContentTokenCount\": 4000,\"totalTokenCount\": 4032},\"modelVersion\": \"gemini-2.5-flash\",\"responseId\": \"r1\"}\r\n\r\n"

func Example() {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, cannedStream)
	}))
	defer srv.Close()

	p, err := gemini.New(
		gemini.WithModel("gemini-2.5-flash"),
		gemini.WithAPIKey("key"),
		gemini.WithBaseURL(srv.URL), // the Gemini API when left out
		gemini.WithThoughts(true),
	)
	if err != nil {
		fmt.Println(err)
		return
	}
	th := ledger.NewThread()
	_ = th.Append(ledger.RoleUser, artifact.Text{Content: "What is 2+2?"})
	for a, err := range p.Invoke(context.Background(), &provider.Request{Turns: th.Turns()}) {
		if err != nil {
			fmt.Println("error:", err)
			return
		}
		switch a := a.(type) {
		case artifact.ReasoningDelta:
			fmt.Printf("thinking: %s\n", a.Content)
		case artifact.TextDelta:
			fmt.Printf("text: %s\n", a.Content)
		case artifact.Reasoning:
			fmt.Printf("reasoning kept: field %s, signature %q\n", a.Field, a.Signature)
		case artifact.Usage:
			fmt.Printf("usage: %d in (%d cached), %d out (%d thinking)\n", a.InputTokens, a.CachedInputTokens, a.OutputTokens, a.ReasoningTokens)
		case artifact.Finish:
			fmt.Println("finish:", a.Reason)
		}
	}
	// Output:
	// thinking: Two and two.
	// text: 4
	// reasoning kept: field gemini_thought, signature ""
	// reasoning kept: field gemini_signature, signature "c2lnbmVk"
	// usage: 4020 in (4000 cached), 12 out (11 thinking)
	// finish: stop
}

// Vertex AI takes a project and a location, with Application Default
// Credentials unless WithCredentials gives others; with an API key alone it
// runs in express mode.
func ExampleWithBackend() {
	p, err := gemini.New(
		gemini.WithModel("gemini-2.5-pro"),
		gemini.WithBackend(gemini.BackendVertexAI),
		gemini.WithAPIKey("express-mode-key"),
		gemini.WithEnv(func(string) string { return "" }),
	)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(p.Backend(), p.BaseURL())
	// Output: vertex https://aiplatform.googleapis.com
}
