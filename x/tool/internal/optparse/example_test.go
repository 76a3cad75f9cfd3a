package optparse_test

import (
	"fmt"

	"github.com/lodeworks/lode/x/tool/internal/optparse"
)

func Example() {
	set := optparse.Set{Pack: "demo", Known: []string{"max_bytes", "root", "tool_prefix"}}
	parse := func(options map[string]any) error {
		return set.Each(options, func(k string, v any) error {
			var err error
			switch k {
			case "root":
				_, err = set.Path(k, v, "a directory path")
			case "tool_prefix":
				_, err = set.String(k, v)
			case "max_bytes":
				_, err = set.PositiveInt(k, v, 1<<20)
			}
			return err
		})
	}
	fmt.Println(parse(map[string]any{"root": "/srv/data", "max_bytes": 4096.0}))
	fmt.Println(parse(map[string]any{"root": "/srv/data", "max_bytes": 0.5}))
	fmt.Println(parse(map[string]any{"root": 3, "writable": true}))
	fmt.Println(parse(map[string]any{"path": "/srv/data"}))
	// Output:
	// <nil>
	// demo: option max_bytes must be an integer from 1 to 1048576, got 0.5
	// demo: option root must be a directory path, got 3
	// demo: unknown option "path"; the options are max_bytes, root, tool_prefix
}
