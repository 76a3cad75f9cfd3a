package skills

import (
	"context"
	"fmt"
	"strings"

	"github.com/lodeworks/lode/tool"
)

// LoadArgs are the arguments of the load tool.
type LoadArgs struct {
	Name string `json:"name" jsonschema_description:"The skill's name, as list gives it"`
}

// ReadArgs are the arguments of the read tool.
type ReadArgs struct {
	Name string `json:"name" jsonschema_description:"The skill's name"`
	Path string `json:"path" jsonschema_description:"A file in the skill's folder, relative to it (load lists them)"`
}

// ListArgs are the arguments of the list tool: none.
type ListArgs struct{}

// Tools lists list, load and read.
func (s *Skills) Tools(context.Context) ([]tool.Tool, error) {
	listSchema, err := tool.SchemaFor[ListArgs]()
	if err != nil {
		return nil, err
	}
	loadSchema, err := tool.SchemaFor[LoadArgs]()
	if err != nil {
		return nil, err
	}
	readSchema, err := tool.SchemaFor[ReadArgs]()
	if err != nil {
		return nil, err
	}
	ro := tool.Hints{ReadOnly: true, Idempotent: true}
	return []tool.Tool{
		{Name: s.prefix + "list", Description: "List the skills: instructions for particular tasks, one line each with when to use it.", Schema: listSchema, Hints: ro},
		{Name: s.prefix + "load", Description: "Load a skill's instructions by name, and see the files in its folder. Load a skill before doing the task it describes.", Schema: loadSchema, Hints: ro},
		{Name: s.prefix + "read", Description: "Read a file from a skill's folder, by a path relative to it.", Schema: readSchema, Hints: ro},
	}, nil
}

// Call runs list, load or read. An unknown skill or a refused path is a
// *tool.Result with IsError set.
func (s *Skills) Call(ctx context.Context, name string, args map[string]any) (any, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	fail := func(format string, a ...any) (any, error) {
		return &tool.Result{IsError: true, Content: fmt.Sprintf(format, a...)}, nil
	}
	str := func(key string) (string, bool) {
		v, ok := args[key].(string)
		return v, ok && v != ""
	}
	base, ok := strings.CutPrefix(name, s.prefix)
	if !ok {
		base = ""
	}
	switch base {
	case "list":
		if len(s.list) == 0 {
			return &tool.Result{Content: "(no skills are installed)", Value: []Skill{}}, nil
		}
		return &tool.Result{Content: strings.TrimSuffix(s.listing(), "\n"), Value: s.List()}, nil
	case "load":
		skill, ok := str("name")
		if !ok {
			return fail(`load needs "name", a skill's name`)
		}
		e, err := s.lookup(skill)
		if err != nil {
			return fail("%v", err)
		}
		files, more, err := s.Files(skill)
		if err != nil {
			return fail("%v", err)
		}
		var sb strings.Builder
		fmt.Fprintf(&sb, "# Skill: %s\n\n%s", e.Name, e.body)
		if len(files) > 0 {
			if !strings.HasSuffix(e.body, "\n") {
				sb.WriteByte('\n')
			}
			fmt.Fprintf(&sb, "\nFiles in this skill's folder (read them with %s and the path):\n", s.toolName("read"))
			for _, f := range files {
				fmt.Fprintf(&sb, "- %s\n", f)
			}
			if more {
				sb.WriteString("- … (more files not listed)\n")
			}
		}
		return &tool.Result{Content: sb.String(), Value: e.Skill}, nil
	case "read":
		skill, ok := str("name")
		if !ok {
			return fail(`read needs "name", a skill's name`)
		}
		rel, ok := args["path"].(string)
		if !ok {
			return fail(`read needs "path", a file path relative to the skill's folder`)
		}
		text, err := s.ReadFile(skill, rel)
		if err != nil {
			return fail("%v", err)
		}
		return &tool.Result{Content: text}, nil
	}
	return fail("the %s source has no tool %q; its tools are %slist, %sload and %sread", s.name, name, s.prefix, s.prefix, s.prefix)
}
