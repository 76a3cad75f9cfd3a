package calculator

import (
	"math"
	"math/big"
	"strconv"
	"strings"
)

// Value is the result of an evaluation: exact (a rational number, held as a
// math/big.Rat) when every step of the computation was exact, otherwise a
// float64 approximation. The zero Value is the exact number 0.
type Value struct {
	r      *big.Rat // exact value when !approx; nil means 0
	f      float64  // the approximation when approx
	approx bool
}

// decimalDigits is how many significant digits an approximate decimal shows.
const decimalDigits = 20

// maxExactDecimals bounds the digits of an exact terminating decimal before
// the rendering falls back to significant digits.
const maxExactDecimals = 40

func exactValue(r *big.Rat) Value { return Value{r: r} }
func floatValue(f float64) Value  { return Value{f: f, approx: true} }

// Exact reports whether v is exact (a rational number) rather than a float
// approximation.
func (v Value) Exact() bool { return !v.approx }

// IsInt reports whether v is an exact integer.
func (v Value) IsInt() bool { return !v.approx && (v.r == nil || v.r.IsInt()) }

// Rat returns a copy of the exact value, or nil when v is approximate.
func (v Value) Rat() *big.Rat {
	if v.approx {
		return nil
	}
	if v.r == nil {
		return new(big.Rat)
	}
	return new(big.Rat).Set(v.r)
}

// Float64 returns v as the nearest float64 (±Inf when an exact value is
// beyond float64 range).
func (v Value) Float64() float64 {
	if v.approx {
		return v.f
	}
	if v.r == nil {
		return 0
	}
	f, _ := v.r.Float64()
	return f
}

// String renders v in its own form: an integer ("42"), a fraction in
// lowest terms ("1/3"), or the shortest float64 text ("1.4142135623730951").
func (v Value) String() string {
	if v.approx {
		return formatFloat(v.f)
	}
	if v.r == nil {
		return "0"
	}
	if v.r.IsInt() {
		return v.r.Num().String()
	}
	return v.r.String()
}

// Decimal renders v as a decimal number: exactly when v is an exact value
// with a short terminating expansion (1/8 is "0.125"), otherwise to 20
// significant digits (1/3 is "0.33333333333333333333").
func (v Value) Decimal() string {
	s, _ := v.decimal()
	return s
}

// decimal returns the decimal rendering and whether it is exact.
func (v Value) decimal() (string, bool) {
	if v.approx {
		return formatFloat(v.f), false
	}
	r := v.r
	if r == nil {
		return "0", true
	}
	if r.IsInt() {
		return r.Num().String(), true
	}
	if n, ok := terminatingDecimals(r.Denom()); ok && n <= maxExactDecimals {
		return r.FloatString(n), true
	}
	f := new(big.Float).SetPrec(256).SetRat(r)
	return f.Text('g', decimalDigits), false
}

// Text is what the calculator tool shows: the exact form and, for a
// fraction, its decimal ("1/2 = 0.5", "1/3 ≈ 0.33333333333333333333");
// an approximate value is marked so ("1.4142135623730951 (approximate)").
func (v Value) Text() string {
	if v.approx {
		return formatFloat(v.f) + " (approximate)"
	}
	if v.IsInt() {
		return v.String()
	}
	d, exact := v.decimal()
	if exact {
		return v.String() + " = " + d
	}
	return v.String() + " ≈ " + d
}

// terminatingDecimals reports whether 1/d has a finite decimal expansion
// (d = 2^a·5^b) and how many decimals it needs (max(a, b)).
func terminatingDecimals(d *big.Int) (int, bool) {
	a := int(d.TrailingZeroBits())
	rest := new(big.Int).Rsh(d, uint(a))
	five := big.NewInt(5)
	b := 0
	q, m := new(big.Int), new(big.Int)
	for rest.Cmp(bigOne) != 0 {
		q.QuoRem(rest, five, m)
		if m.Sign() != 0 {
			return 0, false
		}
		rest.Set(q)
		b++
	}
	return max(a, b), true
}

func formatFloat(f float64) string {
	if f == 0 {
		return "0" // also for -0: a sign on zero only confuses a reader
	}
	s := strconv.FormatFloat(f, 'g', -1, 64)
	// Large integral floats read better without an exponent up to 2^53,
	// where float64 stops holding every integer.
	if math.Abs(f) < 1<<53 && f == math.Trunc(f) && strings.ContainsRune(s, 'e') {
		s = strconv.FormatFloat(f, 'f', -1, 64)
	}
	return s
}

var bigOne = big.NewInt(1)
