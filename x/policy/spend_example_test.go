package policy_test

import (
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/lodeworks/lode/artifact"
	"github.com/lodeworks/lode/ledger"
	"github.com/lodeworks/lode/ledger/file"
	"github.com/lodeworks/lode/loop"
	"github.com/lodeworks/lode/tool"
	"github.com/lodeworks/lode/x/catalog"
	"github.com/lodeworks/lode/x/policy"
	"github.com/lodeworks/lode/x/provider/script"
)

// A tenant's daily limit, kept on counters in the thread store, so that
// every process sharing the store keeps it together.
func ExampleEnforcer_SpendLimit() {
	dir, _ := os.MkdirTemp("", "spend")
	defer os.RemoveAll(dir)
	store, _ := file.Open(dir)
	defer store.Close()

	pol, _ := policy.Parse([]byte("roles:\n  user:\n    allow: {tools: ['*']}\ntenants:\n  '*': {usd_per_day: 0.00125}\n"))
	prices := catalog.New(catalog.Model{Name: "m", Prices: &catalog.Prices{Input: 1, Output: 4}}) // $ per million tokens
	enf := policy.NewEnforcer(tool.NewRegistry(), pol, policy.WithSpend(store, prices, "m"))
	// SpendLimit is asked once every invoke option has shaped the request,
	// so it may go anywhere among them, or to loop.WithAdmitters.
	step := loop.New(loop.WithAdmitters(enf.SpendLimit()), loop.WithPricer(prices))

	for i := range 3 {
		th := ledger.NewThread(ledger.WithMetadata(map[string]string{policy.RolesKey: "user", policy.TenantKey: "acme"}))
		_ = th.Append(ledger.RoleUser, artifact.Text{Content: "hello"})
		prov := script.New([]script.Step{script.Reply(artifact.Text{Content: "hi"}, artifact.Usage{InputTokens: 200, OutputTokens: 100})}, script.WithModel("m"))
		_, err := step.Run(context.Background(), th, prov)
		var se *policy.SpendError
		if errors.As(err, &se) {
			fmt.Printf("run %d: refused, %s per %s\n", i+1, se.Scope, se.Period)
			continue
		}
		fmt.Printf("run %d: answered\n", i+1)
	}
	// Output:
	// run 1: answered
	// run 2: answered
	// run 3: refused, tenant acme per day
}
