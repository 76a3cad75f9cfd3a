// Package match evaluates the model-name rules of the catalog's source: a
// rule is one of equals, starts_with, ends_with or contains (compared
// without case), regex, an or/and list of rules, or not.
package match

import (
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"
)

// Rule is one model-name rule. The zero Rule matches nothing.
type Rule struct {
	Equals     string `json:"equals,omitempty"`
	StartsWith string `json:"starts_with,omitempty"`
	EndsWith   string `json:"ends_with,omitempty"`
	Contains   string `json:"contains,omitempty"`
	Regex      string `json:"regex,omitempty"`
	Or         []Rule `json:"or,omitempty"`
	And        []Rule `json:"and,omitempty"`
	// Not matches what its rule does not: RE2 has no lookahead, so the
	// source's ^(?!x)y is kept as and: [not: ^x, ^y].
	Not *Rule `json:"not,omitempty"`

	re    *regexp.Regexp
	lower string // the one string of equals, starts_with, ends_with or contains, lower-cased
}

// UnmarshalJSON reads a rule and compiles its regex, refusing a rule with
// more than one kind or a regex RE2 cannot run.
func (r *Rule) UnmarshalJSON(b []byte) error {
	type plain Rule
	var p plain
	if err := json.Unmarshal(b, &p); err != nil {
		return err
	}
	*r = Rule(p)
	return r.compile()
}

func (r *Rule) compile() error {
	kinds := 0
	for _, set := range []bool{r.Equals != "", r.StartsWith != "", r.EndsWith != "", r.Contains != "", r.Regex != "", r.Or != nil, r.And != nil, r.Not != nil} {
		if set {
			kinds++
		}
	}
	if kinds != 1 {
		return errors.New("match: a rule has exactly one of equals, starts_with, ends_with, contains, regex, or, and, not")
	}
	r.lower = strings.ToLower(r.Equals + r.StartsWith + r.EndsWith + r.Contains)
	if r.Regex != "" && r.re == nil {
		re, err := regexp.Compile(r.Regex)
		if err != nil {
			return fmt.Errorf("match: regex %q: %w", r.Regex, err)
		}
		r.re = re
	}
	if r.Not != nil {
		if err := r.Not.compile(); err != nil {
			return err
		}
	}
	for _, sub := range [][]Rule{r.Or, r.And} {
		for i := range sub {
			if err := sub[i].compile(); err != nil {
				return err
			}
		}
	}
	return nil
}

// low is s lower-cased, as compile keeps it (a Rule made without
// UnmarshalJSON lower-cases it on each use).
func (r *Rule) low(s string) string {
	if r.lower != "" {
		return r.lower
	}
	return strings.ToLower(s)
}

// Match reports whether name, already lower-cased, satisfies r.
func (r *Rule) Match(name string) bool {
	switch {
	case r.Equals != "":
		return name == r.low(r.Equals)
	case r.StartsWith != "":
		return strings.HasPrefix(name, r.low(r.StartsWith))
	case r.EndsWith != "":
		return strings.HasSuffix(name, r.low(r.EndsWith))
	case r.Contains != "":
		return strings.Contains(name, r.low(r.Contains))
	case r.re != nil:
		return r.re.MatchString(name)
	case r.Or != nil:
		for i := range r.Or {
			if r.Or[i].Match(name) {
				return true
			}
		}
		return false
	case r.Not != nil:
		return !r.Not.Match(name)
	case r.And != nil:
		for i := range r.And {
			if !r.And[i].Match(name) {
				return false
			}
		}
		return len(r.And) > 0
	}
	return false
}
