package skills

import (
	"fmt"
	"maps"
	"slices"
	"strings"
)

var optionKeys = []string{"dir", "dirs", "max_file_bytes", "tool_prefix"}

// FromOptions builds a skills source from pack options: dir (a directory
// of skills) and/or dirs (a list of them), max_file_bytes and tool_prefix. Extra
// sources — the skills packs ship — are added with more options.
func FromOptions(options map[string]any, more ...Option) (*Skills, error) {
	opts, err := parseOptions(options)
	if err != nil {
		return nil, err
	}
	return New(append(opts, more...)...)
}

// ValidateOptions checks pack options without reading anything.
func (s *Skills) ValidateOptions(options map[string]any) error {
	_, err := parseOptions(options)
	return err
}

func parseOptions(options map[string]any) ([]Option, error) {
	var opts []Option
	for _, k := range slices.Sorted(maps.Keys(options)) {
		v := options[k]
		switch k {
		case "dir":
			s, ok := v.(string)
			if !ok || s == "" {
				return nil, fmt.Errorf("skills: option dir must be a directory path, got %v", v)
			}
			opts = append(opts, FromDir(s))
		case "dirs":
			list, ok := v.([]any)
			if !ok {
				if ss, isStrings := v.([]string); isStrings {
					for _, s := range ss {
						list = append(list, s)
					}
					ok = true
				}
			}
			if !ok {
				return nil, fmt.Errorf("skills: option dirs must be a list of directory paths, got %T", v)
			}
			for i, item := range list {
				s, ok := item.(string)
				if !ok || s == "" {
					return nil, fmt.Errorf("skills: option dirs[%d] must be a directory path, got %v", i, item)
				}
				opts = append(opts, FromDir(s))
			}
		case "tool_prefix":
			p, ok := v.(string)
			if !ok {
				return nil, fmt.Errorf("skills: option tool_prefix must be a string, got %T", v)
			}
			opts = append(opts, WithToolPrefix(p))
		case "max_file_bytes":
			var n float64
			switch x := v.(type) {
			case int:
				n = float64(x)
			case int64:
				n = float64(x)
			case float64:
				n = x
			default:
				n = -1
			}
			if n != float64(int64(n)) || n <= 0 || n > 1<<30 {
				return nil, fmt.Errorf("skills: option max_file_bytes must be an integer from 1 to %d, got %v", 1<<30, v)
			}
			opts = append(opts, WithMaxFileBytes(int64(n)))
		default:
			return nil, fmt.Errorf("skills: unknown option %q; the options are %s", k, strings.Join(optionKeys, ", "))
		}
	}
	return opts, nil
}
