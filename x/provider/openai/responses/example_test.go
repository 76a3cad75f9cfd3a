package responses_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"

	"github.com/lodeworks/lode/artifact"
	"github.com/lodeworks/lode/ledger"
	"github.com/lodeworks/lode/loop"
	"github.com/lodeworks/lode/x/provider/openai/responses"
)

// A canned Responses API answer: a reasoning item with its summary and
// encrypted content, then a message, from a prompt mostly read from the
// cache.
const cannedStream = `event: response.created
data: {"type":"response.created","sequence_number":0,"response":{"id":"resp_1","object":"response","model":"gpt-5-2025-08-07","status":"in_progress","output":[]}}

event: response.output_item.added
data: {"type":"response.output_item.added","sequence_number":1,"output_index":0,"item":{"id":"rs_1","type":"reasoning","summary":[]}}

event: response.reasoning_summary_text.delta
data: {"type":"response.reasoning_summary_text.delta","sequence_number":2,"item_id":"rs_1","output_index":0,"summary_index":0,"delta":"Two and two."}

event: response.output_item.done
data: {"type":"response.output_item.done","sequence_number":3,"output_index":0,"item":{"id":"rs_1","type":"reasoning","encrypted_content":"gAAAAB-opaque","summary":[{"type":"summary_text","text":"Two and two."}]}}

event: response.output_item.added
data: {"type":"response.output_item.added","sequence_number":4,"output_index":1,"item":{"id":"msg_1","type":"message","status":"in_progress","role":"assistant","content":[]}}

event: response.output_text.delta
data: {"type":"response.output_text.delta","sequence_number":5,"item_id":"msg_1","output_index":1,"content_index":0,"delta":"4"}

event: response.output_item.done
data: {"type":"response.output_item.done","sequence_number":6,"output_index":1,"item":{"id":"msg_1","type":"message","status":"completed","role":"assistant","content":[{"type":"output_text","annotations":[],"text":"4"}]}}

event: response.completed
data: {"type":"response.completed","sequence_number":7,"response":{"id":"resp_1","object":"response","model":"gpt-5-2025-08-07","status":"completed","output":[],"usage":{"input_tokens":4020,"input_tokens_details":{"cached_tokens":4000},"output_tokens":12,"output_tokens_details":{"reasoning_tokens":8},"total_tokens":4032}}}

`

func Example() {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, cannedStream)
	}))
	defer srv.Close()

	p, err := responses.New(
		responses.WithModel("gpt-5"),
		responses.WithAPIKey("sk-example"),
		responses.WithBaseURL(srv.URL+"/v1"),
		responses.WithReasoningSummary("auto"),
	)
	if err != nil {
		fmt.Println(err)
		return
	}
	th := ledger.NewThread()
	_ = th.Append(ledger.RoleUser, artifact.Text{Content: "What is 2+2?"})
	// The thread's ID is the prompt cache key of every turn.
	step := loop.New(loop.WithInvokeOptions(responses.WithThreadCacheKey()))
	if _, err := step.Turn(context.Background(), th, p); err != nil {
		fmt.Println(err)
		return
	}
	for _, a := range th.Turns()[1].Artifacts {
		switch a := a.(type) {
		case artifact.Reasoning:
			fmt.Printf("reasoning %q, kept encrypted: %v\n", a.Content, a.Signature != "")
		case artifact.Text:
			fmt.Println("answer:", a.Content)
		case artifact.Usage:
			fmt.Printf("input %d (cached %d), output %d (reasoning %d)\n", a.InputTokens, a.CachedInputTokens, a.OutputTokens, a.ReasoningTokens)
		case artifact.Finish:
			fmt.Println("finish:", a.Reason)
		}
	}
	// Output:
	// reasoning "Two and two.", kept encrypted: true
	// answer: 4
	// input 4020 (cached 4000), output 12 (reasoning 8)
	// finish: stop
}
