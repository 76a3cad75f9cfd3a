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

func (p *parser) add(a, b Value, pos int) (Value, error) {
	if bothExact(a, b) {
		return p.exact(new(big.Rat).Add(a.rat(), b.rat()), pos)
	}
	return p.float(a.Float64()+b.Float64(), pos, "the sum")
}

func (p *parser) sub(a, b Value, pos int) (Value, error) {
	if bothExact(a, b) {
		return p.exact(new(big.Rat).Sub(a.rat(), b.rat()), pos)
	}
	return p.float(a.Float64()-b.Float64(), pos, "the difference")
}

func (p *parser) mul(a, b Value, pos int) (Value, error) {
	if bothExact(a, b) {
		return p.exact(new(big.Rat).Mul(a.rat(), b.rat()), pos)
	}
	return p.float(a.Float64()*b.Float64(), pos, "the product")
}

func (p *parser) div(a, b Value, pos int) (Value, error) {
	if b.isZero() {
		return Value{}, p.errAt(ErrDivisionByZero, pos, "division by zero")
	}
	if bothExact(a, b) {
		return p.exact(new(big.Rat).Quo(a.rat(), b.rat()), pos)
	}
	return p.float(a.Float64()/b.Float64(), pos, "the quotient")
}

// mod is the floored modulo: the result has the sign of the divisor
// (-7 % 3 = 2), as in Python and in mathematics.
func (p *parser) mod(a, b Value, pos int) (Value, error) {
	if b.isZero() {
		return Value{}, p.errAt(ErrDivisionByZero, pos, "modulo by zero")
	}
	if bothExact(a, b) {
		q := new(big.Rat).Quo(a.rat(), b.rat())
		fl := floorRat(q)
		r := new(big.Rat).Sub(a.rat(), new(big.Rat).Mul(b.rat(), fl))
		return p.exact(r, pos)
	}
	x, y := a.Float64(), b.Float64()
	r := math.Mod(x, y)
	if r != 0 && (r < 0) != (y < 0) {
		r += y
	}
	return p.float(r, pos, "the remainder")
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
	if a.isZero() && b.sign() < 0 {
		return Value{}, p.errAt(ErrDivisionByZero, pos, "0 to a negative power is a division by zero")
	}
	x, y := a.Float64(), b.Float64()
	if x < 0 && y != math.Trunc(y) {
		return Value{}, p.errAt(ErrDomain, pos, "a negative number to a fractional power is not a real number")
	}
	f := math.Pow(x, y)
	if math.IsInf(f, 0) {
		return Value{}, p.errAt(ErrRange, pos, "the power is too large: it exceeds the %d-bit limit for exact results and overflows a float64", p.lim.maxBits)
	}
	if f == 0 && x != 0 {
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
	return p.float(math.Sqrt(v.Float64()), pos, "the square root")
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
	return p.float(math.Cbrt(v.Float64()), pos, "the cube root")
}

func cmpValues(a, b Value) int {
	if bothExact(a, b) {
		return a.rat().Cmp(b.rat())
	}
	x, y := a.Float64(), b.Float64()
	switch {
	case x < y:
		return -1
	case x > y:
		return 1
	}
	return 0
}
