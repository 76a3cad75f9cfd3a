package openai

import (
	"encoding/json"
	"errors"
	"reflect"
	"testing"

	"github.com/lodeworks/lode/artifact"
	"github.com/lodeworks/lode/ledger"
	"github.com/lodeworks/lode/provider"

	"github.com/lodeworks/lode/x/provider/internal/providertest"
)

const strictSchema = `{"type":"object","properties":{"category":{"type":"string","enum":["bug","other"]}},"required":["category"],"additionalProperties":false}`

func TestResponseFormat(t *testing.T) {
	loose := `{"type":"object","properties":{"name":{"type":"string","minLength":1}}}`
	cases := []struct {
		name   string
		opts   []Option
		format *provider.ResponseFormat
		want   string // the body's response_format; "" means absent
	}{
		{"none", nil, nil, ""},
		{"json_object", nil, &provider.ResponseFormat{Type: provider.ResponseFormatJSONObject},
			`{"type":"json_object"}`},
		{"json_schema, strict", nil,
			&provider.ResponseFormat{Type: provider.ResponseFormatJSONSchema, Name: "ticket", Description: "A support ticket.", Schema: json.RawMessage(" " + strictSchema + "\n")},
			`{"type":"json_schema","json_schema":{"name":"ticket","description":"A support ticket.","schema":` + strictSchema + `,"strict":true}}`},
		{"json_schema that strict mode refuses", nil,
			&provider.ResponseFormat{Type: provider.ResponseFormatJSONSchema, Name: "person", Schema: json.RawMessage(loose)},
			`{"type":"json_schema","json_schema":{"name":"person","schema":` + loose + `,"strict":false}}`},
		{"json_schema without a name", nil,
			&provider.ResponseFormat{Type: provider.ResponseFormatJSONSchema, Schema: json.RawMessage(strictSchema)},
			`{"type":"json_schema","json_schema":{"name":"answer","schema":` + strictSchema + `,"strict":true}}`},
		{"json_schema with strict tools off", []Option{WithStrictTools(false)},
			&provider.ResponseFormat{Type: provider.ResponseFormatJSONSchema, Name: "ticket", Schema: json.RawMessage(strictSchema)},
			`{"type":"json_schema","json_schema":{"name":"ticket","schema":` + strictSchema + `,"strict":false}}`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newFake(t, sse(roleChunk(), textChunk(`{"category":"bug"}`), finishChunk("stop")))
			p := f.provider(t, tc.opts...)
			req := &provider.Request{
				Turns:          []ledger.Turn{{Role: ledger.RoleUser, Artifacts: []artifact.Artifact{artifact.Text{Content: "It crashes."}}}},
				ResponseFormat: tc.format,
			}
			_, arts, err := providertest.CollectContext(t.Context(), p, req)
			if err != nil {
				t.Fatal(err)
			}
			if arts[0] != (artifact.Text{Content: `{"category":"bug"}`}) {
				t.Fatalf("answer %#v", arts)
			}
			body := f.requests()[0].Body
			got, ok := body["response_format"]
			if tc.want == "" {
				if ok {
					t.Fatalf("response_format %v sent", got)
				}
				return
			}
			if !reflect.DeepEqual(got, toJSON(t, tc.want)) {
				t.Fatalf("response_format\n%s\nwant\n%s", mustJSON(got), tc.want)
			}
		})
	}
}

func TestResponseFormatErrors(t *testing.T) {
	hi := []ledger.Turn{{Role: ledger.RoleUser, Artifacts: []artifact.Artifact{artifact.Text{Content: "hi"}}}}
	cases := []struct {
		name   string
		format provider.ResponseFormat
		want   string
	}{
		{"no schema", provider.ResponseFormat{Type: provider.ResponseFormatJSONSchema, Schema: json.RawMessage("  ")},
			`openai: request: response format "json_schema" has no schema`},
		{"schema not JSON", provider.ResponseFormat{Type: provider.ResponseFormatJSONSchema, Schema: json.RawMessage(`{"type":`)},
			"openai: request: response format schema is not valid JSON"},
		{"schema not an object", provider.ResponseFormat{Type: provider.ResponseFormatJSONSchema, Schema: json.RawMessage(`[]`)},
			"openai: request: response format schema is not a JSON object"},
		{"unknown type", provider.ResponseFormat{Type: "xml"},
			`openai: request: unknown response format type "xml"; use "json_schema" or "json_object"`},
		{"no type", provider.ResponseFormat{},
			`openai: request: unknown response format type ""; use "json_schema" or "json_object"`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newFake(t)
			err := drain(t.Context(), f.provider(t), &provider.Request{Turns: hi, ResponseFormat: &tc.format})
			var re *RequestError
			if !errors.As(err, &re) || err.Error() != tc.want {
				t.Fatalf("err =\n%v\nwant\n%s", err, tc.want)
			}
			if n := len(f.requests()); n != 0 {
				t.Errorf("%d requests sent", n)
			}
		})
	}
}

func TestSupportsResponseFormat(t *testing.T) {
	cases := []struct {
		name       string
		opts       []Option
		schema, js bool
	}{
		{"OpenAI", []Option{WithBaseURL("https://api.openai.com/v1")}, true, true},
		{"Azure OpenAI", []Option{WithBaseURL("https://x.openai.azure.com/openai/v1")}, true, true},
		{"another server", []Option{WithBaseURL("http://127.0.0.1:11434/v1")}, false, true},
		{"another server, told", []Option{WithBaseURL("http://127.0.0.1:11434/v1"), WithJSONSchemaFormat(true)}, true, true},
		{"OpenAI, told not to", []Option{WithBaseURL("https://api.openai.com/v1"), WithJSONSchemaFormat(false)}, false, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p, err := New(append([]Option{WithAPIKey("k"), WithModel("m")}, tc.opts...)...)
			if err != nil {
				t.Fatal(err)
			}
			if got := p.SupportsResponseFormat(provider.ResponseFormatJSONSchema); got != tc.schema {
				t.Errorf("json_schema: %v, want %v", got, tc.schema)
			}
			if got := p.SupportsResponseFormat(provider.ResponseFormatJSONObject); got != tc.js {
				t.Errorf("json_object: %v, want %v", got, tc.js)
			}
			if p.SupportsResponseFormat("xml") {
				t.Error("xml supported")
			}
		})
	}
}
