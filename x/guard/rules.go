package guard

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/lodeworks/lode/loop"
)

// Rule is a guard given as data, as lode.yaml's guards.rules list writes
// it. It stops content that matches Match, or contains one of Contains
// (case-insensitive), or is longer than MaxBytes.
type Rule struct {
	Name string `json:"name" yaml:"name"`
	// At lists the checkpoints: input, call, result, output; none means
	// all four.
	At []string `json:"at,omitempty" yaml:"at,omitempty"`
	// Tools limits call and result checks to these tools (names as
	// mounted, or a source's name for all its tools).
	Tools    []string `json:"tools,omitempty" yaml:"tools,omitempty"`
	Match    string   `json:"match,omitempty" yaml:"match,omitempty"`
	Contains []string `json:"contains,omitempty" yaml:"contains,omitempty"`
	MaxBytes int      `json:"max_bytes,omitempty" yaml:"max_bytes,omitempty"`
	// Reason is told to the person whose turn the rule stopped.
	Reason string `json:"reason,omitempty" yaml:"reason,omitempty"`
}

// ErrRule is what every error of Rule.Guard matches.
var ErrRule = errors.New("guard: bad rule")

// Guard checks the rule and returns its guard.
func (r Rule) Guard() (*Guard, error) {
	bad := func(format string, a ...any) error {
		return fmt.Errorf("%w %q: %s", ErrRule, r.Name, fmt.Sprintf(format, a...))
	}
	if r.Name == "" {
		return nil, fmt.Errorf("%w: a rule has no name", ErrRule)
	}
	for _, at := range r.At {
		if !slices.Contains(Checkpoints, at) {
			return nil, bad("at %q: want input, call, result or output", at)
		}
	}
	if r.Match == "" && len(r.Contains) == 0 && r.MaxBytes <= 0 {
		return nil, bad("it stops nothing: give match, contains or max_bytes")
	}
	if r.MaxBytes < 0 {
		return nil, bad("max_bytes %d: want 1 or more", r.MaxBytes)
	}
	var re *regexp.Regexp
	if r.Match != "" {
		var err error
		if re, err = regexp.Compile("(?i)" + r.Match); err != nil {
			return nil, bad("match %q: %v", r.Match, err)
		}
	}
	phrases := make([]string, 0, len(r.Contains))
	for _, p := range r.Contains {
		if strings.TrimSpace(p) == "" {
			return nil, bad("contains an empty phrase")
		}
		phrases = append(phrases, strings.ToLower(p))
	}
	reason := func(why string) string {
		if r.Reason != "" {
			return r.Reason
		}
		return why
	}
	return New(r.Name, func(_ context.Context, c loop.Check) (string, error) {
		if !forTool(c, r.Tools) {
			return "", nil
		}
		text := Content(c)
		if r.MaxBytes > 0 && len(text) > r.MaxBytes {
			return reason(fmt.Sprintf("the %s is %d bytes, over the %d allowed", what(c.At), len(text), r.MaxBytes)), nil
		}
		if re != nil && re.MatchString(text) {
			return reason(fmt.Sprintf("the %s matches %s", what(c.At), r.Match)), nil
		}
		if len(phrases) > 0 {
			lower := strings.ToLower(text)
			for i, p := range phrases {
				if strings.Contains(lower, p) {
					return reason(fmt.Sprintf("the %s contains %q", what(c.At), r.Contains[i])), nil
				}
			}
		}
		return "", nil
	}, r.At...), nil
}
