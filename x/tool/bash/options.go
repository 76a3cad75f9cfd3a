package bash

import (
	"maps"
	"slices"
	"time"

	"github.com/lodeworks/lode/x/tool/internal/optparse"
)

var optionSet = optparse.Set{Pack: "bash", Known: []string{"dir", "env", "max_output", "max_timeout", "shell", "timeout", "tool_prefix"}}

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
	err := optionSet.Each(options, func(k string, v any) error {
		switch k {
		case "tool_prefix":
			p, err := optionSet.String(k, v)
			opts = append(opts, WithToolPrefix(p))
			return err
		case "dir":
			s, err := optionSet.Path(k, v, "a path")
			sb.Dir = s
			return err
		case "shell":
			s, err := optionSet.Path(k, v, "a path")
			opts = append(opts, WithShell(s))
			return err
		case "env":
			env, err := environment(v)
			sb.Env = env
			return err
		case "timeout", "max_timeout":
			d, err := duration(k, v)
			if k == "timeout" {
				opts = append(opts, WithTimeout(d))
			} else {
				opts = append(opts, WithMaxTimeout(d))
			}
			return err
		}
		n, err := optionSet.InRange(k, v, 1<<30) // max_output
		opts = append(opts, WithMaxOutput(int(n)))
		return err
	})
	if err != nil {
		return sb, nil, err
	}
	if sb.Dir == "" {
		return sb, nil, optionSet.Required("dir", "the sandbox directory commands run in")
	}
	return sb, opts, nil
}

func environment(v any) (map[string]string, error) {
	if ms, ok := v.(map[string]string); ok {
		return maps.Clone(ms), nil
	}
	m, ok := v.(map[string]any)
	if !ok {
		return nil, optionSet.Errorf("option env must be a map of names to strings, got %T", v)
	}
	env := make(map[string]string, len(m))
	for _, name := range slices.Sorted(maps.Keys(m)) {
		val := m[name]
		s, ok := val.(string)
		if !ok {
			return nil, optionSet.Errorf("option env.%s must be a string, got %T", name, val)
		}
		env[name] = s
	}
	return env, nil
}

// maxOptionDuration bounds timeout and max_timeout, whichever way given.
const maxOptionDuration = 24 * time.Hour

func duration(key string, v any) (time.Duration, error) {
	var d time.Duration
	if s, ok := v.(string); ok {
		var err error
		if d, err = time.ParseDuration(s); err != nil || d <= 0 {
			return 0, optionSet.Errorf("option %s must be a positive duration such as \"30s\", got %q", key, s)
		}
	} else if n, ok := optparse.Number(v); ok && n > 0 {
		d = seconds(n)
	}
	if d <= 0 || d > maxOptionDuration {
		return 0, optionSet.Errorf("option %s must be a duration such as \"30s\" or a number of seconds up to a day, got %v", key, v)
	}
	return d, nil
}
