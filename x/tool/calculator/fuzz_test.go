package calculator_test

import (
	"errors"
	"math"
	"testing"

	"github.com/lodeworks/lode/x/tool/calculator"
)

// FuzzEval checks that any input ends in a value or an *Error of a known
// kind — never a panic, a hang, an unbounded exact value or a non-finite
// float — and that wrapping an expression in parentheses changes nothing.
func FuzzEval(f *testing.F) {
	for _, s := range []string{
		"1/3 + 1/6", "2^10", "-2^-2", "2**3**2", "sqrt(16/9)", "(-8)^(1/3)", "8^(2/3)", "7 % -3",
		"round(3.14159, 2)", "min(1, 2, 3)", "gcd(12, 18)", "log(8, 2)", "ln(e)", "sin(pi)",
		"1e999999999", "2^999999999", "1/0", "((((1))))", "√2", "3 × 4 ÷ 2 − 1", "1.5e-3",
		"cbrt(2^3000)", "(9/4)^(3/2)", "0^0", "lcm(2^4000, 3^2500)", "atan2(1, 0)",
		"10^400 % pi", "sqrt(2/10^400)", "atan2(10^400, 10^401)", "(10^400)^0.001", "sin(10^400)",
		"min(1/10^400, pi - pi)", "(pi - pi)^(1/10^400)", "(-2)^(10^400)", "ln(1/10^400)",
	} {
		f.Add(s)
	}
	calc := calculator.New()
	kinds := []error{calculator.ErrSyntax, calculator.ErrUnknownName, calculator.ErrDivisionByZero,
		calculator.ErrDomain, calculator.ErrRange, calculator.ErrTooLong, calculator.ErrTooDeep}
	f.Fuzz(func(t *testing.T, expr string) {
		v, err := calc.Eval(expr)
		if err != nil {
			var ce *calculator.Error
			if !errors.As(err, &ce) || ce.Msg == "" {
				t.Fatalf("Eval(%q): error %v (%T) is not a described *Error", expr, err, err)
			}
			known := false
			for _, k := range kinds {
				known = known || errors.Is(err, k)
			}
			if !known {
				t.Fatalf("Eval(%q): error of unknown kind %v", expr, ce.Kind)
			}
			return
		}
		if r := v.Rat(); r != nil {
			if r.Num().BitLen() > calculator.DefaultMaxBits || r.Denom().BitLen() > calculator.DefaultMaxBits {
				t.Fatalf("Eval(%q): exact value beyond the bit limit", expr)
			}
		} else if f := v.Float64(); math.IsNaN(f) || math.IsInf(f, 0) {
			t.Fatalf("Eval(%q) = %v", expr, f)
		}
		_ = v.Text()
		if len(expr) < calculator.DefaultMaxInput-2 {
			w, err := calc.Eval("(" + expr + ")")
			if err != nil {
				// Only the extra nesting level may fail.
				if !errors.Is(err, calculator.ErrTooDeep) {
					t.Fatalf("(%s) failed: %v, but %s = %s", expr, err, expr, v)
				}
				return
			}
			if w.String() != v.String() {
				t.Fatalf("(%s) = %s, but %s = %s", expr, w, expr, v)
			}
		}
	})
}
