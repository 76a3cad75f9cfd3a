package eval

import (
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/lodeworks/lode/loop"
	"github.com/lodeworks/lode/x/policy"
)

// Expectation is one check of an outcome. Check returns what the outcome
// got wrong, one message each, naming the call or field that differed;
// none means it passed. String describes the check in reports.
type Expectation interface {
	Check(o *Outcome) []string
	String() string
}

// CallSpec describes a call a case expects: the tool's name, and
// optionally a JSON pattern its arguments match (WithArgs), a JSON Schema
// they satisfy (WithSchema) and text its result holds (WithResult).
type CallSpec struct {
	Name   string
	Args   string
	Schema string
	Result string
}

// CallTo expects a call to the tool name (as the registry names it).
func CallTo(name string) CallSpec { return CallSpec{Name: name} }

// WithArgs adds a JSON pattern the arguments must match: an object matches
// one holding at least its keys, an array one of the same length element
// by element, anything else an equal value (numbers by value).
func (s CallSpec) WithArgs(pattern string) CallSpec { s.Args = pattern; return s }

// WithSchema adds a JSON Schema the arguments must satisfy.
func (s CallSpec) WithSchema(schema string) CallSpec { s.Schema = schema; return s }

// WithResult adds text the call's result must contain.
func (s CallSpec) WithResult(text string) CallSpec { s.Result = text; return s }

func (s CallSpec) String() string {
	out := s.Name
	if s.Args != "" {
		out += " " + s.Args
	}
	if s.Schema != "" {
		out += " (schema)"
	}
	if s.Result != "" {
		out += fmt.Sprintf(" → %q", s.Result)
	}
	return out
}

// diff returns how c differs from s, or "".
func (s CallSpec) diff(c Call) string {
	if c.Name != s.Name {
		return fmt.Sprintf("tool %q, want %q", c.Name, s.Name)
	}
	if s.Args != "" {
		want, err := decodeJSON(s.Args)
		if err != nil {
			return fmt.Sprintf("the expected arguments %s are not JSON: %v", s.Args, err)
		}
		got, err := decodeJSON(c.Arguments)
		if err != nil {
			return fmt.Sprintf("arguments %s are not JSON", cut(c.Arguments, 80))
		}
		if d := matchPattern("$", got, want); d != "" {
			return "arguments " + d
		}
	}
	if s.Schema != "" {
		r, err := compileSchema(s.Schema)
		if err != nil {
			return err.Error()
		}
		got, err := plainJSON(c.Arguments)
		if err != nil {
			return fmt.Sprintf("arguments %s are not JSON", cut(c.Arguments, 80))
		}
		if err := r.Validate(got); err != nil {
			return "arguments break the schema: " + err.Error()
		}
	}
	if s.Result != "" && !strings.Contains(c.Result, s.Result) {
		return fmt.Sprintf("result %q does not contain %q", cut(c.Result, 80), s.Result)
	}
	return ""
}

func callName(i int, c Call) string { return fmt.Sprintf("call %d (%s)", i+1, c.Name) }

// CallsInOrder expects exactly these calls, in this order.
func CallsInOrder(specs ...CallSpec) Expectation { return callsExp{specs: specs, ordered: true} }

// CallsAnyOrder expects exactly these calls, in any order: each spec is
// met by a call of its own.
func CallsAnyOrder(specs ...CallSpec) Expectation { return callsExp{specs: specs} }

type callsExp struct {
	specs   []CallSpec
	ordered bool
}

func (e callsExp) String() string {
	parts := make([]string, len(e.specs))
	for i, s := range e.specs {
		parts[i] = s.String()
	}
	if e.ordered {
		return "calls in order: " + strings.Join(parts, ", ")
	}
	return "calls in any order: " + strings.Join(parts, ", ")
}

func (e callsExp) Check(o *Outcome) []string {
	if e.ordered {
		var out []string
		for i, s := range e.specs {
			if i >= len(o.Calls) {
				out = append(out, fmt.Sprintf("call %d (%s): missing; %d calls made", i+1, s.Name, len(o.Calls)))
				continue
			}
			if d := s.diff(o.Calls[i]); d != "" {
				out = append(out, callName(i, o.Calls[i])+": "+d)
			}
		}
		for i := len(e.specs); i < len(o.Calls); i++ {
			out = append(out, callName(i, o.Calls[i])+": not expected")
		}
		return out
	}
	// Match each spec to the first unused call that meets it; a spec left
	// over is reported with the closest call of its tool.
	used := make([]bool, len(o.Calls))
	var out []string
	for j, s := range e.specs {
		found := false
		for i, c := range o.Calls {
			if !used[i] && s.diff(c) == "" {
				used[i], found = true, true
				break
			}
		}
		if found {
			continue
		}
		msg := fmt.Sprintf("expected call %d (%s): no call matches", j+1, s.Name)
		for i, c := range o.Calls {
			if !used[i] && c.Name == s.Name {
				msg += "; closest " + callName(i, c) + ": " + s.diff(c)
				break
			}
		}
		out = append(out, msg)
	}
	for i, c := range o.Calls {
		if !used[i] && !specFor(e.specs, c) {
			out = append(out, callName(i, c)+": not expected")
		}
	}
	return out
}

// specFor reports whether a call of c's tool is expected at all, so an
// unmatched call already named in a "closest" message is not reported
// twice.
func specFor(specs []CallSpec, c Call) bool {
	for _, s := range specs {
		if s.Name == c.Name {
			return true
		}
	}
	return false
}

// Called expects at least one call that meets spec, among any others.
func Called(spec CallSpec) Expectation { return calledExp{spec} }

type calledExp struct{ spec CallSpec }

func (e calledExp) String() string { return "called: " + e.spec.String() }

func (e calledExp) Check(o *Outcome) []string {
	closest := ""
	for i, c := range o.Calls {
		d := e.spec.diff(c)
		if d == "" {
			return nil
		}
		if closest == "" && c.Name == e.spec.Name {
			closest = "; closest " + callName(i, c) + ": " + d
		}
	}
	return []string{fmt.Sprintf("no call matches %s among %d calls%s", e.spec, len(o.Calls), closest)}
}

// NotCalled expects no call to a tool matching any of the patterns
// (names, or globs with * and ?, as x/policy matches them), refused or
// not: a call that must not happen.
func NotCalled(patterns ...string) Expectation { return notCalledExp(patterns) }

type notCalledExp []string

func (e notCalledExp) String() string { return "not called: " + strings.Join(e, ", ") }

func (e notCalledExp) Check(o *Outcome) []string {
	var out []string
	for i, c := range o.Calls {
		for _, p := range e {
			if policy.Match(p, c.Name) {
				out = append(out, callName(i, c)+": must not happen (matches "+strconv.Quote(p)+")")
				break
			}
		}
	}
	return out
}

// Refused expects the policy to have refused at least one call to name.
func Refused(name string) Expectation { return refusedExp(name) }

type refusedExp string

func (e refusedExp) String() string { return "refused by policy: " + string(e) }

func (e refusedExp) Check(o *Outcome) []string {
	var seen []string
	for i, c := range o.Calls {
		if c.Name == string(e) {
			if c.Refused {
				return nil
			}
			seen = append(seen, strconv.Itoa(i+1))
		}
	}
	if len(seen) == 0 {
		return []string{fmt.Sprintf("no call to %q was made, want one refused by the policy", string(e))}
	}
	return []string{fmt.Sprintf("call %s (%s): ran, want it refused by the policy", strings.Join(seen, ", "), string(e))}
}

// Allowed expects no call the policy refused.
func Allowed() Expectation { return allowedExp{} }

type allowedExp struct{}

func (allowedExp) String() string { return "no call refused by policy" }

func (allowedExp) Check(o *Outcome) []string {
	var out []string
	for i, c := range o.Calls {
		if c.Refused {
			out = append(out, fmt.Sprintf("%s: refused by the policy (%s)", callName(i, c), c.Rule))
		}
	}
	return out
}

// FieldCheck is one check of a typed answer's field.
type FieldCheck struct {
	// Path names the field by its JSON names, dot-separated, with numbers
	// for array elements: "items.0.sku".
	Path string
	// Want is a Go value (marshalled to JSON) the field matches as a
	// pattern, as CallSpec.WithArgs matches arguments.
	Want any
}

// Field checks that the answer's field at path matches want.
func Field(path string, want any) FieldCheck { return FieldCheck{Path: path, Want: want} }

// Answer expects a typed answer (the case's Output) whose fields pass
// checks.
func Answer(checks ...FieldCheck) Expectation { return answerExp(checks) }

type answerExp []FieldCheck

func (e answerExp) String() string {
	parts := make([]string, len(e))
	for i, f := range e {
		parts[i] = fmt.Sprintf("%s = %s", f.Path, show(f.Want))
	}
	return "answer: " + strings.Join(parts, ", ")
}

func (e answerExp) Check(o *Outcome) []string {
	if len(o.Answer) == 0 {
		if o.Err != nil {
			return []string{"no typed answer: " + o.Err.Error()}
		}
		return []string{"no typed answer (the case has no Output?)"}
	}
	root, err := decodeJSON(string(o.Answer))
	if err != nil {
		return []string{"the typed answer is not JSON: " + err.Error()}
	}
	var out []string
	for _, f := range e {
		want, err := toPattern(f.Want)
		if err != nil {
			out = append(out, fmt.Sprintf("answer field %s: the expected value: %v", f.Path, err))
			continue
		}
		got, miss := dig(root, f.Path)
		if miss != "" {
			out = append(out, fmt.Sprintf("answer field %s: %s", f.Path, miss))
			continue
		}
		if d := matchPattern("", got, want); d != "" {
			out = append(out, fmt.Sprintf("answer field %s%s", f.Path, strings.TrimPrefix(d, "at ")))
		}
	}
	return out
}

func toPattern(v any) (any, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	return decodeJSON(string(b))
}

// dig follows a dotted path; miss says where it stopped.
func dig(v any, path string) (any, string) {
	if path == "" {
		return v, ""
	}
	for _, p := range strings.Split(path, ".") {
		switch x := v.(type) {
		case map[string]any:
			next, ok := x[p]
			if !ok {
				return nil, fmt.Sprintf("no field %q", p)
			}
			v = next
		case []any:
			i, err := strconv.Atoi(p)
			if err != nil || i < 0 || i >= len(x) {
				return nil, fmt.Sprintf("no element %s (%d elements)", p, len(x))
			}
			v = x[i]
		default:
			return nil, fmt.Sprintf("%s has no field %q", show(v), p)
		}
	}
	return v, ""
}

// TextContains expects the last answer's text to contain s.
func TextContains(s string) Expectation { return textExp{s: s} }

// TextExcludes expects the last answer's text not to contain s.
func TextExcludes(s string) Expectation { return textExp{s: s, not: true} }

type textExp struct {
	s   string
	not bool
}

func (e textExp) String() string {
	if e.not {
		return fmt.Sprintf("text excludes %q", e.s)
	}
	return fmt.Sprintf("text contains %q", e.s)
}

func (e textExp) Check(o *Outcome) []string {
	has := strings.Contains(o.Text, e.s)
	switch {
	case e.not && has:
		return []string{fmt.Sprintf("text %q contains %q", cut(o.Text, 120), e.s)}
	case !e.not && !has:
		return []string{fmt.Sprintf("text %q does not contain %q", cut(o.Text, 120), e.s)}
	}
	return nil
}

// TextMatches expects the last answer's text to match the regular
// expression re (RE2 syntax); a pattern that does not compile fails the
// case saying so.
func TextMatches(re string) Expectation { return matchesExp(re) }

type matchesExp string

func (e matchesExp) String() string { return fmt.Sprintf("text matches /%s/", string(e)) }

func (e matchesExp) Check(o *Outcome) []string {
	re, err := regexp.Compile(string(e))
	if err != nil {
		return []string{fmt.Sprintf("text pattern /%s/ does not compile: %v", string(e), err)}
	}
	if !re.MatchString(o.Text) {
		return []string{fmt.Sprintf("text %q does not match /%s/", cut(o.Text, 120), string(e))}
	}
	return nil
}

// MaxTurns is a budget of model answers.
func MaxTurns(n int) Expectation { return budget{what: "turns", max: float64(n)} }

// MaxTokens is a budget of tokens, input and output added up over the run.
func MaxTokens(n int64) Expectation { return budget{what: "tokens", max: float64(n)} }

// MaxCost is a budget of US dollars (the Suite needs a Pricer).
func MaxCost(usd float64) Expectation { return budget{what: "cost", max: usd} }

// MaxTime is a budget of wall time for the whole run.
func MaxTime(d time.Duration) Expectation { return budget{what: "time", max: float64(d)} }

type budget struct {
	what string
	max  float64
}

func (b budget) format(v float64) string {
	switch b.what {
	case "cost":
		return fmt.Sprintf("$%.4f", v)
	case "time":
		return time.Duration(v).String()
	}
	return strconv.FormatFloat(v, 'f', -1, 64)
}

func (b budget) String() string { return fmt.Sprintf("%s ≤ %s", b.what, b.format(b.max)) }

func (b budget) Check(o *Outcome) []string {
	var used float64
	switch b.what {
	case "turns":
		used = float64(o.Turns)
	case "tokens":
		used = float64(o.Usage.InputTokens + o.Usage.OutputTokens)
	case "cost":
		used = o.Usage.CostUSD
	case "time":
		used = float64(o.Duration)
	}
	if used > b.max {
		return []string{fmt.Sprintf("%s: %s, budget %s", b.what, b.format(used), b.format(b.max))}
	}
	return nil
}

// Fails expects the run to fail with an error whose text contains s (a
// limit reached, an answer that never validated). Without it a run that
// fails fails the case.
func Fails(s string) Expectation { return failsExp(s) }

type failsExp string

func (e failsExp) String() string { return fmt.Sprintf("run fails with %q", string(e)) }

func (e failsExp) Check(o *Outcome) []string {
	if o.Err == nil {
		return []string{fmt.Sprintf("the run succeeded, want it to fail with %q", string(e))}
	}
	if !strings.Contains(o.Err.Error(), string(e)) {
		return []string{fmt.Sprintf("the run failed with %q, want %q", o.Err.Error(), string(e))}
	}
	return nil
}

// NoTripwire expects no guard to have stopped the run.
func NoTripwire() Expectation { return trippedExp{none: true} }

// TrippedBy expects the guard named guard to have stopped the run (the
// run's error is then the trip, and does not fail the case).
func TrippedBy(guard string) Expectation { return trippedExp{guard: guard} }

type trippedExp struct {
	guard string
	none  bool
}

func (e trippedExp) String() string {
	if e.none {
		return "no tripwire"
	}
	return "tripped by guard " + strconv.Quote(e.guard)
}

func (e trippedExp) Check(o *Outcome) []string {
	if e.none {
		var out []string
		for _, w := range o.Tripwires {
			out = append(out, fmt.Sprintf("guard %q stopped the %s: %s", w.Guard, w.At, w.Reason))
		}
		return out
	}
	var seen []string
	for _, w := range o.Tripwires {
		if w.Guard == e.guard {
			return nil
		}
		seen = append(seen, strconv.Quote(w.Guard))
	}
	if len(seen) == 0 {
		return []string{fmt.Sprintf("no guard stopped the run, want %q to", e.guard)}
	}
	return []string{fmt.Sprintf("stopped by %s, want %q", strings.Join(seen, ", "), e.guard)}
}

// check runs every expectation on o; a run error fails the case unless an
// expectation is Fails, or TrippedBy and the error is a guard's trip.
func check(o *Outcome, exps []Expectation) []string {
	var out []string
	expectsErr := false
	for _, e := range exps {
		if _, ok := e.(failsExp); ok {
			expectsErr = true
		}
		if t, ok := e.(trippedExp); ok && !t.none && errors.Is(o.Err, loop.ErrTripped) {
			expectsErr = true
		}
	}
	if o.Err != nil && !expectsErr {
		out = append(out, "run failed: "+o.Err.Error())
	}
	for _, e := range exps {
		out = append(out, e.Check(o)...)
	}
	return out
}
