package calculator

import (
	"fmt"
	"math"
	"math/big"
	"slices"
	"strings"
)

// functionNames is sorted, for binary search.
var functionNames = [...]string{
	"abs", "acos", "asin", "atan", "atan2", "cbrt", "ceil", "cos", "cosh", "exp", "floor",
	"gcd", "lcm", "ln", "log", "log10", "log2", "max", "min", "round", "sin", "sinh",
	"sqrt", "tan", "tanh", "trunc",
}

// Functions lists the function names the calculator knows, for help texts.
func Functions() []string { return slices.Clone(functionNames[:]) }

func isFunction(name string) bool {
	_, ok := slices.BinarySearch(functionNames[:], name)
	return ok
}

// Constants lists the constant names the calculator knows.
func Constants() []string { return []string{"e", "pi", "tau"} }

func (p *parser) constant(t token) (Value, error) {
	switch t.text {
	case "pi":
		return floatValue(math.Pi), nil
	case "tau":
		return floatValue(2 * math.Pi), nil
	case "e":
		return floatValue(math.E), nil
	}
	if isFunction(t.text) {
		return Value{}, p.errAt(ErrSyntax, t.pos, "%s is a function: call it as %s(x)", t.text, t.text)
	}
	return Value{}, p.unknown(t)
}

func (p *parser) unknown(t token) error {
	return p.errAt(ErrUnknownName, t.pos, "unknown name %q; the functions are %s and the constants %s",
		t.text, strings.Join(functionNames[:], ", "), strings.Join(Constants(), ", "))
}

func (p *parser) arity(t token, args []Value, lo, hi int) error {
	n := len(args)
	if n >= lo && (hi < 0 || n <= hi) {
		return nil
	}
	var want string
	switch {
	case hi < 0:
		want = fmt.Sprintf("at least %d argument", lo)
	case lo == hi && lo == 1:
		want = "1 argument"
	case lo == hi:
		want = fmt.Sprintf("%d arguments", lo)
	default:
		want = fmt.Sprintf("%d or %d arguments", lo, hi)
	}
	return p.errAt(ErrSyntax, t.pos, "%s takes %s, got %d", t.text, want, n)
}

// apply calls the function named by t.
func (p *parser) apply(t token, args []Value) (Value, error) {
	name := t.text
	switch name {
	case "min", "max", "gcd", "lcm":
		if err := p.arity(t, args, 1, -1); err != nil {
			return Value{}, err
		}
	case "round", "log":
		if err := p.arity(t, args, 1, 2); err != nil {
			return Value{}, err
		}
	case "atan2":
		if err := p.arity(t, args, 2, 2); err != nil {
			return Value{}, err
		}
	case "pi", "tau", "e":
		return Value{}, p.errAt(ErrSyntax, t.pos, "%s is a constant, not a function: write %s without parentheses", name, name)
	default:
		if !isFunction(name) {
			return Value{}, p.unknown(t)
		}
		if err := p.arity(t, args, 1, 1); err != nil {
			return Value{}, err
		}
	}
	x := args[0]
	switch name {
	case "sqrt":
		return p.sqrt(x, t.pos)
	case "cbrt":
		return p.cbrt(x, t.pos)
	case "abs":
		if x.sign() < 0 {
			return x.neg(), nil
		}
		return x, nil
	case "floor", "ceil", "trunc":
		return p.integral(name, x, t.pos)
	case "round":
		return p.round(t, args)
	case "min", "max":
		best := x
		for _, v := range args[1:] {
			c := cmpValues(v, best)
			if name == "min" && c < 0 || name == "max" && c > 0 {
				best = v
			}
		}
		return best, nil
	case "gcd", "lcm":
		return p.gcdLcm(t, args)
	case "ln":
		return p.log(t, x, nil)
	case "log":
		if len(args) == 2 {
			return p.log(t, x, &args[1])
		}
		return p.log(t, x, nil)
	case "log10":
		b := exactValue(big.NewRat(10, 1))
		return p.log(t, x, &b)
	case "log2":
		b := exactValue(big.NewRat(2, 1))
		return p.log(t, x, &b)
	case "exp":
		if x.isZero() {
			return exactValue(big.NewRat(1, 1)), nil
		}
		return p.float(math.Exp(x.Float64()), t.pos, "exp("+brief(x)+")")
	case "asin", "acos":
		if f := x.Float64(); f < -1 || f > 1 {
			return Value{}, p.errAt(ErrDomain, t.pos, "%s is defined for -1 <= x <= 1, got %s", name, brief(x))
		}
		if name == "asin" {
			return p.float(math.Asin(x.Float64()), t.pos, name)
		}
		return p.float(math.Acos(x.Float64()), t.pos, name)
	case "atan2":
		y, x := scaled(x, args[1])
		return p.float(math.Atan2(y, x), t.pos, name)
	}
	// The remaining functions are float functions of one argument; at 0
	// each of them is exactly 0 (sin, tan, atan, sinh, tanh) or 1 (cos, cosh).
	if x.isZero() {
		if name == "cos" || name == "cosh" {
			return exactValue(big.NewRat(1, 1)), nil
		}
		return exactValue(new(big.Rat)), nil
	}
	f := x.Float64()
	if math.IsInf(f, 0) && (name == "sin" || name == "cos" || name == "tan") {
		return Value{}, p.errAt(ErrRange, t.pos, "%s(%s) cannot be computed: its argument is beyond the range of float64", name, brief(x))
	}
	var r float64
	switch name {
	case "sin":
		r = math.Sin(f)
	case "cos":
		r = math.Cos(f)
	case "tan":
		r = math.Tan(f)
	case "atan":
		r = math.Atan(f)
	case "sinh":
		r = math.Sinh(f)
	case "cosh":
		r = math.Cosh(f)
	case "tanh":
		r = math.Tanh(f)
	}
	return p.float(r, t.pos, name+"("+brief(x)+")")
}

// brief is v as a message shows it: whole when short, otherwise its first
// digits and its length, so an error about a 2,000-digit number stays one
// line long.
func brief(v Value) string {
	s := v.String()
	if len(s) <= 40 {
		return s
	}
	return fmt.Sprintf("%s… (%d characters)", s[:20], len(s))
}

// scaled returns a and b as float64s multiplied by one power of two that
// brings the larger near 1, which keeps their ratio when an exact one is
// beyond float64's range: atan2(10^400, 10^401) is atan(1/10), not pi/4.
func scaled(a, b Value) (float64, float64) {
	fa, fb := a.bigFloat(), b.bigFloat()
	e := max(fa.MantExp(nil), fb.MantExp(nil))
	sa, _ := fa.SetMantExp(fa, -e).Float64()
	sb, _ := fb.SetMantExp(fb, -e).Float64()
	return sa, sb
}

func (p *parser) integral(name string, x Value, pos int) (Value, error) {
	if !x.approx {
		switch name {
		case "floor":
			return exactValue(floorRat(x.rat())), nil
		case "ceil":
			return exactValue(ceilRat(x.rat())), nil
		}
		return exactValue(truncRat(x.rat())), nil
	}
	switch name {
	case "floor":
		return floatValue(math.Floor(x.f)), nil
	case "ceil":
		return floatValue(math.Ceil(x.f)), nil
	}
	return floatValue(math.Trunc(x.f)), nil
}

// maxRoundDigits bounds the digits argument of round.
const maxRoundDigits = 100

// round(x) rounds half away from zero to an integer; round(x, n) to n
// decimal places (n may be negative: round(1234, -2) = 1200).
func (p *parser) round(t token, args []Value) (Value, error) {
	x := args[0]
	digits := int64(0)
	if len(args) == 2 {
		d := args[1]
		if !d.IsInt() || !d.rat().Num().IsInt64() || abs64(d.rat().Num().Int64()) > maxRoundDigits {
			return Value{}, p.errAt(ErrDomain, t.pos, "the digits of round must be an integer between -%d and %d, got %s", maxRoundDigits, maxRoundDigits, brief(d))
		}
		digits = d.rat().Num().Int64()
	}
	var r *big.Rat
	if x.approx {
		r = new(big.Rat)
		r.SetFloat64(x.f)
	} else {
		r = x.rat()
	}
	scale := new(big.Rat).SetInt(new(big.Int).Exp(big.NewInt(10), big.NewInt(abs64(digits)), nil))
	if digits < 0 {
		scale.Inv(scale)
	}
	res := roundRat(new(big.Rat).Mul(r, scale))
	res.Quo(res, scale)
	if x.approx {
		f, _ := res.Float64()
		return floatValue(f), nil
	}
	return p.exact(res, t.pos)
}

func abs64(n int64) int64 {
	if n < 0 {
		return -n
	}
	return n
}

func (p *parser) gcdLcm(t token, args []Value) (Value, error) {
	acc := new(big.Int)
	for i, v := range args {
		if !v.IsInt() {
			return Value{}, p.errAt(ErrDomain, t.pos, "%s takes integers, got %s", t.text, brief(v))
		}
		n := new(big.Int).Abs(v.rat().Num())
		if i == 0 {
			acc.Set(n)
			continue
		}
		if t.text == "gcd" {
			acc.GCD(nil, nil, acc, n)
			continue
		}
		if acc.Sign() == 0 || n.Sign() == 0 {
			acc.SetInt64(0)
			continue
		}
		g := new(big.Int).GCD(nil, nil, acc, n)
		acc.Mul(acc, new(big.Int).Quo(n, g))
		if acc.BitLen() > p.lim.maxBits {
			return Value{}, p.errAt(ErrRange, t.pos, "the lcm needs more than %d bits", p.lim.maxBits)
		}
	}
	return exactValue(new(big.Rat).SetInt(acc)), nil
}

// log is the logarithm of x to base (natural when base is nil). An exact
// x that is an exact integer power of an exact base gives an exact result:
// log10(1000) = 3, log2(1/8) = -3.
func (p *parser) log(t token, x Value, base *Value) (Value, error) {
	if x.sign() <= 0 {
		return Value{}, p.errAt(ErrDomain, t.pos, "the logarithm of %s is undefined: %s needs a positive number", brief(x), t.text)
	}
	if base == nil {
		if !x.approx && x.rat().Cmp(big.NewRat(1, 1)) == 0 {
			return exactValue(new(big.Rat)), nil
		}
		return p.float(logValue(x), t.pos, t.text)
	}
	b := *base
	if b.sign() <= 0 || !b.approx && b.rat().Cmp(big.NewRat(1, 1)) == 0 || b.approx && b.f == 1 {
		return Value{}, p.errAt(ErrDomain, t.pos, "the base of a logarithm must be positive and not 1, got %s", brief(b))
	}
	lx, lb := logValue(x), logValue(b)
	res := lx / lb
	if bothExact(x, b) && !math.IsInf(res, 0) && !math.IsNaN(res) && math.Abs(res) < float64(p.lim.maxBits) {
		k := math.Round(res)
		// Check b^k == x exactly; |k| is small because x fits the bit limit.
		if v, ok, err := p.exactPow(b.rat(), new(big.Rat).SetInt64(int64(k)), t.pos); err == nil && ok && v.rat().Cmp(x.rat()) == 0 {
			return exactValue(new(big.Rat).SetInt64(int64(k))), nil
		}
	}
	return p.float(res, t.pos, t.text)
}

// logValue is the natural logarithm of a positive value, computed from its
// numerator and denominator separately so exact values beyond float64 range
// still have a logarithm.
func logValue(v Value) float64 {
	if v.approx {
		return math.Log(v.f)
	}
	r := v.rat()
	return logInt(r.Num()) - logInt(r.Denom())
}

func logInt(n *big.Int) float64 {
	bits := n.BitLen()
	if bits <= 1000 {
		f, _ := new(big.Float).SetInt(n).Float64()
		return math.Log(f)
	}
	shift := uint(bits - 64)
	f, _ := new(big.Float).SetInt(new(big.Int).Rsh(n, shift)).Float64()
	return math.Log(f) + float64(shift)*math.Ln2
}
