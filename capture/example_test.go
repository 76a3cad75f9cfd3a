package capture_test

import (
	"context"
	"fmt"

	"github.com/lodeworks/lode/artifact"
	"github.com/lodeworks/lode/capture"
	"github.com/lodeworks/lode/ledger"
)

// A door reads the standard variable once and hands the Config on: to
// loop.WithCapture, or to the context of calls made outside a loop.
func Example() {
	cfg, err := capture.FromEnv()
	if err != nil {
		fmt.Println(err)
		return
	}
	cfg.On = true // as lode.yaml's trace.content: true would
	cfg.Secrets = append(cfg.Secrets, "sk-123456")
	ctx := capture.With(context.Background(), cfg)

	c := capture.From(ctx)
	_, msgs := capture.Input([]ledger.Turn{{Role: ledger.RoleUser,
		Artifacts: []artifact.Artifact{artifact.Text{Content: "My key is sk-123456"}}}})
	fmt.Println(c.Attr(msgs))
	// Output:
	// [{"role":"user","parts":[{"type":"text","content":"My key is [REDACTED]"}]}]
}
