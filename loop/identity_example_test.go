package loop_test

import (
	"context"
	"fmt"

	"github.com/lodeworks/lode/ledger"
	"github.com/lodeworks/lode/loop"
)

// A span an application starts inside a run names the run's conversation
// and caller as lode's own spans do.
func ExampleSpanAttributes() {
	thread := ledger.NewThread(ledger.WithID("th-1"),
		ledger.WithMetadata(map[string]string{"lode.user": "ann", "tenant": "acme", "role": "editor"}))
	ctx := loop.WithRunIdentity(context.Background(), thread)
	for _, kv := range loop.SpanAttributes(ctx) {
		fmt.Println(kv.Key, kv.Value.Emit())
	}
	// Output:
	// gen_ai.conversation.id th-1
	// session.id th-1
	// user.id ann
	// user.roles ["editor"]
	// lode.tenant acme
}
