package openai

import (
	"errors"
	"net/http"
	"net/url"
	"reflect"
	"testing"

	"github.com/lodeworks/lode/provider"
)

// redirect sends every request to f, whatever host the provider aims at.
func (f *fakeServer) redirect() *http.Client {
	target, _ := url.Parse(f.srv.URL)
	return &http.Client{Transport: roundTripFunc(func(r *http.Request) (*http.Response, error) {
		r = r.Clone(r.Context())
		r.URL.Scheme, r.URL.Host = target.Scheme, target.Host
		return f.srv.Client().Transport.RoundTrip(r)
	})}
}

func TestPerServerFields(t *testing.T) {
	cases := []struct {
		name string
		base string
		opts []Option
		want map[string]any // members that must be present (nil: absent)
	}{
		{"OpenAI: max_completion_tokens", "https://api.openai.com/v1", nil,
			map[string]any{"max_completion_tokens": 64.0, "max_tokens": nil, "reasoning_effort": "high", "reasoning": nil}},
		{"Azure: max_completion_tokens", "https://res.openai.azure.com/openai/v1", nil,
			map[string]any{"max_completion_tokens": 64.0, "max_tokens": nil}},
		{"any other server: max_tokens", "http://127.0.0.1:8000/v1", nil,
			map[string]any{"max_tokens": 64.0, "max_completion_tokens": nil, "reasoning_effort": "high"}},
		{"OpenRouter: effort as an object", "https://openrouter.ai/api/v1", nil,
			map[string]any{"max_tokens": 64.0, "reasoning": map[string]any{"effort": "high"}, "reasoning_effort": nil}},
		{"chosen field", "http://127.0.0.1:8000/v1", []Option{WithMaxTokensField(MaxCompletionTokens), WithReasoningEffortField(EffortObject)},
			map[string]any{"max_completion_tokens": 64.0, "max_tokens": nil, "reasoning": map[string]any{"effort": "high"}, "reasoning_effort": nil}},
		{"chosen against the host", "https://api.openai.com/v1", []Option{WithMaxTokensField(MaxTokens)},
			map[string]any{"max_tokens": 64.0, "max_completion_tokens": nil}},
		{"body fields join and replace", "http://127.0.0.1:8000/v1", []Option{
			WithExtraBodyField("provider", map[string]any{"order": []string{"groq"}}),
			WithExtraBodyField("max_tokens", 99),
			WithExtraBodyField("top_k", 5),
		}, map[string]any{"provider": map[string]any{"order": []any{"groq"}}, "max_tokens": 99.0, "top_k": 20.0, "usage": map[string]any{"include": true}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newFake(t, sse(textChunk("ok"), finishChunk("stop")))
			opts := append([]Option{WithBaseURL(tc.base), WithHTTPClient(f.redirect())}, tc.opts...)
			req := userReq("hi")
			req.MaxTokens = 64
			for _, o := range []provider.InvokeOption{
				WithReasoningEffort("high"),
				WithBodyField("usage", map[string]any{"include": true}),
				WithBodyField("top_k", 20), // wins over the provider's 5
			} {
				if err := o.ApplyInvoke(t.Context(), nil, req); err != nil {
					t.Fatal(err)
				}
			}
			if err := drain(t.Context(), f.provider(t, opts...), req); err != nil {
				t.Fatal(err)
			}
			got := f.requests()[0]
			for k, v := range tc.want {
				if g, ok := got.Body[k]; v == nil && ok || v != nil && !reflect.DeepEqual(g, v) {
					t.Errorf("%s = %#v, want %#v\nbody: %s", k, g, v, got.Raw)
				}
			}
			if got.Body["model"] != "gpt-test" || got.Body["usage"] == nil {
				t.Errorf("body: %s", got.Raw)
			}
		})
	}
}

func TestBadFieldOptions(t *testing.T) {
	cases := []struct {
		name string
		opts []Option
		want string
	}{
		{"unknown max tokens field", []Option{WithMaxTokensField("max_output_tokens")},
			`openai: invalid option: WithMaxTokensField("max_output_tokens"): use MaxTokens or MaxCompletionTokens`},
		{"unknown effort field", []Option{WithReasoningEffortField("effort")},
			`openai: invalid option: WithReasoningEffortField("effort"): use EffortString or EffortObject`},
		{"reserved body field", []Option{WithExtraBodyField("messages", nil)},
			`openai: invalid option: WithExtraBodyField: body field "messages" belongs to the adapter and cannot be set`},
		{"unnamed body field", []Option{WithExtraBodyField("", 1)},
			`openai: invalid option: WithExtraBodyField: a body field needs a name`},
		{"unencodable body field", []Option{WithExtraBodyField("x", make(chan int))},
			`openai: invalid option: WithExtraBodyField: body field "x": json: unsupported type: chan int`},
		{"all at once", []Option{WithMaxTokensField("x"), WithExtraBodyField("stream", false)},
			"openai: invalid option: WithMaxTokensField(\"x\"): use MaxTokens or MaxCompletionTokens\n" +
				`openai: invalid option: WithExtraBodyField: body field "stream" belongs to the adapter and cannot be set`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := New(append([]Option{WithModel("m"), WithBaseURL("http://127.0.0.1:1/v1")}, tc.opts...)...)
			if !errors.Is(err, ErrOption) || err.Error() != tc.want {
				t.Fatalf("err =\n%v\nwant\n%s", err, tc.want)
			}
		})
	}
}

func TestBadBodyField(t *testing.T) {
	for _, tc := range []struct {
		name  string
		field string
		value any
		want  string
	}{
		{"reserved", "model", "other", `openai: request: WithBodyField: body field "model" belongs to the adapter and cannot be set`},
		{"unencodable", "x", func() {}, `openai: request: WithBodyField: body field "x": json: unsupported type: func()`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFake(t)
			req := userReq("hi")
			if err := WithBodyField(tc.field, tc.value).ApplyInvoke(t.Context(), nil, req); err != nil {
				t.Fatal(err)
			}
			err := drain(t.Context(), f.provider(t), req)
			var re *RequestError
			if !errors.As(err, &re) || err.Error() != tc.want {
				t.Fatalf("err = %v, want %s", err, tc.want)
			}
			if n := len(f.requests()); n != 0 {
				t.Errorf("%d requests sent", n)
			}
		})
	}
}
