package anthropic_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"

	"github.com/lodeworks/lode/artifact"
	"github.com/lodeworks/lode/ledger"
	"github.com/lodeworks/lode/provider"
	"github.com/lodeworks/lode/x/provider/anthropic"
)

// A canned Messages API answer: thinking with its signature, then text,
// from a prompt mostly read from the cache.
const cannedStream = `event: message_start
data: {"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","model":"claude-sonnet-4-5","content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":20,"cache_read_input_tokens":4000,"cache_creation_input_tokens":0,"output_tokens":1}}}

event: content_block_start
data: {"type":"content_block_start","index":0,"content_block":{"type":"thinking","thinking":"","signature":""}}

event: content_block_delta
data: {"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"Two and two."}}

event: content_block_delta
data: {"type":"content_block_delta","index":0,"delta":{"type":"signature_delta","signature":"c2lnbmVk"}}

event: content_block_stop
data: {"type":"content_block_stop","index":0}

event: content_block_start
data: {"type":"content_block_start","index":1,"content_block":{"type":"text","text":""}}

event: ping
data: {"type":"ping"}

event: content_block_delta
data: {"type":"content_block_delta","index":1,"delta":{"type":"text_delta","text":"4"}}

event: content_block_stop
data: {"type":"content_block_stop","index":1}

event: message_delta
data: {"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},"usage":{"output_tokens":12}}

event: message_stop
data: {"type":"message_stop"}

`

func Example() {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, cannedStream)
	}))
	defer srv.Close()

	p, err := anthropic.New(
		anthropic.WithModel("claude-sonnet-4-5"),
		anthropic.WithBaseURL(srv.URL), // omit to talk to Anthropic with ANTHROPIC_API_KEY
		anthropic.WithThinkingBudget(2048),
	)
	if err != nil {
		panic(err)
	}
	req := &provider.Request{Turns: []ledger.Turn{
		{Role: ledger.RoleSystem, Artifacts: []artifact.Artifact{artifact.Text{Content: "Answer with a number."}}},
		{Role: ledger.RoleUser, Artifacts: []artifact.Artifact{artifact.Text{Content: "2+2?"}}},
	}}
	for a, err := range p.Invoke(context.Background(), req) {
		if err != nil {
			panic(err)
		}
		switch a := a.(type) {
		case artifact.Reasoning:
			fmt.Printf("thought %q, signed %s\n", a.Content, a.Signature)
		case artifact.Text:
			fmt.Println("answer:", a.Content)
		case artifact.Usage:
			fmt.Printf("prompt %d tokens, %d from the cache\n", a.InputTokens, a.CachedInputTokens)
		}
	}
	window, _ := p.ContextWindow()
	fmt.Println("context window:", window)
	// Output:
	// thought "Two and two.", signed c2lnbmVk
	// answer: 4
	// prompt 4020 tokens, 4000 from the cache
	// context window: 200000
}
