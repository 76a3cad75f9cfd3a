package calculator

import (
	"math"
	"math/big"
)

// exact keeps r exact when numerator and denominator fit the bit limit, and
// otherwise falls back to its float64 approximation, which must itself be
// finite and non-zero.
func (p *parser) exact(r *big.Rat, pos int) (Value, error) {
	if r.Num().BitLen() <= p.lim.maxBits && r.Denom().BitLen() <= p.lim.maxBits {
		return exactValue(r), nil
	}
	f, _ := r.Float64()
	if math.IsInf(f, 0) {
		return Value{}, p.errAt(ErrRange, pos, "the result is too large: its exact value needs more than %d bits and it overflows a float64", p.lim.maxBits)
	}
	if f == 0 {
		return Value{}, p.errAt(ErrRange, pos, "the result is too small: its exact value needs more than %d bits and it underflows a float64", p.lim.maxBits)
	}
	return floatValue(f), nil
}

// float accepts a float64 result only when it is a finite number.
func (p *parser) float(f float64, pos int, what string) (Value, error) {
	switch {
	case math.IsNaN(f):
		return Value{}, p.errAt(ErrDomain, pos, "%s is not a real number", what)
	case math.IsInf(f, 0):
		return Value{}, p.errAt(ErrRange, pos, "%s is too large for a float64", what)
	}
	return floatValue(f), nil
}

func (v Value) isZero() bool {
	if v.approx {
		return v.f == 0
	}
	return v.r == nil || v.r.Sign() == 0
}

func (v Value) sign() int {
	if v.approx {
		switch {
		case v.f > 0:
			return 1
		case v.f < 0:
			return -1
		}
		return 0
	}
	if v.r == nil {
		return 0
	}
	return v.r.Sign()
}

func (v Value) rat() *big.Rat {
	if v.r == nil {
		return new(big.Rat)
	}
	return v.r
}

func (v Value) neg() Value {
	if v.approx {
		return floatValue(-v.f)
	}
	return exactValue(new(big.Rat).Neg(v.rat()))
}

func bothExact(a, b Value) bool { return !a.approx && !b.approx }

// beyond reports whether v is exact but has no float64 counterpart: it is
// too large (10^400 would be +Inf) or too small (1/10^400 would be 0).
func (v Value) beyond() bool {
	if v.approx || v.isZero() {
		return false
	}
	f := v.Float64()
	return f == 0 || math.IsInf(f, 0)
}

// bigFloat returns v as a big.Float: exact values rounded to 64 bits of
// mantissa, with an exponent float64 could not hold.
func (v Value) bigFloat() *big.Float {
	if v.approx {
		return new(big.Float).SetFloat64(v.f)
	}
	return new(big.Float).SetPrec(64).SetRat(v.rat())
}

// asRat returns v as a rational: an approximation as the exact binary
// value of its float64, which is always finite.
func (v Value) asRat() *big.Rat {
	if v.approx {
		return new(big.Rat).SetFloat64(v.f)
	}
	return v.rat()
}

// mixed computes a binary operation when a or b is an approximation: in
// float64 (f), unless an exact operand is beyond float64's range; then
// exactly (r) on the float's binary value, rounding only the result, so
// that 10^400 * (pi - pi) is 0 and 10^400 % pi a remainder below pi.
func (p *parser) mixed(a, b Value, pos int, what string, f func(x, y float64) float64, r func(x, y *big.Rat) *big.Rat) (Value, error) {
	if !a.beyond() && !b.beyond() {
		return p.float(f(a.Float64(), b.Float64()), pos, what)
	}
	res, _ := r(a.asRat(), b.asRat()).Float64()
	return p.float(res, pos, what)
}

func (p *parser) add(a, b Value, pos int) (Value, error) {
	if bothExact(a, b) {
		return p.exact(new(big.Rat).Add(a.rat(), b.rat()), pos)
	}
	return p.mixed(a, b, pos, "the sum", func(x, y float64) float64 { return x + y }, new(big.Rat).Add)
}

func (p *parser) sub(a, b Value, pos int) (Value, error) {
	if bothExact(a, b) {
		return p.exact(new(big.Rat).Sub(a.rat(), b.rat()), pos)
	}
	return p.mixed(a, b, pos, "the difference", func(x, y float64) float64 { return x - y }, new(big.Rat).Sub)
}

func (p *parser) mul(a, b Value, pos int) (Value, error) {
	if bothExact(a, b) {
		return p.exact(new(big.Rat).Mul(a.rat(), b.rat()), pos)
	}
	return p.mixed(a, b, pos, "the product", func(x, y float64) float64 { return x * y }, new(big.Rat).Mul)
}

func (p *parser) div(a, b Value, pos int) (Value, error) {
	if b.isZero() {
		return Value{}, p.errAt(ErrDivisionByZero, pos, "division by zero")
	}
	if bothExact(a, b) {
		return p.exact(new(big.Rat).Quo(a.rat(), b.rat()), pos)
	}
	return p.mixed(a, b, pos, "the quotient", func(x, y float64) float64 { return x / y }, new(big.Rat).Quo)
}

// mod is the floored modulo: the result has the sign of the divisor
// (-7 % 3 = 2), as in Python and in mathematics.
func (p *parser) mod(a, b Value, pos int) (Value, error) {
	if b.isZero() {
		return Value{}, p.errAt(ErrDivisionByZero, pos, "modulo by zero")
	}
	if bothExact(a, b) {
		return p.exact(modRat(a.rat(), b.rat()), pos)
	}
	return p.mixed(a, b, pos, "the remainder", func(x, y float64) float64 {
		r := math.Mod(x, y)
		if r != 0 && (r < 0) != (y < 0) {
			r += y
		}
		return r
	}, modRat)
}

// modRat is the floored modulo of rationals; y is not zero.
func modRat(x, y *big.Rat) *big.Rat {
	fl := floorRat(new(big.Rat).Quo(x, y))
	return new(big.Rat).Sub(x, new(big.Rat).Mul(y, fl))
}

// floorRat returns the greatest integer <= r.
func floorRat(r *big.Rat) *big.Rat {
	q := new(big.Int)
	m := new(big.Int)
	q.DivMod(r.Num(), r.Denom(), m) // Euclidean; the denominator is positive, so this floors
	return new(big.Rat).SetInt(q)
}

func ceilRat(r *big.Rat) *big.Rat {
	f := floorRat(r)
	if f.Cmp(r) != 0 {
		f.Add(f, big.NewRat(1, 1))
	}
	return f
}

func truncRat(r *big.Rat) *big.Rat {
	if r.Sign() < 0 {
		return ceilRat(r)
	}
	return floorRat(r)
}

// roundRat rounds half away from zero.
func roundRat(r *big.Rat) *big.Rat {
	half := big.NewRat(1, 2)
	if r.Sign() < 0 {
		return new(big.Rat).Neg(floorRat(new(big.Rat).Add(new(big.Rat).Neg(r), half)))
	}
	return floorRat(new(big.Rat).Add(r, half))
}

// maxRootIndex bounds the q of an exponent p/q for which an exact root is
// tried; beyond it the power is computed in floating point.
const maxRootIndex = 64

// pow computes a^b. An exact base to an exact integer power stays exact
// when the result fits the bit limit, which is checked before computing:
// 2^999999999 is refused without being attempted. An exact rational power
// p/q stays exact when the q-th root is exact (4^0.5 = 2, (-8)^(1/3) = -2).
func (p *parser) pow(a, b Value, pos int) (Value, error) {
	if bothExact(a, b) {
		if v, ok, err := p.exactPow(a.rat(), b.rat(), pos); ok || err != nil {
			return v, err
		}
	}
	switch {
	case a.isZero() && b.sign() < 0:
		return Value{}, p.errAt(ErrDivisionByZero, pos, "0 to a negative power is a division by zero")
	case a.isZero() && b.sign() > 0:
		return floatValue(0), nil // even when b, like 1/10^400, is 0 as a float64
	}
	x, y := a.Float64(), b.Float64()
	fractional := y != math.Trunc(y)
	if !b.approx {
		fractional = !b.IsInt() // 1/10^400 is 0 as a float64
	}
	if a.sign() < 0 && fractional {
		return Value{}, p.errAt(ErrDomain, pos, "a negative number to a fractional power is not a real number")
	}
	var f float64
	if a.beyond() && a.sign() > 0 && !math.IsInf(y, 0) {
		// x is +Inf or 0 in float64; through the logarithm, which exact
		// values beyond float64 still have, (10^400)^0.001 is 2.5.
		f = math.Exp(y * logValue(a))
	} else {
		f = math.Pow(x, y)
	}
	if math.IsInf(f, 0) {
		return Value{}, p.errAt(ErrRange, pos, "the power is too large: it exceeds the %d-bit limit for exact results and overflows a float64", p.lim.maxBits)
	}
	if f == 0 && !a.isZero() {
		return Value{}, p.errAt(ErrRange, pos, "the power is too small: it exceeds the %d-bit limit for exact results and underflows a float64", p.lim.maxBits)
	}
	return p.float(f, pos, "the power")
}

// exactPow reports ok=false when the result is not exact or too large to
// compute exactly, leaving the float path to decide.
func (p *parser) exactPow(a, b *big.Rat, pos int) (Value, bool, error) {
	num, den := b.Num(), b.Denom()
	if !num.IsInt64() || !den.IsInt64() {
		return Value{}, false, nil
	}
	n, q := num.Int64(), den.Int64()
	switch {
	case a.Sign() == 0:
		switch {
		case n == 0:
			return exactValue(big.NewRat(1, 1)), true, nil // 0^0 = 1, by convention
		case n < 0:
			return Value{}, false, p.errAt(ErrDivisionByZero, pos, "0 to a negative power is a division by zero")
		}
		return exactValue(new(big.Rat)), true, nil
	case n == 0:
		return exactValue(big.NewRat(1, 1)), true, nil
	case a.IsInt() && a.Num().CmpAbs(bigOne) == 0 && q == 1:
		if a.Sign() < 0 && n%2 != 0 {
			return exactValue(big.NewRat(-1, 1)), true, nil
		}
		return exactValue(big.NewRat(1, 1)), true, nil
	}
	base := a
	if q != 1 {
		if q > maxRootIndex {
			return Value{}, false, nil
		}
		if a.Sign() < 0 && q%2 == 0 {
			return Value{}, false, p.errAt(ErrDomain, pos, "an even root of a negative number is not a real number")
		}
		rn, okn := iroot(new(big.Int).Abs(a.Num()), int(q))
		rd, okd := iroot(a.Denom(), int(q))
		if !okn || !okd {
			return Value{}, false, nil
		}
		if a.Sign() < 0 {
			rn.Neg(rn)
		}
		base = new(big.Rat).SetFrac(rn, rd)
	}
	abs := n
	if abs < 0 {
		abs = -abs
	}
	// A lower bound of the result's size: (bits-1)·|n| of the larger of
	// numerator and denominator. Beyond the limit, do not even try.
	bits := max(base.Num().BitLen(), base.Denom().BitLen())
	if bits > 1 && uint64(bits-1) > uint64(p.lim.maxBits)/uint64(abs) {
		return Value{}, false, nil
	}
	e := big.NewInt(abs)
	rn := new(big.Int).Exp(base.Num(), e, nil)
	rd := new(big.Int).Exp(base.Denom(), e, nil)
	if n < 0 {
		rn, rd = rd, rn
	}
	r := new(big.Rat).SetFrac(rn, rd)
	if r.Num().BitLen() > p.lim.maxBits || r.Denom().BitLen() > p.lim.maxBits {
		return Value{}, false, nil
	}
	return exactValue(r), true, nil
}

// iroot returns the floor of the k-th root of x >= 0 and whether it is
// exact, by Newton's method from above (it starts within a factor of two,
// so it converges in a few steps).
func iroot(x *big.Int, k int) (*big.Int, bool) {
	if x.Sign() == 0 || x.Cmp(bigOne) == 0 {
		return new(big.Int).Set(x), true
	}
	if k == 2 {
		r := new(big.Int).Sqrt(x)
		return r, new(big.Int).Mul(r, r).Cmp(x) == 0
	}
	kk := big.NewInt(int64(k))
	km1 := big.NewInt(int64(k - 1))
	r := new(big.Int).Lsh(bigOne, uint(x.BitLen()/k+1))
	y, t := new(big.Int), new(big.Int)
	for {
		// y = ((k-1)·r + x / r^(k-1)) / k
		t.Exp(r, km1, nil)
		t.Quo(x, t)
		y.Mul(r, km1).Add(y, t).Quo(y, kk)
		if y.Cmp(r) >= 0 {
			break
		}
		r.Set(y)
	}
	return r, t.Exp(r, kk, nil).Cmp(x) == 0
}

func (p *parser) sqrt(v Value, pos int) (Value, error) {
	if v.sign() < 0 {
		return Value{}, p.errAt(ErrDomain, pos, "the square root of a negative number is not a real number")
	}
	if !v.approx {
		r := v.rat()
		n, okn := iroot(r.Num(), 2)
		d, okd := iroot(r.Denom(), 2)
		if okn && okd {
			return exactValue(new(big.Rat).SetFrac(n, d)), nil
		}
	}
	return p.float(root(v, 2, math.Sqrt), pos, "the square root")
}

func (p *parser) cbrt(v Value, pos int) (Value, error) {
	if !v.approx {
		r := v.rat()
		n, okn := iroot(new(big.Int).Abs(r.Num()), 3)
		d, okd := iroot(r.Denom(), 3)
		if okn && okd {
			if r.Sign() < 0 {
				n.Neg(n)
			}
			return exactValue(new(big.Rat).SetFrac(n, d)), nil
		}
	}
	return p.float(root(v, 3, math.Cbrt), pos, "the cube root")
}

// root is the k-th root of v by fn (math.Sqrt or math.Cbrt). An exact v
// is split as m·2^e first, so one beyond float64's range still has a root
// where the root itself is within it: sqrt(2/10^400) is 1.4e-200, not 0.
func root(v Value, k int, fn func(float64) float64) float64 {
	if !v.beyond() {
		return fn(v.Float64())
	}
	var m big.Float
	e := v.bigFloat().MantExp(&m)
	r := ((e % k) + k) % k // e-r is a multiple of k
	mf, _ := m.Float64()
	return math.Ldexp(fn(math.Ldexp(mf, r)), (e-r)/k)
}

// cmpValues orders two values exactly, an approximation by the binary
// value of its float64: min(1/10^400, pi - pi) is the 0.
func cmpValues(a, b Value) int { return a.asRat().Cmp(b.asRat()) }
