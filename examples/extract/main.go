// Command extract pulls fields out of free text into a Go struct with
// x/output: the schema is reflected from the struct, the model's answer is
// validated against it, and a wrong answer goes back to the model with the
// reason until it gets it right. The model is scripted
// (x/provider/script), so it runs offline; the script offers no response
// format, so the answer comes through the final-answer tool.
package main

import (
	"context"
	"fmt"
	"log"
	"strings"

	"github.com/lodeworks/lode/artifact"
	"github.com/lodeworks/lode/ledger"
	"github.com/lodeworks/lode/loop"
	"github.com/lodeworks/lode/x/output"
	"github.com/lodeworks/lode/x/provider/script"
)

// Invoice is what the program wants out of the text.
type Invoice struct {
	Vendor   string  `json:"vendor" jsonschema:"description=Who issued the invoice"`
	Number   string  `json:"number"`
	Total    float64 `json:"total" jsonschema:"description=Amount due, as a number"`
	Currency string  `json:"currency" jsonschema:"enum=EUR,enum=USD,enum=GBP"`
	DueDate  string  `json:"due_date" jsonschema:"description=YYYY-MM-DD"`
}

const email = `Hi, please find attached invoice INV-0042 from Acme GmbH.
The amount of €1,250.00 is due by 31 December 2026. Kind regards.`

// printer shows the answer filling in, as a UI would.
type printer struct{}

func (printer) Emit(_ context.Context, ev loop.Event) {
	if p, ok := ev.(output.PartialEvent[Invoice]); ok {
		fmt.Println("  partial:", p.JSON)
	}
}

func main() {
	ctx := context.Background()

	// The scripted model first writes the total as text, which the schema
	// refuses, then corrects itself after reading why.
	model := script.New([]script.Step{
		script.Call("c1", output.DefaultToolName, `{"vendor":"Acme GmbH","number":"INV-0042","total":"1,250.00","currency":"EUR","due_date":"2026-12-31"}`),
		script.Call("c2", output.DefaultToolName, `{"vendor":"Acme GmbH","number":"INV-0042","total":1250,"currency":"EUR","due_date":"2026-12-31"}`),
	}, script.WithChunkSize(40))

	step := loop.New(loop.WithObserver(output.Partials[Invoice](printer{})))
	thread := ledger.NewThread()
	_ = thread.Append(ledger.RoleUser, artifact.Text{Content: "Extract the invoice:\n" + email})

	inv, err := output.Run[Invoice](ctx, step, thread, model,
		output.WithDescription("the invoice described in the user's email"))
	if err != nil {
		log.Fatal(err)
	}
	_ = step.Flush(ctx)

	fmt.Printf("%+v\n", inv)
	fmt.Println("the thread:")
	for _, t := range thread.Turns() {
		text := t.Artifacts[0].(artifact.Text).Content
		first, _, _ := strings.Cut(text, "\n")
		fmt.Printf("  %s: %s\n", t.Role, first)
	}
}
