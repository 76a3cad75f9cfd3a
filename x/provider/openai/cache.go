package openai

import (
	"context"

	"github.com/lodeworks/lode/ledger"
	"github.com/lodeworks/lode/provider"
)

// WithPromptCacheKey sends "prompt_cache_key", which OpenAI and the
// compatible servers that take it use to send requests sharing a prefix
// to the same prompt cache: key(st) on each invocation, or the thread's ID
// when key is nil, so that a thread's turns find the cache its earlier
// turns filled. An empty key sends nothing. It is an option, not a
// default, because some servers refuse members they do not know; a
// thread ID that says who the user is should be hashed by key.
func WithPromptCacheKey(key func(st ledger.State) string) provider.InvokeOption {
	return provider.OptionFunc(func(ctx context.Context, st ledger.State, r *provider.Request) error {
		k := ""
		switch {
		case key != nil:
			k = key(st)
		case st != nil:
			k = st.ID()
		}
		if k == "" {
			return nil
		}
		return WithBodyField("prompt_cache_key", k).ApplyInvoke(ctx, st, r)
	})
}
