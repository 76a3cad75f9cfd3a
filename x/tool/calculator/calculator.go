package calculator

import (
	"context"
	"fmt"

	"github.com/lodeworks/lode/tool"
	"github.com/lodeworks/lode/x/tool/internal/optparse"
)

// Defaults of the limits; a zero option value means the default.
const (
	DefaultMaxInput = 4 << 10 // bytes of expression text
	DefaultMaxBits  = 8192    // bits of an exact numerator or denominator
	DefaultMaxDepth = 64      // nesting of parentheses, signs, powers and calls
)

// DefaultName is the name the calculator is mounted under.
const DefaultName = "calculator"

type limits struct {
	maxInput, maxBits, maxDepth int
}

// Option configures a Calculator.
type Option func(*Calculator)

// WithName sets the source name (default "calculator"), which prefixes the
// tool's name when mounted: "<name>__eval".
func WithName(name string) Option { return func(c *Calculator) { c.name = name } }

// WithToolPrefix declares the tool as prefix+"eval" (say "calc_eval"), for
// a flat mount beside other packs, as a pack catalog does.
func WithToolPrefix(prefix string) Option { return func(c *Calculator) { c.prefix = prefix } }

// WithMaxInput bounds the expression length in bytes (default 4 KiB).
func WithMaxInput(n int) Option { return func(c *Calculator) { c.lim.maxInput = n } }

// WithMaxBits bounds the bits of an exact result's numerator and
// denominator (default 8192, about 2466 decimal digits). A larger exact
// result falls back to float64, and fails if float64 cannot hold it.
func WithMaxBits(n int) Option { return func(c *Calculator) { c.lim.maxBits = n } }

// WithMaxDepth bounds the nesting depth (default 64).
func WithMaxDepth(n int) Option { return func(c *Calculator) { c.lim.maxDepth = n } }

// Calculator evaluates arithmetic expressions, as a Go API (Eval) and as a
// tool source with one tool, "eval". It is safe for concurrent use.
type Calculator struct {
	name   string
	prefix string
	lim    limits
}

// New returns a calculator; zero or negative limits mean the defaults.
func New(opts ...Option) *Calculator {
	c := &Calculator{}
	for _, o := range opts {
		o(c)
	}
	if c.name == "" {
		c.name = DefaultName
	}
	if c.lim.maxInput <= 0 {
		c.lim.maxInput = DefaultMaxInput
	}
	if c.lim.maxBits <= 0 {
		c.lim.maxBits = DefaultMaxBits
	}
	if c.lim.maxDepth <= 0 {
		c.lim.maxDepth = DefaultMaxDepth
	}
	return c
}

// Eval evaluates expr with the default limits. Every error is an *Error.
func Eval(expr string) (Value, error) { return New().Eval(expr) }

// Eval evaluates expr. Every error is an *Error matching one of the Err*
// kinds.
func (c *Calculator) Eval(expr string) (Value, error) {
	p := &parser{src: expr, lim: c.lim}
	return p.parse()
}

// Name returns the source name.
func (c *Calculator) Name() string { return c.name }

// EvalArgs are the arguments of the eval tool.
type EvalArgs struct {
	Expression string `json:"expression" jsonschema:"description=The arithmetic expression to evaluate, e.g. (1/3 + 1/6) * 2^10 or sqrt(2)"`
}

// Answer is the Value of a successful eval result.
type Answer struct {
	Expression string `json:"expression"`
	// Result is the exact form ("1/3") or the float ("1.4142135623730951").
	Result string `json:"result"`
	// Decimal is the decimal form ("0.33333333333333333333").
	Decimal string `json:"decimal"`
	// Exact is false when the result is a float64 approximation.
	Exact bool  `json:"exact"`
	Value Value `json:"-"`
}

const evalDescription = "Evaluate an arithmetic expression exactly. " +
	"Operators: + - * / (also × ÷ −), % (modulo, sign of the divisor), ^ or ** (power), parentheses, unary minus. " +
	"Functions: sqrt, cbrt, abs, floor, ceil, trunc, round(x[, digits]), min, max, gcd, lcm, " +
	"ln and log (natural; log(x, base)), log10, log2, exp, sin, cos, tan, asin, acos, atan, atan2, sinh, cosh, tanh. " +
	"Constants: pi, e, tau. Fractions stay exact (1/3 + 1/6 = 1/2); irrational results are floats."

// Tools lists the eval tool.
func (c *Calculator) Tools(context.Context) ([]tool.Tool, error) {
	schema, err := tool.SchemaFor[EvalArgs]()
	if err != nil {
		return nil, err
	}
	return []tool.Tool{{
		Name:        c.prefix + "eval",
		Description: evalDescription,
		Schema:      schema,
		Hints:       tool.Hints{ReadOnly: true, Idempotent: true},
		Inline:      c.lim.bounded(),
	}}, nil
}

// bounded reports whether the limits are at most the defaults, under which
// one evaluation takes at most about a tenth of a second (a 4 KiB
// expression of 8192-bit divisions), so that a call may run on its
// caller's goroutine (tool.Tool.Inline). Raised limits hand every call
// off, since nothing then bounds its time.
func (l limits) bounded() bool {
	return l.maxInput <= DefaultMaxInput && l.maxBits <= DefaultMaxBits && l.maxDepth <= DefaultMaxDepth
}

// Call runs the eval tool. A bad expression is a *tool.Result with IsError
// set and a message saying what is wrong and where.
func (c *Calculator) Call(ctx context.Context, name string, args map[string]any) (any, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if name != c.prefix+"eval" {
		return &tool.Result{IsError: true, Content: fmt.Sprintf("the %s source has no tool %q; its only tool is %seval", c.name, name, c.prefix)}, nil
	}
	expr, ok := args["expression"].(string)
	if !ok {
		return &tool.Result{IsError: true, Content: `eval needs "expression", a string such as "1/3 + 1/6"`}, nil
	}
	v, err := c.Eval(expr)
	if err != nil {
		return &tool.Result{IsError: true, Content: err.Error()}, nil
	}
	d, _ := v.decimal()
	return &tool.Result{
		Content: v.Text(),
		Value:   Answer{Expression: expr, Result: v.String(), Decimal: d, Exact: v.Exact(), Value: v},
	}, nil
}

// optionSet is the pack options, as a workflow's tools.calculator map
// gives them.
var optionSet = optparse.Set{Pack: "calculator", Known: []string{"max_bits", "max_depth", "max_input", "tool_prefix"}}

// FromOptions builds a calculator from pack options: max_input (bytes),
// max_bits and max_depth, each a positive integer, and tool_prefix.
func FromOptions(options map[string]any) (*Calculator, error) {
	opts, err := parseOptions(options)
	if err != nil {
		return nil, err
	}
	return New(opts...), nil
}

// ValidateOptions checks pack options without building anything.
func (c *Calculator) ValidateOptions(options map[string]any) error {
	_, err := parseOptions(options)
	return err
}

func parseOptions(opts map[string]any) ([]Option, error) {
	var out []Option
	err := optionSet.Each(opts, func(k string, v any) error {
		if k == "tool_prefix" {
			p, err := optionSet.String(k, v)
			out = append(out, WithToolPrefix(p))
			return err
		}
		with, limit := WithMaxInput, int64(1<<24) // max_input
		switch k {
		case "max_bits":
			with = WithMaxBits
		case "max_depth":
			with, limit = WithMaxDepth, 10000
		}
		n, err := optionSet.PositiveInt(k, v, limit)
		out = append(out, with(int(n)))
		return err
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}
