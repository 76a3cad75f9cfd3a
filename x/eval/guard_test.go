package eval_test

import (
	"strings"
	"testing"

	"github.com/lodeworks/lode/loop"
	"github.com/lodeworks/lode/x/eval"
	"github.com/lodeworks/lode/x/guard"
	"github.com/lodeworks/lode/x/provider/script"
)

// A case can expect a guard to stop the run, or none to; the trips are
// counted in the outcome.
func TestTripwireExpectations(t *testing.T) {
	secret := "sk-eval-0123456789"
	cases := []struct {
		name   string
		answer string
		expect []eval.Expectation
		want   string // the failures, joined
	}{
		{"tripped as expected", "the key is " + secret, []eval.Expectation{eval.TrippedBy("secrets")}, ""},
		{"tripped, none wanted", "the key is " + secret, []eval.Expectation{eval.NoTripwire()},
			`run failed: loop: guard "secrets" stopped the answer: the answer holds a secret lode was given (18 characters)` + "\n" +
				`guard "secrets" stopped the output: the answer holds a secret lode was given (18 characters)`},
		{"not tripped, one wanted", "nothing here", []eval.Expectation{eval.TrippedBy("secrets")}, `no guard stopped the run, want "secrets" to`},
		{"tripped by another", "the key is " + secret, []eval.Expectation{eval.TrippedBy("pii")}, `stopped by "secrets", want "pii"`},
		{"clean", "nothing here", []eval.Expectation{eval.NoTripwire()}, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := eval.RunSuite(t.Context(), &eval.Suite{Cases: []eval.Case{{Name: c.name, Prompt: "hi",
				Model: eval.Scripted("m", script.Text(c.answer)), Guards: []loop.Guard{guard.Secrets(secret)}, Expect: c.expect}}})
			if got := strings.Join(r.Cases[0].Failures, "\n"); got != c.want {
				t.Fatalf("failures:\n got %s\nwant %s", got, c.want)
			}
		})
	}
}
