// Package calculator evaluates arithmetic expressions safely, as a Go API
// (Eval) and as a tool source (pack) with one tool, "eval", mounted as
// "calculator__eval".
//
// A hand-written recursive-descent parser evaluates as it parses; nothing is
// ever compiled or run as code. It takes + - * / (and × ÷ −), % (floored
// modulo), ^ and ** (right-associative power, binding tighter than unary
// minus: -2^2 = -4), parentheses, the functions listed by Functions and the
// constants pi, e and tau.
//
// Results are exact rationals (math/big.Rat) wherever they exist — 1/3 + 1/6
// is exactly 1/2, 0.1 + 0.2 exactly 3/10, 8^(2/3) exactly 4 — and float64
// approximations where they do not (sqrt(2), pi). Everything is bounded:
// the input length (4 KiB), the nesting depth (64) and the bits of an exact
// numerator or denominator (8192). A power's size is estimated before it is
// computed, so 2^999999999 fails at once with ErrRange; a larger exact
// result falls back to float64 and fails if float64 cannot hold it.
// An exact value beyond float64's range (10^400, 1/10^400) keeps its size
// where it meets a float: arithmetic with a float works on the float's
// exact binary value (10^400 % pi), roots and logarithms scale it first
// (sqrt(2/10^400), ln(10^400)), and what float64 cannot compute at all is
// ErrRange (sin(10^400)). ln and log are natural logarithms (log(x, base)
// takes a base), as in Python.
//
// The calculator touches nothing outside the expression, so it needs no
// sandbox and ignores the one a call is given. Under the default limits or
// lower ones, one evaluation takes at most about a tenth of a second, so the
// tool is Inline (tool.Tool.Inline: a call runs on its caller's goroutine,
// with no hand-off); raised limits hand each call off as other tools are.
//
// Every failure is an *Error with a kind (ErrSyntax, ErrDivisionByZero, …),
// a message a model can act on, and a column; through the tool it becomes a
// *tool.Result with IsError set.
//
// As a pack, it takes options from a tools: map (FromOptions, and
// ValidateOptions on an instance: max_input, max_bits, max_depth,
// tool_prefix); WithToolPrefix names the tool for a flat mount beside other
// packs ("calc_eval").
package calculator
