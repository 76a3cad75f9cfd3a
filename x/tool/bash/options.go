package bash

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"
)

var optionKeys = []string{"dir", "env", "max_output", "max_timeout", "shell", "timeout", "tool_prefix"}

// FromOptions builds a Bash from pack options: dir (required: the sandbox
// directory), env (a map of strings), timeout and max_timeout (a duration
// such as "30s", or a number of seconds), max_output (bytes), shell and
// tool_prefix.
func FromOptions(options map[string]any) (*Bash, error) {
	sb, opts, err := parseOptions(options)
	if err != nil {
		return nil, err
	}
	return New(sb, opts...)
}

// ValidateOptions checks pack options, in the shape FromOptions takes,
// without building anything. Empty options are valid: the shell is then
// used as it was built.
func (b *Bash) ValidateOptions(options map[string]any) error {
	if len(options) == 0 {
		return nil
	}
	_, _, err := parseOptions(options)
	return err
}

func parseOptions(options map[string]any) (Sandbox, []Option, error) {
	var (
		sb   Sandbox
		opts []Option
	)
	for _, k := range slices.Sorted(maps.Keys(options)) {
		v := options[k]
		switch k {
		case "tool_prefix":
			p, ok := v.(string)
			if !ok {
				return sb, nil, fmt.Errorf("bash: option tool_prefix must be a string, got %T", v)
			}
			opts = append(opts, WithToolPrefix(p))
		case "dir", "shell":
			s, ok := v.(string)
			if !ok || s == "" {
				return sb, nil, fmt.Errorf("bash: option %s must be a path, got %v", k, v)
			}
			if k == "dir" {
				sb.Dir = s
			} else {
				opts = append(opts, WithShell(s))
			}
		case "env":
			m, ok := v.(map[string]any)
			if !ok {
				if ms, isStrings := v.(map[string]string); isStrings {
					sb.Env = maps.Clone(ms)
					continue
				}
				return sb, nil, fmt.Errorf("bash: option env must be a map of names to strings, got %T", v)
			}
			sb.Env = make(map[string]string, len(m))
			for name, val := range m {
				s, ok := val.(string)
				if !ok {
					return sb, nil, fmt.Errorf("bash: option env.%s must be a string, got %T", name, val)
				}
				sb.Env[name] = s
			}
		case "timeout", "max_timeout":
			d, err := duration(k, v)
			if err != nil {
				return sb, nil, err
			}
			if k == "timeout" {
				opts = append(opts, WithTimeout(d))
			} else {
				opts = append(opts, WithMaxTimeout(d))
			}
		case "max_output":
			n, ok := number(v)
			if !ok || n != float64(int(n)) || n <= 0 || n > 1<<30 {
				return sb, nil, fmt.Errorf("bash: option max_output must be an integer from 1 to %d, got %v", 1<<30, v)
			}
			opts = append(opts, WithMaxOutput(int(n)))
		default:
			return sb, nil, fmt.Errorf("bash: unknown option %q; the options are %s", k, strings.Join(optionKeys, ", "))
		}
	}
	if sb.Dir == "" {
		return sb, nil, fmt.Errorf("bash: option dir is required: the sandbox directory commands run in")
	}
	return sb, opts, nil
}

func number(v any) (float64, bool) {
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

func duration(key string, v any) (time.Duration, error) {
	if s, ok := v.(string); ok {
		d, err := time.ParseDuration(s)
		if err != nil || d <= 0 {
			return 0, fmt.Errorf("bash: option %s must be a positive duration such as \"30s\", got %q", key, s)
		}
		return d, nil
	}
	n, ok := number(v)
	if !ok || n <= 0 || n > (24*time.Hour).Seconds() {
		return 0, fmt.Errorf("bash: option %s must be a duration such as \"30s\" or a number of seconds up to a day, got %v", key, v)
	}
	return time.Duration(n * float64(time.Second)), nil
}
