package calculator_test

import (
	"context"
	"errors"
	"math"
	"math/big"
	"strings"
	"testing"

	"github.com/lodeworks/lode/tool"
	"github.com/lodeworks/lode/x/tool/calculator"
)

func TestEvalResults(t *testing.T) {
	tests := []struct {
		expr  string
		text  string // Value.Text()
		exact bool
	}{
		{"1/3 + 1/6", "1/2 = 0.5", true},
		{"1 + 2 * 3", "7", true},
		{"(1 + 2) * 3", "9", true},
		{"10 - 4 - 3", "3", true},
		{"2 * 3 / 4", "3/2 = 1.5", true},
		{"1/3", "1/3 ≈ 0.33333333333333333333", true},
		{"22/7", "22/7 ≈ 3.1428571428571428571", true},
		{"1/8", "1/8 = 0.125", true},
		{"0.1 + 0.2", "3/10 = 0.3", true},
		{".5 + 1.", "3/2 = 1.5", true},
		{"1.5e3", "1500", true},
		{"25E-2", "1/4 = 0.25", true},
		{"0e99999999999999999999999", "0", true},
		{"3 × 4 ÷ 2 − 1", "5", true},
		{"2 · 3 ⋅ 4", "24", true},
		{"5 – 2", "3", true},
		{"2^10", "1024", true},
		{"2**10", "1024", true},
		{"2^-2", "1/4 = 0.25", true},
		{"2^2^3", "256", true},
		{"-2^2", "-4", true},
		{"(-2)^2", "4", true},
		{"--2", "2", true},
		{"+3", "3", true},
		{"(2/3)^-2", "9/4 = 2.25", true},
		{"0^0", "1", true},
		{"(-1)^999999999999", "-1", true},
		{"1^999999999999999", "1", true},
		{"4^0.5", "2", true},
		{"8^(2/3)", "4", true},
		{"(-8)^(1/3)", "-2", true},
		{"(9/4)^(3/2)", "27/8 = 3.375", true},
		{"10 % 3", "1", true},
		{"-7 % 3", "2", true},
		{"7 % -3", "-2", true},
		{"7.5 % 2", "3/2 = 1.5", true},
		{"10^400 / 10^399", "10", true},
		{"sqrt(16/9)", "4/3 ≈ 1.3333333333333333333", true},
		{"√16", "4", true},
		{"cbrt(-27/8)", "-3/2 = -1.5", true},
		{"abs(-1/2)", "1/2 = 0.5", true},
		{"floor(-1/2)", "-1", true},
		{"ceil(1/2)", "1", true},
		{"trunc(-7/2)", "-3", true},
		{"round(2.5)", "3", true},
		{"round(-2.5)", "-3", true},
		{"round(3.14159, 2)", "157/50 = 3.14", true},
		{"round(1234, -2)", "1200", true},
		{"min(3, 1/2, 2)", "1/2 = 0.5", true},
		{"max(3, 1/2, 2)", "3", true},
		{"gcd(12, 18, 27)", "3", true},
		{"lcm(4, 6)", "12", true},
		{"log10(1000)", "3", true},
		{"log2(1/8)", "-3", true},
		{"log(81, 3)", "4", true},
		{"ln(1)", "0", true},
		{"exp(0)", "1", true},
		{"cos(0)", "1", true},
		{"sin(0)", "0", true},
		{"SQRT(4)", "2", true},
		{"sqrt(2)", "1.4142135623730951 (approximate)", false},
		{"2^0.5", "1.4142135623730951 (approximate)", false},
		{"pi", "3.141592653589793 (approximate)", false},
		{"π * 2", "6.283185307179586 (approximate)", false},
		{"tau", "6.283185307179586 (approximate)", false},
		{"e", "2.718281828459045 (approximate)", false},
		{"ln(e)", "1 (approximate)", false},
		{"log(100)", "4.605170185988092 (approximate)", false},
		{"atan2(1, 1) * 4", "3.141592653589793 (approximate)", false},
		{"floor(pi)", "3 (approximate)", false},
		{"1.0001^100000", "22015.456048481854 (approximate)", false},
		{"sqrt(2) % 1", "0.41421356237309515 (approximate)", false},
		{"-sqrt(2) % 1", "0.5857864376269049 (approximate)", false},
	}
	for _, tc := range tests {
		t.Run(tc.expr, func(t *testing.T) {
			v, err := calculator.Eval(tc.expr)
			if err != nil {
				t.Fatalf("Eval(%q): %v", tc.expr, err)
			}
			if got := v.Text(); got != tc.text {
				t.Errorf("Eval(%q).Text() = %q, want %q", tc.expr, got, tc.text)
			}
			if v.Exact() != tc.exact {
				t.Errorf("Eval(%q).Exact() = %v, want %v", tc.expr, v.Exact(), tc.exact)
			}
		})
	}
}

func TestEvalErrors(t *testing.T) {
	tests := []struct {
		expr   string
		kind   error
		column int
		msg    string
	}{
		{"1/0", calculator.ErrDivisionByZero, 2, "division by zero"},
		{"1 / (2 - 2)", calculator.ErrDivisionByZero, 3, "division by zero"},
		{"1 / (sqrt(2) - sqrt(2))", calculator.ErrDivisionByZero, 3, "division by zero"},
		{"5 % 0", calculator.ErrDivisionByZero, 3, "modulo by zero"},
		{"0^-1", calculator.ErrDivisionByZero, 2, "0 to a negative power is a division by zero"},
		{"2^999999999", calculator.ErrRange, 2, "the power is too large: it exceeds the 8192-bit limit for exact results and overflows a float64"},
		{"2^8192", calculator.ErrRange, 2, "the power is too large"},
		{"9^9^9", calculator.ErrRange, 2, "the power is too large"},
		{"0.5^999999999", calculator.ErrRange, 4, "the power is too small"},
		{"1e999999999", calculator.ErrRange, 1, "the number 1e999999999 is too large: it exceeds the 8192-bit limit for exact values and float64 range"},
		{"1e-999999999", calculator.ErrRange, 1, "the number 1e-999999999 is too small"},
		{"1e99999999999999999999", calculator.ErrRange, 1, "the exponent of \"1e99999999999999999999\" is too large"},
		{"2^8000 * 2^8000", calculator.ErrRange, 8, "the result is too large: its exact value needs more than 8192 bits and it overflows a float64"},
		{"exp(1000)", calculator.ErrRange, 1, "exp(1000) is too large for a float64"},
		{"sqrt(-1)", calculator.ErrDomain, 1, "the square root of a negative number is not a real number"},
		{"(-8)^(1/2)", calculator.ErrDomain, 5, "an even root of a negative number is not a real number"},
		{"(-2)^sqrt(2)", calculator.ErrDomain, 5, "a negative number to a fractional power is not a real number"},
		{"ln(0)", calculator.ErrDomain, 1, "the logarithm of 0 is undefined: ln needs a positive number"},
		{"log(8, 1)", calculator.ErrDomain, 1, "the base of a logarithm must be positive and not 1, got 1"},
		{"asin(2)", calculator.ErrDomain, 1, "asin is defined for -1 <= x <= 1, got 2"},
		{"gcd(1/2, 3)", calculator.ErrDomain, 1, "gcd takes integers, got 1/2"},
		{"round(1, 1/2)", calculator.ErrDomain, 1, "the digits of round must be an integer between -100 and 100, got 1/2"},
		{"", calculator.ErrSyntax, 0, "the expression is empty"},
		{" \t\n", calculator.ErrSyntax, 0, "the expression is empty"},
		{"1 +", calculator.ErrSyntax, 4, "the expression ends too soon: expected a number, a name or '('"},
		{"(1", calculator.ErrSyntax, 3, "expected ')' to close the '(' at column 1, found the end of the expression"},
		{"1)", calculator.ErrSyntax, 2, "unmatched ')'"},
		{"1,000", calculator.ErrSyntax, 2, "unexpected ','; commas only separate function arguments"},
		{"2(3)", calculator.ErrSyntax, 2, "missing operator before '(' (write 2*x, not 2x)"},
		{"2pi", calculator.ErrSyntax, 2, `missing operator before the name "pi"`},
		{"1..2", calculator.ErrSyntax, 1, `the number "1.." has more than one decimal point`},
		{".", calculator.ErrSyntax, 1, "'.' is not a number"},
		{"1 * * 2", calculator.ErrSyntax, 5, "expected a number, a name or '(', found '*'"},
		{"1 = 1", calculator.ErrSyntax, 3, "'=' is not part of an expression"},
		{"1 $ 2", calculator.ErrSyntax, 3, "unexpected character '$'"},
		{"√\x00", calculator.ErrSyntax, 2, "unexpected character '\\x00'"},
		{"1 + \xff", calculator.ErrSyntax, 5, "the expression is not valid UTF-8"},
		{"sqrt", calculator.ErrSyntax, 1, "sqrt is a function: call it as sqrt(x)"},
		{"pi(2)", calculator.ErrSyntax, 1, "pi is a constant, not a function"},
		{"sqrt(1, 2)", calculator.ErrSyntax, 1, "sqrt takes 1 argument, got 2"},
		{"max()", calculator.ErrSyntax, 1, "max takes at least 1 argument, got 0"},
		{"round(1, 2, 3)", calculator.ErrSyntax, 1, "round takes 1 or 2 arguments, got 3"},
		{"atan2(1)", calculator.ErrSyntax, 1, "atan2 takes 2 arguments, got 1"},
		{"min(1 2)", calculator.ErrSyntax, 7, "expected ',' or ')' in the call of min (opened at column 4), found the number 2"},
		{"x + 1", calculator.ErrUnknownName, 1, `unknown name "x"; the functions are abs, acos`},
		{"foo(1)", calculator.ErrUnknownName, 1, `unknown name "foo"`},
		{"ä + 1", calculator.ErrSyntax, 1, "unexpected character 'ä'"},
		{strings.Repeat("(", 65) + "1" + strings.Repeat(")", 65), calculator.ErrTooDeep, 65, "expression nests deeper than 64 levels"},
		{strings.Repeat("-", 65) + "1", calculator.ErrTooDeep, 65, "expression nests deeper than 64 levels"},
		{strings.Repeat("2^", 65) + "1", calculator.ErrTooDeep, 130, "expression nests deeper than 64 levels"},
		{strings.Repeat("1", 1_000_000), calculator.ErrTooLong, 0, "the expression is 1000000 bytes long; the limit is 4096"},
	}
	for _, tc := range tests {
		name := tc.expr
		if len(name) > 40 {
			name = name[:40]
		}
		t.Run(name, func(t *testing.T) {
			v, err := calculator.Eval(tc.expr)
			if err == nil {
				t.Fatalf("Eval(%q) = %s, want an error", tc.expr, v.Text())
			}
			var ce *calculator.Error
			if !errors.As(err, &ce) {
				t.Fatalf("Eval(%q) error %T is not a *calculator.Error", tc.expr, err)
			}
			if !errors.Is(err, tc.kind) {
				t.Errorf("Eval(%q) error kind = %v, want %v", tc.expr, ce.Kind, tc.kind)
			}
			if ce.Column != tc.column {
				t.Errorf("Eval(%q) column = %d, want %d", tc.expr, ce.Column, tc.column)
			}
			if !strings.HasPrefix(ce.Msg, tc.msg) {
				t.Errorf("Eval(%q) message = %q, want it to start with %q", tc.expr, ce.Msg, tc.msg)
			}
		})
	}
}

func TestLargeExactResults(t *testing.T) {
	v, err := calculator.Eval("2^8191")
	if err != nil {
		t.Fatal(err)
	}
	want := new(big.Int).Lsh(big.NewInt(1), 8191)
	if r := v.Rat(); r == nil || !r.IsInt() || r.Num().Cmp(want) != 0 {
		t.Fatalf("2^8191 = %s", v)
	}
	// A denominator within the limit stays exact, and the decimal falls
	// back to significant digits.
	v, err = calculator.Eval("1/3^5000")
	if err != nil {
		t.Fatal(err)
	}
	if !v.Exact() || !strings.HasPrefix(v.Decimal(), "2.475") || !strings.Contains(v.Decimal(), "e-2386") {
		t.Fatalf("1/3^5000: exact=%v decimal=%s", v.Exact(), v.Decimal())
	}
}

func TestLimitsOptions(t *testing.T) {
	c := calculator.New(calculator.WithMaxInput(8), calculator.WithMaxBits(16), calculator.WithMaxDepth(2))
	if _, err := c.Eval("1+2+3+4+5"); !errors.Is(err, calculator.ErrTooLong) {
		t.Errorf("9 bytes with a limit of 8: %v", err)
	}
	if v, err := c.Eval("2^15"); err != nil || !v.Exact() {
		t.Errorf("2^15 with 16 bits: %v, %v", v, err)
	}
	// Beyond the bit limit the result is a float.
	if v, err := c.Eval("2^16"); err != nil || v.Exact() || v.Float64() != 65536 {
		t.Errorf("2^16 with 16 bits: %v exact=%v, %v", v, v.Exact(), err)
	}
	if _, err := c.Eval("((1))"); err != nil {
		t.Errorf("depth 2: %v", err)
	}
	if _, err := c.Eval("(((1)))"); !errors.Is(err, calculator.ErrTooDeep) {
		t.Errorf("depth 3 with a limit of 2: %v", err)
	}
}

func TestValueAccessors(t *testing.T) {
	var zero calculator.Value
	if !zero.Exact() || !zero.IsInt() || zero.String() != "0" || zero.Float64() != 0 || zero.Rat().Sign() != 0 {
		t.Errorf("zero Value: %v", zero)
	}
	v, _ := calculator.Eval("sqrt(2)")
	if v.Rat() != nil || v.IsInt() || math.Abs(v.Float64()-math.Sqrt2) > 0 {
		t.Errorf("sqrt(2) accessors: rat=%v int=%v f=%v", v.Rat(), v.IsInt(), v.Float64())
	}
	v, _ = calculator.Eval("-3/4")
	r := v.Rat()
	r.SetInt64(9) // a copy: the Value must not change
	if v.String() != "-3/4" || v.Decimal() != "-0.75" || v.Float64() != -0.75 {
		t.Errorf("-3/4: %s %s %v", v, v.Decimal(), v.Float64())
	}
}

func mount(t *testing.T, c *calculator.Calculator) *tool.Binding {
	t.Helper()
	reg := tool.NewRegistry()
	if err := reg.Mount(context.Background(), c); err != nil {
		t.Fatal(err)
	}
	b, ok := reg.Lookup("calculator__eval")
	if !ok {
		t.Fatalf("calculator__eval not mounted; tools: %v", reg.Tools())
	}
	return b
}

func TestTool(t *testing.T) {
	b := mount(t, calculator.New())
	if !b.Tool.Hints.ReadOnly || !strings.Contains(b.Tool.Description, "Functions: sqrt") {
		t.Errorf("tool: %+v", b.Tool)
	}
	tests := []struct {
		args    string
		content string
		isError bool
	}{
		{`{"expression":"1/3 + 1/6"}`, "1/2 = 0.5", false},
		{`{"expression":"sqrt(2)"}`, "1.4142135623730951 (approximate)", false},
		{`{"expression":"1/0"}`, "calculator: division by zero (column 2)", true},
		{`{"expression":"2^999999999"}`, "calculator: the power is too large: it exceeds the 8192-bit limit for exact results and overflows a float64 (column 2)", true},
		{`{"expression":"` + strings.Repeat("9", 5000) + `"}`, "calculator: the expression is 5000 bytes long; the limit is 4096", true},
	}
	for _, tc := range tests {
		out, err := b.Call(context.Background(), tool.NoSandbox(), tc.args)
		if err != nil {
			t.Fatalf("Call(%.40s): %v", tc.args, err)
		}
		res, ok := out.(*tool.Result)
		if !ok {
			t.Fatalf("Call(%.40s) returned %T", tc.args, out)
		}
		if res.Content != tc.content || res.IsError != tc.isError {
			t.Errorf("Call(%.40s) = %q (error %v), want %q (error %v)", tc.args, res.Content, res.IsError, tc.content, tc.isError)
		}
	}
	out, _ := b.Call(context.Background(), tool.NoSandbox(), `{"expression":"1/3"}`)
	ans := out.(*tool.Result).Value.(calculator.Answer)
	if ans.Result != "1/3" || ans.Decimal != "0.33333333333333333333" || !ans.Exact || ans.Expression != "1/3" {
		t.Errorf("answer: %+v", ans)
	}
}

func TestToolArgumentsValidatedByRegistry(t *testing.T) {
	b := mount(t, calculator.New())
	for _, args := range []string{`{}`, `{"expression":1}`, `{"expression":"1","extra":true}`, `[1]`, `not json`} {
		_, err := b.Call(context.Background(), tool.NoSandbox(), args)
		var ae *tool.ArgumentsError
		if !errors.As(err, &ae) {
			t.Errorf("Call(%s): err = %v, want *tool.ArgumentsError", args, err)
		}
	}
}

func TestCallDirect(t *testing.T) {
	c := calculator.New()
	ctx := context.Background()
	for _, tc := range []struct {
		name string
		args map[string]any
		want string
	}{
		{"eval", map[string]any{}, `eval needs "expression", a string such as "1/3 + 1/6"`},
		{"eval", map[string]any{"expression": 3.0}, `eval needs "expression", a string such as "1/3 + 1/6"`},
		{"sum", map[string]any{"expression": "1"}, `the calculator source has no tool "sum"; its only tool is eval`},
	} {
		out, err := c.Call(ctx, tc.name, tc.args)
		if err != nil {
			t.Fatal(err)
		}
		if res := out.(*tool.Result); !res.IsError || res.Content != tc.want {
			t.Errorf("Call(%s, %v) = %+v, want error %q", tc.name, tc.args, res, tc.want)
		}
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := c.Call(cctx, "eval", map[string]any{"expression": "1"}); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled context: %v", err)
	}
}

func TestOptions(t *testing.T) {
	c, err := calculator.FromOptions(map[string]any{"max_input": 4, "max_bits": int64(64), "max_depth": 3.0})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Eval("12345"); !errors.Is(err, calculator.ErrTooLong) {
		t.Errorf("max_input 4: %v", err)
	}
	if c, err := calculator.FromOptions(nil); err != nil || c.Name() != "calculator" {
		t.Errorf("no options: %v %v", c, err)
	}
	bad := []struct {
		opts map[string]any
		want string
	}{
		{map[string]any{"precision": 3}, `calculator: unknown option "precision"; the options are max_bits, max_depth, max_input, tool_prefix`},
		{map[string]any{"tool_prefix": 1}, "calculator: option tool_prefix must be a string, got int"},
		{map[string]any{"max_bits": "lots"}, "calculator: option max_bits must be a positive integer, got string"},
		{map[string]any{"max_bits": -1}, "calculator: option max_bits must be an integer from 1 to 16777216, got -1"},
		{map[string]any{"max_input": 1.5}, "calculator: option max_input must be an integer from 1 to 16777216, got 1.5"},
		{map[string]any{"max_depth": 100000}, "calculator: option max_depth must be an integer from 1 to 10000, got 100000"},
	}
	for _, tc := range bad {
		err := calculator.New().ValidateOptions(tc.opts)
		if err == nil || err.Error() != tc.want {
			t.Errorf("ValidateOptions(%v) = %v, want %q", tc.opts, err, tc.want)
		}
		if _, err := calculator.FromOptions(tc.opts); err == nil {
			t.Errorf("FromOptions(%v) accepted", tc.opts)
		}
	}
}

func TestToolPrefixFlat(t *testing.T) {
	c, err := calculator.FromOptions(map[string]any{"tool_prefix": "calc_"})
	if err != nil {
		t.Fatal(err)
	}
	reg := tool.NewRegistry()
	if err := reg.Mount(context.Background(), c, tool.Flat()); err != nil {
		t.Fatal(err)
	}
	b, ok := reg.Lookup("calc_eval")
	if !ok {
		t.Fatalf("calc_eval missing: %v", reg.Tools())
	}
	out, err := b.Call(context.Background(), tool.NoSandbox(), `{"expression":"6*7"}`)
	if err != nil || out.(*tool.Result).Content != "42" {
		t.Errorf("calc_eval: %v %v", out, err)
	}
	res, _ := c.Call(context.Background(), "eval", map[string]any{"expression": "1"})
	if r := res.(*tool.Result); !r.IsError || r.Content != `the calculator source has no tool "eval"; its only tool is calc_eval` {
		t.Errorf("unprefixed call: %+v", r)
	}
}

func TestWithName(t *testing.T) {
	reg := tool.NewRegistry()
	if err := reg.Mount(context.Background(), calculator.New(calculator.WithName("math"))); err != nil {
		t.Fatal(err)
	}
	if _, ok := reg.Lookup("math__eval"); !ok {
		t.Errorf("math__eval missing: %v", reg.Tools())
	}
}

// TestBeyondFloat64: exact values float64 cannot hold (10^400, 1/10^400)
// still give the right approximation when they meet a float or a float
// function — not a NaN, a false 0, a false pi/4 or an error of the wrong
// kind. Results are compared within a relative 1e-12.
func TestBeyondFloat64(t *testing.T) {
	// 10^400 mod the float64 nearest pi, computed exactly.
	piRat := new(big.Rat).SetFloat64(math.Pi)
	big400 := new(big.Rat).SetInt(new(big.Int).Exp(big.NewInt(10), big.NewInt(400), nil))
	q := new(big.Int).Quo(new(big.Rat).Quo(big400, piRat).Num(), new(big.Rat).Quo(big400, piRat).Denom())
	modPi, _ := new(big.Rat).Sub(big400, new(big.Rat).Mul(piRat, new(big.Rat).SetInt(q))).Float64()
	tests := []struct {
		expr string
		want float64
	}{
		{"ln(10^400)", 400 * math.Ln10},
		{"ln(1/10^400)", -400 * math.Ln10},
		{"log(10^400)", 400 * math.Ln10},
		{"sqrt(10^400 + 1)", 1e200},
		{"sqrt(2/10^400)", math.Sqrt2 * 1e-200},
		{"cbrt(10^400 + 1)", math.Pow(10, 400.0/3)},
		{"cbrt(-10^400)", -math.Pow(10, 400.0/3)},
		{"cbrt(2/10^400)", math.Cbrt(2) * math.Pow(10, -400.0/3)},
		{"atan2(10^400, 10^401)", math.Atan(0.1)},
		{"atan2(-1/10^400, -1/10^401)", math.Atan2(-10, -1)},
		{"10^400 % pi", modPi},
		{"-10^400 % pi", math.Pi - modPi},
		{"10^400 * (pi - pi)", 0},
		{"(pi - pi) * 10^400", 0},
		{"(10^400)^0.001", math.Pow(10, 0.4)},
		{"(10^400)^(sqrt(2)/1000)", math.Pow(10, 0.4*math.Sqrt2)},
		{"(1/10^400)^(-sqrt(2)/1000)", math.Pow(10, 0.4*math.Sqrt2)},
		{"min(1/10^400, pi - pi)", 0},
		{"(pi - pi)^(1/10^400)", 0},
		{"atan(10^400)", math.Pi / 2},
	}
	for _, tc := range tests {
		v, err := calculator.Eval(tc.expr)
		if err != nil {
			t.Errorf("Eval(%q): %v", tc.expr, err)
			continue
		}
		got := v.Float64()
		if v.Exact() || math.Abs(got-tc.want) > 1e-12*math.Abs(tc.want) {
			t.Errorf("Eval(%q) = %s, want %v (approximate)", tc.expr, v.Text(), tc.want)
		}
	}
	// The exact operand wins a comparison with the float it is nearest.
	if v, err := calculator.Eval("max(1/10^400, pi - pi)"); err != nil || !v.Exact() || v.String() != "1/1"+strings.Repeat("0", 400) {
		t.Errorf("max(1/10^400, pi - pi) = %v, %v", v, err)
	}
}

// TestHugeValuesInMessages: an error about a number of thousands of digits
// names it by its first digits and its length, and says the right thing.
func TestHugeValuesInMessages(t *testing.T) {
	tests := []struct {
		expr   string
		kind   error
		column int
		msg    string
	}{
		{"sin(10^400)", calculator.ErrRange, 1, "sin(10000000000000000000… (401 characters)) cannot be computed: its argument is beyond the range of float64"},
		{"cos(-10^400)", calculator.ErrRange, 1, "cos(-1000000000000000000… (402 characters)) cannot be computed: its argument is beyond the range of float64"},
		{"exp(10^2000)", calculator.ErrRange, 1, "exp(10000000000000000000… (2001 characters)) is too large for a float64"},
		{"asin(10^2000)", calculator.ErrDomain, 1, "asin is defined for -1 <= x <= 1, got 10000000000000000000… (2001 characters)"},
		{"gcd(1/3^5000, 2)", calculator.ErrDomain, 1, "gcd takes integers, got 1/403899762978715533… (2388 characters)"},
		{"round(1, 10^50)", calculator.ErrDomain, 1, "the digits of round must be an integer between -100 and 100, got 10000000000000000000… (51 characters)"},
		{"log(2, -10^400)", calculator.ErrDomain, 1, "the base of a logarithm must be positive and not 1, got -1000000000000000000… (402 characters)"},
		{"ln(-10^2000)", calculator.ErrDomain, 1, "the logarithm of -1000000000000000000… (2002 characters) is undefined: ln needs a positive number"},
		{"10^400 + pi", calculator.ErrRange, 8, "the sum is too large for a float64"},
		{"(-2)^(10^400)", calculator.ErrRange, 5, "the power is too large: it exceeds the 8192-bit limit for exact results and overflows a float64"},
		{"(-1/2)^(10^400)", calculator.ErrRange, 7, "the power is too small: it exceeds the 8192-bit limit for exact results and underflows a float64"},
		{"(-2)^(1/10^400)", calculator.ErrDomain, 5, "a negative number to a fractional power is not a real number"},
	}
	for _, tc := range tests {
		_, err := calculator.Eval(tc.expr)
		var ce *calculator.Error
		if !errors.As(err, &ce) || !errors.Is(err, tc.kind) || ce.Column != tc.column || ce.Msg != tc.msg {
			t.Errorf("Eval(%q) = %v\nwant %v at column %d: %q", tc.expr, err, tc.kind, tc.column, tc.msg)
		}
	}
}

// TestInlineUnderDefaultLimits checks that the tool runs on its caller's
// goroutine (tool.Tool.Inline) only while its limits bound its time:
// BenchmarkEvalWorst measures the worst case under the defaults.
func TestInlineUnderDefaultLimits(t *testing.T) {
	for _, tc := range []struct {
		name   string
		opts   []calculator.Option
		inline bool
	}{
		{"defaults", nil, true},
		{"lower limits", []calculator.Option{calculator.WithMaxInput(100), calculator.WithMaxBits(64), calculator.WithMaxDepth(4)}, true},
		{"more input", []calculator.Option{calculator.WithMaxInput(calculator.DefaultMaxInput + 1)}, false},
		{"more bits", []calculator.Option{calculator.WithMaxBits(1 << 20)}, false},
		{"deeper", []calculator.Option{calculator.WithMaxDepth(calculator.DefaultMaxDepth * 2)}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if b := mount(t, calculator.New(tc.opts...)); b.Tool.Inline != tc.inline {
				t.Errorf("Inline = %v, want %v", b.Tool.Inline, tc.inline)
			}
		})
	}
}
