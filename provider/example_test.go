package provider_test

import (
	"context"
	"fmt"

	"github.com/lodeworks/lode/artifact"
	"github.com/lodeworks/lode/ledger"
	"github.com/lodeworks/lode/provider"
	"github.com/lodeworks/lode/tool"
)

// An InvokeOption is resolved on every invocation with that turn's context
// and thread, so one option can shape each request differently: here the
// thread's metadata decides how much the model may write.
func ExampleInvokeOption() {
	byPlan := provider.OptionFunc(func(_ context.Context, st ledger.State, req *provider.Request) error {
		if plan, _ := st.Metadata("plan"); plan == "pro" {
			req.MaxTokens = 4000
		} else {
			req.MaxTokens = 500
		}
		return nil
	})
	opts := []provider.InvokeOption{
		provider.WithSystemPrompt("Answer briefly."),
		provider.WithTools([]tool.Tool{{Name: "search", Description: "Search the docs"}}),
		byPlan,
	}

	for _, plan := range []string{"free", "pro"} {
		th := ledger.NewThread(ledger.WithMetadata(map[string]string{"plan": plan}))
		_ = th.Append(ledger.RoleUser, artifact.Text{Content: "Hi"})

		// What a loop does before each call to the model.
		req := &provider.Request{Turns: th.Turns()}
		if err := provider.Resolve(context.Background(), th, req, opts...); err != nil {
			fmt.Println("error:", err)
			return
		}
		fmt.Printf("%s: %d turns (%s first), %d tool, max %d tokens\n",
			plan, len(req.Turns), req.Turns[0].Role, len(req.Tools), req.MaxTokens)
		// The system prompt lives in the request only, never in the thread.
		fmt.Printf("%s: thread has %d turn\n", plan, len(th.Turns()))
	}
	// Output:
	// free: 2 turns (system first), 1 tool, max 500 tokens
	// free: thread has 1 turn
	// pro: 2 turns (system first), 1 tool, max 4000 tokens
	// pro: thread has 1 turn
}
