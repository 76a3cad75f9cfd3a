package openai

import (
	"testing"

	"github.com/lodeworks/lode/ledger"
)

func TestPromptCacheKey(t *testing.T) {
	th := ledger.NewThread(ledger.WithID("thread-7"))
	cases := []struct {
		name string
		key  func(ledger.State) string
		st   ledger.State
		want any // nil: no member
	}{
		{"thread id", nil, th, "thread-7"},
		{"chosen", func(st ledger.State) string { return "tenant-a/" + st.ID() }, th, "tenant-a/thread-7"},
		{"empty key sends nothing", func(ledger.State) string { return "" }, th, nil},
		{"no thread sends nothing", nil, nil, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newFake(t, sse(textChunk("ok"), finishChunk("stop")))
			req := userReq("hi")
			if err := WithPromptCacheKey(tc.key).ApplyInvoke(t.Context(), tc.st, req); err != nil {
				t.Fatal(err)
			}
			if err := drain(t.Context(), f.provider(t), req); err != nil {
				t.Fatal(err)
			}
			got, ok := f.requests()[0].Body["prompt_cache_key"]
			if tc.want == nil && ok || tc.want != nil && got != tc.want {
				t.Fatalf("prompt_cache_key = %#v (present %v), want %#v", got, ok, tc.want)
			}
		})
	}
}
