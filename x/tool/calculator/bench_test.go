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
