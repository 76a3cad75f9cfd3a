package output_test

import (
	"testing"

	"github.com/lodeworks/lode/artifact"
	"github.com/lodeworks/lode/ledger"
	"github.com/lodeworks/lode/loop"
	"github.com/lodeworks/lode/x/output"
	"github.com/lodeworks/lode/x/provider/script"
)

type flatPrice struct{}

func (flatPrice) Cost(model string, u artifact.Usage) (float64, bool) {
	if model != "m1" {
		return 0, false
	}
	return float64(u.InputTokens+u.OutputTokens) / 1000, true
}

type priced struct {
	Ok bool `json:"ok"`
}

// TestTypedRunIsPriced: a provider that names its model only through
// Model() still has a typed run's usage priced, as a plain run's is.
func TestTypedRunIsPriced(t *testing.T) {
	prov := script.New([]script.Step{script.Reply(artifact.Text{Content: `{"ok":true}`},
		artifact.Usage{InputTokens: 600, OutputTokens: 400})}, script.WithModel("m1"))
	st := ledger.NewThread()
	_ = st.Append(ledger.RoleUser, artifact.Text{Content: "ok?"})
	if _, err := output.Run[priced](t.Context(), loop.New(loop.WithPricer(flatPrice{})), st, prov); err != nil {
		t.Fatal(err)
	}
	var got artifact.Usage
	for _, turn := range st.Turns() {
		for _, a := range turn.Artifacts {
			if u, ok := a.(artifact.Usage); ok {
				got = u
			}
		}
	}
	if got.Model != "m1" || !got.Priced || got.CostUSD != 1 {
		t.Errorf("usage = %+v, want model m1 priced at $1", got)
	}
}
