package optparse

import (
	"fmt"
	"maps"
	"slices"
	"strings"
)

// Set describes the options one pack takes.
type Set struct {
	// Pack begins every error: "calculator: option …".
	Pack string
	// Known lists the keys the pack takes, in the order the unknown-option
	// error names them.
	Known []string
}

// Errorf returns an error about the pack's options: "<pack>: " and the
// formatted text.
func (s Set) Errorf(format string, args ...any) error {
	return fmt.Errorf("%s: %s", s.Pack, fmt.Sprintf(format, args...))
}

// Each calls fn with every option in key order and stops at the first
// error. A key that is not in Known stops it with the error of Unknown.
func (s Set) Each(options map[string]any, fn func(key string, v any) error) error {
	for _, k := range slices.Sorted(maps.Keys(options)) {
		if !slices.Contains(s.Known, k) {
			return s.Unknown(k)
		}
		if err := fn(k, options[k]); err != nil {
			return err
		}
	}
	return nil
}

// Unknown is the error for a key the pack does not take; it lists the
// keys it does.
func (s Set) Unknown(key string) error {
	return s.Errorf("unknown option %q; the options are %s", key, strings.Join(s.Known, ", "))
}

// Required is the error for a missing option: why says what it is for.
func (s Set) Required(key, why string) error {
	return s.Errorf("option %s is required: %s", key, why)
}

// String reads a string; an empty one is accepted.
func (s Set) String(key string, v any) (string, error) {
	str, ok := v.(string)
	if !ok {
		return "", s.Errorf("option %s must be a string, got %T", key, v)
	}
	return str, nil
}

// Path reads a non-empty string; what names it in the error ("a
// directory path").
func (s Set) Path(key string, v any, what string) (string, error) {
	str, ok := v.(string)
	if !ok || str == "" {
		return "", s.Errorf("option %s must be %s, got %v", key, what, v)
	}
	return str, nil
}

// Bool reads true or false.
func (s Set) Bool(key string, v any) (bool, error) {
	b, ok := v.(bool)
	if !ok {
		return false, s.Errorf("option %s must be true or false, got %v", key, v)
	}
	return b, nil
}

// PositiveInt reads a whole number from 1 to max, given as any numeric
// type Number takes (so 3.0 is 3, 1.5 is refused). A value that is not a
// number is refused as "a positive integer", one out of range with the
// range.
func (s Set) PositiveInt(key string, v any, max int64) (int64, error) {
	if _, ok := Number(v); !ok {
		return 0, s.Errorf("option %s must be a positive integer, got %T", key, v)
	}
	return s.InRange(key, v, max)
}

// InRange reads a whole number from 1 to max like PositiveInt, but refuses
// a value of any other type with the range too.
func (s Set) InRange(key string, v any, max int64) (int64, error) {
	n, ok := Number(v)
	if !ok || n != float64(int64(n)) || n <= 0 || n > float64(max) {
		return 0, s.Errorf("option %s must be an integer from 1 to %d, got %v", key, max, v)
	}
	return int64(n), nil
}

// Number returns v as a float64 when it is a number as YAML or JSON
// decoding produces one (int, int64, uint64 or float64).
func Number(v any) (float64, bool) {
	switch x := v.(type) {
	case int:
		return float64(x), true
	case int64:
		return float64(x), true
	case uint64:
		return float64(x), true
	case float64:
		return x, true
	}
	return 0, false
}
