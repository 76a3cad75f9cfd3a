package skills

import "github.com/lodeworks/lode/x/tool/internal/optparse"

var optionSet = optparse.Set{Pack: "skills", Known: []string{"allow_hard_links", "dir", "dirs", "max_file_bytes", "tool_prefix"}}

// FromOptions builds a skills source from pack options: dir (a directory
// of skills) and/or dirs (a list of them), max_file_bytes, allow_hard_links
// and tool_prefix. Extra sources — the skills packs ship — are added with
// more options.
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
	err := optionSet.Each(options, func(k string, v any) error {
		switch k {
		case "dir":
			s, err := optionSet.Path(k, v, "a directory path")
			opts = append(opts, FromDir(s))
			return err
		case "dirs":
			dirs, err := dirList(v)
			for _, d := range dirs {
				opts = append(opts, FromDir(d))
			}
			return err
		case "tool_prefix":
			p, err := optionSet.String(k, v)
			opts = append(opts, WithToolPrefix(p))
			return err
		case "allow_hard_links":
			b, err := optionSet.Bool(k, v)
			if b {
				opts = append(opts, AllowHardLinks())
			}
			return err
		}
		n, err := optionSet.InRange(k, v, 1<<30) // max_file_bytes
		opts = append(opts, WithMaxFileBytes(n))
		return err
	})
	if err != nil {
		return nil, err
	}
	return opts, nil
}

func dirList(v any) ([]string, error) {
	var list []any
	switch x := v.(type) {
	case []any:
		list = x
	case []string:
		for _, s := range x {
			list = append(list, s)
		}
	default:
		return nil, optionSet.Errorf("option dirs must be a list of directory paths, got %T", v)
	}
	dirs := make([]string, len(list))
	for i, item := range list {
		s, ok := item.(string)
		if !ok || s == "" {
			return nil, optionSet.Errorf("option dirs[%d] must be a directory path, got %v", i, item)
		}
		dirs[i] = s
	}
	return dirs, nil
}
