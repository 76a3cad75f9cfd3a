package calculator

import (
	"fmt"
	"math/big"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

type tokKind int

const (
	tEOF tokKind = iota
	tNum
	tName
	tOp // + - * / % ^
	tLParen
	tRParen
	tComma
	tRoot // √
)

type token struct {
	kind tokKind
	text string // the source text of a number, the lower-cased name
	op   byte   // the canonical operator for tOp
	pos  int    // byte offset in the source
}

// parser is a recursive-descent parser that evaluates as it parses; it
// never builds or runs code.
//
//	expr  := term  { ("+" | "-") term }
//	term  := unary { ("*" | "/" | "%") unary }
//	unary := ("+" | "-") unary | power
//	power := atom [ "^" unary ]                 right-associative; -2^2 = -4
//	atom  := number | name | name "(" [ expr { "," expr } ] ")" | "(" expr ")" | "√" atom
type parser struct {
	src   string
	pos   int
	tok   token
	depth int
	lim   limits
}

func (p *parser) errAt(kind error, pos int, format string, args ...any) *Error {
	col := 0
	if pos >= 0 {
		col = utf8.RuneCountInString(p.src[:min(pos, len(p.src))]) + 1
	}
	return &Error{Kind: kind, Column: col, Msg: fmt.Sprintf(format, args...)}
}

func (p *parser) enter(pos int) error {
	p.depth++
	if p.depth > p.lim.maxDepth {
		return p.errAt(ErrTooDeep, pos, "expression nests deeper than %d levels (parentheses, signs, powers and function calls)", p.lim.maxDepth)
	}
	return nil
}

func (p *parser) leave() { p.depth-- }

// next reads the token after the current one.
func (p *parser) next() error {
	for p.pos < len(p.src) {
		r, size := utf8.DecodeRuneInString(p.src[p.pos:])
		if !unicode.IsSpace(r) {
			break
		}
		p.pos += size
	}
	start := p.pos
	if p.pos >= len(p.src) {
		p.tok = token{kind: tEOF, pos: start}
		return nil
	}
	c := p.src[p.pos]
	switch {
	case c >= '0' && c <= '9' || c == '.':
		return p.lexNumber()
	case c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '_':
		for p.pos < len(p.src) && isNameByte(p.src[p.pos]) {
			p.pos++
		}
		p.tok = token{kind: tName, text: strings.ToLower(p.src[start:p.pos]), pos: start}
		return nil
	}
	r, size := utf8.DecodeRuneInString(p.src[p.pos:])
	if r == utf8.RuneError && size == 1 {
		return p.errAt(ErrSyntax, start, "the expression is not valid UTF-8")
	}
	p.pos += size
	tok := token{kind: tOp, pos: start}
	switch r {
	case '+':
		tok.op = '+'
	case '-', '−', '–': // ASCII hyphen-minus, the minus sign, the en dash
		tok.op = '-'
	case '*':
		tok.op = '*'
		if p.pos < len(p.src) && p.src[p.pos] == '*' {
			p.pos++
			tok.op = '^'
		}
	case '×', '·', '⋅', '∙', '✕':
		tok.op = '*'
	case '/', '÷', '∕':
		tok.op = '/'
	case '%':
		tok.op = '%'
	case '^':
		tok.op = '^'
	case '(':
		tok.kind = tLParen
	case ')':
		tok.kind = tRParen
	case ',':
		tok.kind = tComma
	case '√':
		tok.kind = tRoot
	case 'π':
		tok = token{kind: tName, text: "pi", pos: start}
	case 'τ':
		tok = token{kind: tName, text: "tau", pos: start}
	case '=':
		return p.errAt(ErrSyntax, start, "'=' is not part of an expression: give only the expression to evaluate")
	default:
		return p.errAt(ErrSyntax, start, "unexpected character %q", r)
	}
	p.tok = tok
	return nil
}

func isNameByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_'
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

func (p *parser) lexNumber() error {
	start := p.pos
	digits := 0
	for p.pos < len(p.src) && isDigit(p.src[p.pos]) {
		p.pos++
		digits++
	}
	if p.pos < len(p.src) && p.src[p.pos] == '.' {
		p.pos++
		for p.pos < len(p.src) && isDigit(p.src[p.pos]) {
			p.pos++
			digits++
		}
		if p.pos < len(p.src) && p.src[p.pos] == '.' {
			return p.errAt(ErrSyntax, start, "the number %q has more than one decimal point", p.src[start:p.pos+1])
		}
	}
	if digits == 0 {
		return p.errAt(ErrSyntax, start, "'.' is not a number; write 0.5 or .5")
	}
	// An exponent only when digits follow: "2e" is 2 followed by the name e.
	if p.pos < len(p.src) && (p.src[p.pos] == 'e' || p.src[p.pos] == 'E') {
		j := p.pos + 1
		if j < len(p.src) && (p.src[j] == '+' || p.src[j] == '-') {
			j++
		}
		if j < len(p.src) && isDigit(p.src[j]) {
			for j < len(p.src) && isDigit(p.src[j]) {
				j++
			}
			p.pos = j
		}
	}
	p.tok = token{kind: tNum, text: p.src[start:p.pos], pos: start}
	return nil
}

// number converts a number token exactly: "0.1" is 1/10. The exponent is
// applied with the same bounds as "^", so 1e999999999 is refused before
// anything is computed.
func (p *parser) number(t token) (Value, error) {
	mant, exp := t.text, ""
	if i := strings.IndexAny(mant, "eE"); i >= 0 {
		mant, exp = mant[:i], mant[i+1:]
	}
	r, ok := new(big.Rat).SetString(mant)
	if !ok {
		return Value{}, p.errAt(ErrSyntax, t.pos, "%q is not a number", t.text)
	}
	v, err := p.exact(r, t.pos)
	if err != nil {
		return Value{}, err
	}
	if exp == "" || v.isZero() {
		return v, nil
	}
	e, err := strconv.ParseInt(exp, 10, 64)
	if err != nil {
		// Only an exponent beyond int64 fails to parse.
		return Value{}, p.errAt(ErrRange, t.pos, "the exponent of %q is too large", t.text)
	}
	scale, err := p.pow(exactValue(big.NewRat(10, 1)), exactValue(new(big.Rat).SetInt64(e)), t.pos)
	if err != nil {
		what := "large"
		if e < 0 {
			what = "small"
		}
		return Value{}, p.errAt(ErrRange, t.pos, "the number %s is too %s: it exceeds the %d-bit limit for exact values and float64 range", t.text, what, p.lim.maxBits)
	}
	return p.mul(v, scale, t.pos)
}

func (p *parser) parse() (Value, error) {
	if len(p.src) > p.lim.maxInput {
		return Value{}, &Error{Kind: ErrTooLong, Msg: fmt.Sprintf("the expression is %d bytes long; the limit is %d", len(p.src), p.lim.maxInput)}
	}
	if err := p.next(); err != nil {
		return Value{}, err
	}
	if p.tok.kind == tEOF {
		return Value{}, &Error{Kind: ErrSyntax, Msg: "the expression is empty"}
	}
	v, err := p.expr()
	if err != nil {
		return Value{}, err
	}
	switch p.tok.kind {
	case tEOF:
		return v, nil
	case tRParen:
		return Value{}, p.errAt(ErrSyntax, p.tok.pos, "unmatched ')'")
	case tComma:
		return Value{}, p.errAt(ErrSyntax, p.tok.pos, "unexpected ','; commas only separate function arguments (write 1000000, not 1,000,000)")
	default:
		return Value{}, p.errAt(ErrSyntax, p.tok.pos, "missing operator before %s (write 2*x, not 2x)", p.describe(p.tok))
	}
}

func (p *parser) describe(t token) string {
	switch t.kind {
	case tEOF:
		return "the end of the expression"
	case tNum:
		return fmt.Sprintf("the number %s", t.text)
	case tName:
		return fmt.Sprintf("the name %q", t.text)
	case tOp:
		return fmt.Sprintf("'%c'", t.op)
	case tLParen:
		return "'('"
	case tRParen:
		return "')'"
	case tComma:
		return "','"
	case tRoot:
		return "'√'"
	}
	return "a token"
}

func (p *parser) expr() (Value, error) {
	v, err := p.term()
	if err != nil {
		return Value{}, err
	}
	for p.tok.kind == tOp && (p.tok.op == '+' || p.tok.op == '-') {
		op := p.tok
		if err := p.next(); err != nil {
			return Value{}, err
		}
		rhs, err := p.term()
		if err != nil {
			return Value{}, err
		}
		if op.op == '+' {
			v, err = p.add(v, rhs, op.pos)
		} else {
			v, err = p.sub(v, rhs, op.pos)
		}
		if err != nil {
			return Value{}, err
		}
	}
	return v, nil
}

func (p *parser) term() (Value, error) {
	v, err := p.unary()
	if err != nil {
		return Value{}, err
	}
	for p.tok.kind == tOp && (p.tok.op == '*' || p.tok.op == '/' || p.tok.op == '%') {
		op := p.tok
		if err := p.next(); err != nil {
			return Value{}, err
		}
		rhs, err := p.unary()
		if err != nil {
			return Value{}, err
		}
		switch op.op {
		case '*':
			v, err = p.mul(v, rhs, op.pos)
		case '/':
			v, err = p.div(v, rhs, op.pos)
		default:
			v, err = p.mod(v, rhs, op.pos)
		}
		if err != nil {
			return Value{}, err
		}
	}
	return v, nil
}

func (p *parser) unary() (Value, error) {
	if p.tok.kind == tOp && (p.tok.op == '+' || p.tok.op == '-') {
		op := p.tok
		v, err := p.nested(op.pos, p.unary)
		if err != nil || op.op == '+' {
			return v, err
		}
		return v.neg(), nil
	}
	return p.power()
}

func (p *parser) power() (Value, error) {
	base, err := p.atom()
	if err != nil {
		return Value{}, err
	}
	if p.tok.kind != tOp || p.tok.op != '^' {
		return base, nil
	}
	op := p.tok
	exp, err := p.nested(op.pos, p.unary)
	if err != nil {
		return Value{}, err
	}
	return p.pow(base, exp, op.pos)
}

func (p *parser) atom() (Value, error) {
	t := p.tok
	switch t.kind {
	case tNum:
		if err := p.next(); err != nil {
			return Value{}, err
		}
		return p.number(t)
	case tName:
		if err := p.next(); err != nil {
			return Value{}, err
		}
		if p.tok.kind == tLParen {
			return p.call(t)
		}
		return p.constant(t)
	case tLParen:
		return p.nested(t.pos, func() (Value, error) {
			v, err := p.expr()
			if err != nil {
				return Value{}, err
			}
			if p.tok.kind != tRParen {
				return Value{}, p.errAt(ErrSyntax, p.tok.pos, "expected ')' to close the '(' at column %d, found %s", p.column(t.pos), p.describe(p.tok))
			}
			return v, p.next()
		})
	case tRoot:
		v, err := p.nested(t.pos, p.atom)
		if err != nil {
			return Value{}, err
		}
		return p.sqrt(v, t.pos)
	case tEOF:
		return Value{}, p.errAt(ErrSyntax, t.pos, "the expression ends too soon: expected a number, a name or '('")
	}
	return Value{}, p.errAt(ErrSyntax, t.pos, "expected a number, a name or '(', found %s", p.describe(t))
}

// nested steps past the token at pos into a deeper level of the
// expression, parses it with parse, and steps back out; the depth bound is
// checked on the way in.
func (p *parser) nested(pos int, parse func() (Value, error)) (Value, error) {
	if err := p.enter(pos); err != nil {
		return Value{}, err
	}
	defer p.leave()
	if err := p.next(); err != nil {
		return Value{}, err
	}
	return parse()
}

func (p *parser) column(pos int) int { return utf8.RuneCountInString(p.src[:pos]) + 1 }

// call parses the arguments of the function named by t (the current token
// is its '(') and applies it.
func (p *parser) call(t token) (Value, error) {
	open := p.tok
	if err := p.enter(open.pos); err != nil {
		return Value{}, err
	}
	defer p.leave()
	if err := p.next(); err != nil {
		return Value{}, err
	}
	var args []Value
	if p.tok.kind != tRParen {
		for {
			v, err := p.expr()
			if err != nil {
				return Value{}, err
			}
			args = append(args, v)
			if p.tok.kind != tComma {
				break
			}
			if err := p.next(); err != nil {
				return Value{}, err
			}
		}
	}
	if p.tok.kind != tRParen {
		return Value{}, p.errAt(ErrSyntax, p.tok.pos, "expected ',' or ')' in the call of %s (opened at column %d), found %s", t.text, p.column(open.pos), p.describe(p.tok))
	}
	if err := p.next(); err != nil {
		return Value{}, err
	}
	return p.apply(t, args)
}
