package anthropic

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"

	"github.com/lodeworks/lode/artifact"
	"github.com/lodeworks/lode/ledger"
	"github.com/lodeworks/lode/ledger/file"
	"github.com/lodeworks/lode/provider"
)

// A web search answer as the API streams it: text, the server tool's use
// (its input streamed), the search result block whole, a text block whose
// citations stream as citations_delta events, and more text.
const (
	searchUse    = `{"type":"server_tool_use","id":"srvtoolu_01WYG3ziw53XMcoyKL4XcZmE","name":"web_search","input":{}}`
	searchResult = `{"type":"web_search_tool_result","tool_use_id":"srvtoolu_01WYG3ziw53XMcoyKL4XcZmE","content":[{"type":"web_search_result","title":"Claude Shannon & <b>Wikipedia</b>","url":"https://en.wikipedia.org/wiki/Claude_Shannon?a=1&b=2","encrypted_content":"EqgfCioIARgBIiQ3YTAwMjY1Mi1mZjM5LTQ1NGUtODgxNC1kNjNjNTk1ZWI3Y2MSDKJ8Q0UjrXBUi/mXxRoMvNqTsWZJyI7fyoP+IjCSHk0oD0lB6nVmEgcW+fk3Mx5D6w+cQZ5aF9k+T3V4zW8hQ1D+eKjA==","page_age":"April 30, 2025"}]}`
	citation1    = `{"type":"web_search_result_location","cited_text":"Claude Elwood Shannon (April 30, 1916 – February 24, 2001) was an American mathematician, electrical engineer, computer scientist, cryptographer and inventor known as the \"father of information theory\". ","url":"https://en.wikipedia.org/wiki/Claude_Shannon","title":"Claude Shannon - Wikipedia","encrypted_index":"Eo8BCioIAhgBIiQyYjQ0OWJmZi1lNm..."}`
	citation2    = `{"type":"web_search_result_location","cited_text":"He was born in Petoskey, Michigan. ","url":"https://en.wikipedia.org/wiki/Claude_Shannon","title":"Claude Shannon - Wikipedia","encrypted_index":"Eo8BCioIAhgBIiQ0ZTU1NDY2Ny04NG..."}`
)

func searchStream() reply {
	return sse(msgStart(`{"input_tokens":2679,"cache_creation_input_tokens":0,"cache_read_input_tokens":0,"output_tokens":3}`),
		blockStart(0, `{"type":"text","text":""}`), blockDelta(0, textDelta("I'll search for that.")), blockStop(0),
		blockStart(1, searchUse),
		blockDelta(1, `{"type":"input_json_delta","partial_json":""}`),
		blockDelta(1, `{"type":"input_json_delta","partial_json":"{\"query\": \"claude"}`),
		blockDelta(1, `{"type":"input_json_delta","partial_json":" shannon birth date\"}"}`), blockStop(1),
		blockStart(2, searchResult), blockStop(2),
		blockStart(3, `{"type":"text","text":"","citations":[]}`),
		blockDelta(3, `{"type":"citations_delta","citation":`+citation1+`}`),
		blockDelta(3, textDelta("Claude Shannon was born on April 30, 1916")),
		blockDelta(3, `{"type":"citations_delta","citation":`+citation2+`}`),
		blockDelta(3, textDelta(", in Petoskey, Michigan.")), blockStop(3),
		blockStart(4, `{"type":"text","text":""}`), blockDelta(4, textDelta(" Anything else?")), blockStop(4),
		msgDelta("end_turn", `{"output_tokens":510,"server_tool_use":{"web_search_requests":1}}`), msgStop)
}

// searchMessage is the same answer, not streamed.
func searchMessage() reply {
	useWhole := `{"type":"server_tool_use","id":"srvtoolu_01WYG3ziw53XMcoyKL4XcZmE","name":"web_search","input":{"query": "claude shannon birth date"}}`
	return reply{body: `{"id":"msg_1","type":"message","role":"assistant","model":"claude-sonnet-4-5-20250929","content":[` +
		`{"type":"text","text":"I'll search for that."},` + useWhole + `,` + searchResult + `,` +
		`{"type":"text","text":"Claude Shannon was born on April 30, 1916, in Petoskey, Michigan.","citations":[` + citation1 + `,` + citation2 + `]},` +
		`{"type":"text","text":" Anything else?","citations":null}],` +
		`"stop_reason":"end_turn","stop_sequence":null,"usage":{"input_tokens":2679,"output_tokens":510,"server_tool_use":{"web_search_requests":1}}}`}
}

func wantSearch(use string) []artifact.Artifact {
	return []artifact.Artifact{
		artifact.Text{Content: "I'll search for that."},
		artifact.Opaque{Provider: "anthropic", Type: "server_tool_use", Data: use},
		artifact.Opaque{Provider: "anthropic", Type: "web_search_tool_result", Data: searchResult},
		artifact.Text{Content: "Claude Shannon was born on April 30, 1916, in Petoskey, Michigan."},
		artifact.Opaque{Provider: "anthropic", Type: "citations", Data: "[" + citation1 + "," + citation2 + "]"},
		artifact.Text{Content: " Anything else?"},
		artifact.Usage{InputTokens: 2679, OutputTokens: 510},
		artifact.Finish{Reason: "stop"},
	}
}

// Server tool blocks and citations come back as artifact.Opaque in the
// place the server put them, survive the file store byte for byte, and go
// back on the next request unchanged and in the same place; streamed or
// not.
func TestServerToolBlocksRoundTrip(t *testing.T) {
	for _, c := range []struct {
		name   string
		stream bool
		answer reply
		use    string
	}{
		{"streamed", true, searchStream(), `{"type":"server_tool_use","id":"srvtoolu_01WYG3ziw53XMcoyKL4XcZmE","name":"web_search","input":{"query": "claude shannon birth date"}}`},
		{"whole", false, searchMessage(), `{"type":"server_tool_use","id":"srvtoolu_01WYG3ziw53XMcoyKL4XcZmE","name":"web_search","input":{"query": "claude shannon birth date"}}`},
	} {
		t.Run(c.name, func(t *testing.T) {
			next := textAnswer("No.")
			if !c.stream {
				next = reply{body: `{"id":"msg_2","type":"message","role":"assistant","model":"claude-sonnet-4-5","content":[{"type":"text","text":"No."}],"stop_reason":"end_turn","stop_sequence":null,"usage":{"input_tokens":1,"output_tokens":1}}`}
			}
			f := newFake(t, c.answer, next)
			p := f.provider(t, WithStreaming(c.stream), WithCache(CacheOff))
			ctx := t.Context()
			dir := t.TempDir()
			store, err := file.Open(dir)
			if err != nil {
				t.Fatal(err)
			}
			th, err := store.Create(ctx, ledger.WithID("search"))
			if err != nil {
				t.Fatal(err)
			}
			if err := th.Append(ledger.RoleUser, artifact.Text{Content: "When was Claude Shannon born?"}); err != nil {
				t.Fatal(err)
			}
			deltas, whole, err := collect(p, &provider.Request{Turns: th.Turns()})
			if err != nil {
				t.Fatal(err)
			}
			if want := wantSearch(c.use); !reflect.DeepEqual(whole, want) {
				t.Fatalf("answer =\n%#v\nwant\n%#v", whole, want)
			}
			for _, d := range deltas {
				if _, ok := d.(artifact.ToolCallDelta); ok {
					t.Fatalf("a server tool streamed as a call of lode's: %#v", d)
				}
			}
			if err := th.Append(ledger.RoleAssistant, whole...); err != nil {
				t.Fatal(err)
			}
			if err := th.Append(ledger.RoleUser, artifact.Text{Content: "Where did he die?"}); err != nil {
				t.Fatal(err)
			}
			th.Close()
			store.Close()
			store2, err := file.Open(dir)
			if err != nil {
				t.Fatal(err)
			}
			back, err := store2.Load(ctx, "search")
			if err != nil {
				t.Fatal(err)
			}
			defer store2.Close()
			defer back.Close()
			turns := back.Turns()
			if got := turns[1].Artifacts; !reflect.DeepEqual(got, whole) {
				t.Fatalf("the stored answer came back as\n%#v", got)
			}
			if _, _, err := collect(p, &provider.Request{Turns: turns}); err != nil {
				t.Fatal(err)
			}
			var body map[string]json.RawMessage
			if err := json.Unmarshal([]byte(f.raw[1]), &body); err != nil {
				t.Fatal(err)
			}
			want := `[{"content":[{"text":"When was Claude Shannon born?","type":"text"}],"role":"user"},` +
				`{"content":[{"text":"I'll search for that.","type":"text"},` + compactJSON(c.use) + `,` + htmlEscaped(searchResult) + `,` +
				`{"text":"Claude Shannon was born on April 30, 1916, in Petoskey, Michigan.","type":"text","citations":[` + citation1 + `,` + citation2 + `]},` +
				`{"text":" Anything else?","type":"text"}],"role":"assistant"},` +
				`{"content":[{"text":"Where did he die?","type":"text"}],"role":"user"}]`
			if got := string(body["messages"]); got != want {
				t.Fatalf("messages =\n%s\nwant\n%s", got, want)
			}
		})
	}
}

// htmlEscaped is s as the SDK writes every string of a request: with <, >
// and & escaped, the same JSON value.
func htmlEscaped(s string) string {
	var b bytes.Buffer
	json.HTMLEscape(&b, []byte(s))
	return b.String()
}

func compactJSON(s string) string {
	var v json.RawMessage
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		panic(err)
	}
	b, _ := json.Marshal(v)
	return string(b)
}

// What a broken or unexpected server tool block becomes, exactly.
func TestServerToolBlocksHostile(t *testing.T) {
	start := msgStart(`{"input_tokens":1,"output_tokens":1}`)
	end := []string{msgDelta("end_turn", `{"output_tokens":2}`), msgStop}
	for _, c := range []struct {
		name    string
		events  []string
		want    []artifact.Artifact
		wantErr string
	}{
		{"input not JSON", append([]string{start, blockStart(0, searchUse),
			blockDelta(0, `{"type":"input_json_delta","partial_json":"{\"query\": "}`), blockStop(0)}, end...),
			nil, `anthropic: malformed response: the input of the server_tool_use block is not JSON (data: "{\"query\": ")`},
		{"no input streamed", append([]string{start, blockStart(0, `{"type":"server_tool_use","id":"s","name":"web_fetch","input":{"url":"https://example.invalid/"}}`), blockStop(0)}, end...),
			[]artifact.Artifact{artifact.Opaque{Provider: "anthropic", Type: "server_tool_use", Data: `{"type":"server_tool_use","id":"s","name":"web_fetch","input":{"url":"https://example.invalid/"}}`}}, ""},
		{"input added where none was", append([]string{start, blockStart(0, `{"type":"mcp_tool_use","id":"m","name":"n","server_name":"s"}`),
			blockDelta(0, `{"type":"input_json_delta","partial_json":"{\"a\":1}"}`), blockStop(0)}, end...),
			[]artifact.Artifact{artifact.Opaque{Provider: "anthropic", Type: "mcp_tool_use", Data: `{"type":"mcp_tool_use","id":"m","name":"n","server_name":"s","input":{"a":1}}`}}, ""},
		{"a delta this package cannot rebuild drops the block", append([]string{start, blockStart(0, `{"type":"future_block","x":1}`),
			blockDelta(0, `{"type":"future_delta","y":2}`), blockStop(0),
			blockStart(1, `{"type":"text","text":"ok"}`), blockStop(1)}, end...),
			[]artifact.Artifact{artifact.Text{Content: "ok"}}, ""},
		{"code execution result kept whole", append([]string{start,
			blockStart(0, `{"type":"bash_code_execution_tool_result","tool_use_id":"srvtoolu_2","content":{"type":"bash_code_execution_result","stdout":"4\n","stderr":"","return_code":0,"content":[]}}`), blockStop(0)}, end...),
			[]artifact.Artifact{artifact.Opaque{Provider: "anthropic", Type: "bash_code_execution_tool_result", Data: `{"type":"bash_code_execution_tool_result","tool_use_id":"srvtoolu_2","content":{"type":"bash_code_execution_result","stdout":"4\n","stderr":"","return_code":0,"content":[]}}`}}, ""},
		{"citations on an empty text are dropped with it", append([]string{start, blockStart(0, `{"type":"text","text":"","citations":[]}`),
			blockDelta(0, `{"type":"citations_delta","citation":`+citation1+`}`), blockStop(0)}, end...),
			nil, ""},
		{"citations given whole at the start", append([]string{start, blockStart(0, `{"type":"text","text":"x","citations":[`+citation2+`]}`),
			blockDelta(0, `{"type":"citations_delta","citation":`+citation1+`}`), blockStop(0)}, end...),
			[]artifact.Artifact{artifact.Text{Content: "x"}, artifact.Opaque{Provider: "anthropic", Type: "citations", Data: "[" + citation2 + "," + citation1 + "]"}}, ""},
		{"a citation sent to a thinking block", []string{start, blockStart(0, `{"type":"thinking","thinking":"","signature":""}`),
			blockDelta(0, `{"type":"citations_delta","citation":`+citation1+`}`)},
			nil, `anthropic: malformed response: event 3 sends a citations_delta to block 0, a thinking block`},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := newFake(t, sse(c.events...))
			_, whole, err := collect(f.provider(t), &provider.Request{Turns: []ledger.Turn{userTurn("x")}})
			if c.wantErr != "" {
				if err == nil || err.Error() != c.wantErr {
					t.Fatalf("err = %v, want %s", err, c.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			want := append(c.want, artifact.Usage{InputTokens: 1, OutputTokens: 2}, artifact.Finish{Reason: "stop"})
			if !reflect.DeepEqual(whole, want) {
				t.Fatalf("answer =\n%#v\nwant\n%#v", whole, want)
			}
		})
	}
}

// What goes back of kept blocks that are not this adapter's, or broken.
func TestOpaqueInRequests(t *testing.T) {
	mine := func(typ, data string) artifact.Opaque {
		return artifact.Opaque{Provider: "anthropic", Type: typ, Data: data}
	}
	for _, c := range []struct {
		name      string
		assistant []artifact.Artifact
		want      string
		wantErr   string
	}{
		{"another adapter's is left out", []artifact.Artifact{artifact.Text{Content: "a"}, artifact.Opaque{Provider: "gemini", Type: "x", Data: "not json"}},
			`[{"text":"a","type":"text"}]`, ""},
		{"citations after no text are left out", []artifact.Artifact{mine("citations", `[{"type":"char_location"}]`), artifact.Text{Content: "a"}},
			`[{"text":"a","type":"text"}]`, ""},
		{"citations after a tool call are left out", []artifact.Artifact{artifact.Text{Content: "a"}, artifact.ToolCall{ID: "t", Name: "n", Arguments: "{}"}, mine("citations", `[{"type":"char_location"}]`)},
			`[{"text":"a","type":"text"},{"id":"t","input":{},"name":"n","type":"tool_use"}]`, ""},
		{"a kept block that is not JSON", []artifact.Artifact{mine("server_tool_use", `{"type":`)},
			"", `anthropic: request: turn 1 (assistant): the kept server_tool_use block is not a JSON object`},
		{"kept citations that are not an array", []artifact.Artifact{artifact.Text{Content: "a"}, mine("citations", `{}`)},
			"", `anthropic: request: turn 1 (assistant): the kept citations are not a JSON array`},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := newFake(t, textAnswer("ok"))
			turns := []ledger.Turn{userTurn("q"), {Role: ledger.RoleAssistant, Artifacts: c.assistant}, userTurn("r"),
				{Role: ledger.RoleUser, Artifacts: []artifact.Artifact{mine("web_search_tool_result", `{}`)}}}
			_, _, err := collect(f.provider(t, WithCache(CacheOff)), &provider.Request{Turns: turns})
			if c.wantErr != "" {
				if err == nil || err.Error() != c.wantErr {
					t.Fatalf("err = %v, want %s", err, c.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var body struct{ Messages []map[string]json.RawMessage }
			json.Unmarshal([]byte(f.raw[0]), &body)
			if got := string(body.Messages[1]["content"]); got != c.want {
				t.Fatalf("assistant content = %s, want %s", got, c.want)
			}
			if len(body.Messages) != 3 {
				t.Fatalf("%d messages", len(body.Messages))
			}
		})
	}
}
