package calculator_test

import (
	"strings"
	"testing"

	"github.com/lodeworks/lode/x/tool/calculator"
)

// benchExpr is a 1 KB expression mixing exact fractions, powers, functions
// and floats.
func benchExpr() string {
	var sb strings.Builder
	parts := []string{"(1/3 + 2^10 * 3.5 - sqrt(16)) / 7", "max(1, 2/3, 0.25) ^ 3", "round(22/7, 3) % 2", "-(5 - 3.25) * 1e2"}
	for i := 0; sb.Len() < 1000; i++ {
		if i > 0 {
			sb.WriteString(" + ")
		}
		sb.WriteString(parts[i%len(parts)])
	}
	return sb.String()
}

func BenchmarkEval1KB(b *testing.B) {
	expr := benchExpr()
	c := calculator.New()
	if _, err := c.Eval(expr); err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(expr)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := c.Eval(expr); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkEvalWorst times the slowest expressions found under the default
// limits, 4 KiB of divisions and roots of numbers near the bit limit: what
// one call can hold its caller's goroutine for, since the tool is Inline.
func BenchmarkEvalWorst(b *testing.B) {
	for _, tc := range []struct{ name, unit string }{
		{"divisions", "(2^8000+1)/(3^5000+1)-"},
		{"roots", "sqrt(3^5000/7^2000)+"},
	} {
		unit := tc.unit
		var sb strings.Builder
		for sb.Len()+len(unit) < calculator.DefaultMaxInput-1 {
			sb.WriteString(unit)
		}
		expr := sb.String() + "1"
		b.Run(tc.name, func(b *testing.B) {
			c := calculator.New()
			for b.Loop() {
				if _, err := c.Eval(expr); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
