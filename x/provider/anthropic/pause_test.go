package anthropic

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/lodeworks/lode/artifact"
	"github.com/lodeworks/lode/ledger"
	"github.com/lodeworks/lode/loop"
)

// pausedSearch is an answer the server paused in the middle of its search
// loop, as the API streams one: text, the search's use, its result and
// more text when after is set, then stop_reason pause_turn.
func pausedSearch(text, after string) reply {
	events := []string{msgStart(`{"input_tokens":2679,"output_tokens":3}`),
		blockStart(0, `{"type":"text","text":""}`), blockDelta(0, textDelta(text)), blockStop(0),
		blockStart(1, searchUse),
		blockDelta(1, `{"type":"input_json_delta","partial_json":"{\"query\": \"claude shannon\"}"}`), blockStop(1)}
	if after != "" {
		events = append(events, blockStart(2, searchResult), blockStop(2),
			blockStart(3, `{"type":"text","text":""}`), blockDelta(3, textDelta(after)), blockStop(3))
	}
	events = append(events, msgDelta("pause_turn", `{"output_tokens":40,"server_tool_use":{"web_search_requests":1}}`), msgStop)
	return sse(events...)
}

// Through loop.Run: an answer paused with pause_turn is carried on by a
// second request that ends with the paused answer, as the server sent it,
// and the run ends with the answer that finishes it.
func TestLoopCarriesOnPausedTurn(t *testing.T) {
	const use = `{"id":"srvtoolu_01WYG3ziw53XMcoyKL4XcZmE","input":{"query":"claude shannon"},"name":"web_search","type":"server_tool_use"}`
	for _, c := range []struct {
		name, text, after string
		// wantLast is the paused answer's blocks as the second request
		// sends them, without trailing white space, which the API refuses
		// at the end of a request.
		wantLast string
	}{
		{"text then search", "I'll search for that.", "",
			`[{"cache_control":{"type":"ephemeral"},"text":"I'll search for that.","type":"text"},` + use + `]`},
		{"white space inside", "I'll search.\n ", "",
			`[{"cache_control":{"type":"ephemeral"},"text":"I'll search.\n ","type":"text"},` + use + `]`},
		{"trailing white space", "I'll search.", "One more search. \n",
			`[{"text":"I'll search.","type":"text"},` + use + `,` + sortedJSON(t, searchResult) + `,{"cache_control":{"type":"ephemeral"},"text":"One more search.","type":"text"}]`},
		{"only white space after", "I'll search.", " \n\t",
			`[{"cache_control":{"type":"ephemeral"},"text":"I'll search.","type":"text"},` + use + `,` + sortedJSON(t, searchResult) + `]`},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := newFake(t, pausedSearch(c.text, c.after), textAnswer("He was born in 1916."))
			th := ledger.NewThread()
			_ = th.Append(ledger.RoleUser, artifact.Text{Content: "When was Claude Shannon born?"})
			if _, err := loop.New().Run(t.Context(), th, f.provider(t)); err != nil {
				t.Fatal(err)
			}
			turns := th.Turns()
			if len(turns) != 3 || turns[1].Role != ledger.RoleAssistant || turns[2].Role != ledger.RoleAssistant {
				t.Fatalf("turns = %#v", turns)
			}
			if got := turns[1].Artifacts[len(turns[1].Artifacts)-1]; !reflect.DeepEqual(got, artifact.Finish{Reason: artifact.FinishPauseTurn}) {
				t.Errorf("the paused answer ends with %#v", got)
			}
			if got := turns[2].Artifacts[0]; got != (artifact.Text{Content: "He was born in 1916."}) {
				t.Errorf("the last answer begins with %#v", got)
			}
			msgs := at(f.body(1), "messages").([]any)
			if len(msgs) != 2 {
				t.Fatalf("the second request has %d messages: %s", len(msgs), js(msgs))
			}
			last := msgs[1].(map[string]any)
			if last["role"] != "assistant" {
				t.Fatalf("the second request ends with %s", js(last))
			}
			if got := js(last["content"]); got != c.wantLast {
				t.Errorf("the paused answer went back as\n%s\nwant\n%s", got, c.wantLast)
			}
		})
	}
}

// sortedJSON is s as js writes it, its keys in order.
func sortedJSON(t *testing.T, s string) string {
	var v any
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		t.Fatal(err)
	}
	return js(v)
}
