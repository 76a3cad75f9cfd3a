package pack

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"strings"

	"github.com/lodeworks/lode/tool"
)

// Bundle is a pack built from Go functions by New.
type Bundle struct {
	name     string
	reg      tool.Registry
	order    []string
	skills   fs.FS
	validate func(map[string]any) error
}

// Part is one piece of a pack built by New: a tool (Tool, Spec), its
// skills (Skills) or its option validator (Validate).
type Part interface {
	apply(*Bundle) error
}

type partFunc func(*Bundle) error

func (f partFunc) apply(b *Bundle) error { return f(b) }

// Tool is a typed tool of a pack: its schema is reflected from In (see
// tool.SchemaFor) and arguments are checked against it before fn runs.
// Return Failure for a failure the model should read; an error fn returns
// becomes a Failure carrying its message, since a function in the process
// has no transport to fail.
func Tool[In, Out any](name, description string, fn func(ctx context.Context, in In) (Out, error), opts ...tool.FuncOption) Part {
	return partFunc(func(b *Bundle) error {
		if err := b.checkName(name); err != nil {
			return err
		}
		if err := tool.RegisterFunc(b.reg, name, description, fn, opts...); err != nil {
			return err
		}
		b.order = append(b.order, name)
		return nil
	})
}

// Spec is a tool with a hand-written description t (name, description,
// schema) run by fn with the decoded arguments, for tools whose schema is
// not a Go struct. Arguments are checked against t.Schema before fn runs.
func Spec(t tool.Tool, fn func(ctx context.Context, args map[string]any) (any, error)) Part {
	return partFunc(func(b *Bundle) error {
		if err := b.checkName(t.Name); err != nil {
			return err
		}
		if fn == nil {
			return fmt.Errorf("tool %q: nil function", t.Name)
		}
		if err := tool.ValidateSchema(t.Schema); err != nil {
			return fmt.Errorf("tool %q: %w", t.Name, err)
		}
		err := b.reg.Register(t, func(ctx context.Context, _ tool.Sandbox, args map[string]any) (any, error) {
			return fn(ctx, args)
		})
		if err != nil {
			return err
		}
		b.order = append(b.order, t.Name)
		return nil
	})
}

// checkName refuses a name no model API accepts, or one the pack already
// has, with an error about the pack (not the registry inside it).
func (b *Bundle) checkName(name string) error {
	if err := tool.ValidateName(name); err != nil {
		return err
	}
	if slices.Contains(b.order, name) {
		return fmt.Errorf("tool %q is given twice", name)
	}
	return nil
}

// Skills ships fsys with the pack: folders each holding a SKILL.md.
func Skills(fsys fs.FS) Part {
	return partFunc(func(b *Bundle) error { b.skills = fsys; return nil })
}

// Validate makes the pack take options, checked at start-up by fn. Without
// it the pack accepts only empty options.
func Validate(fn func(options map[string]any) error) Part {
	return partFunc(func(b *Bundle) error { b.validate = fn; return nil })
}

// New builds a pack named name from parts. A tool name that is invalid or
// given twice, or a schema that is not valid, is an error.
func New(name string, parts ...Part) (*Bundle, error) {
	if strings.TrimSpace(name) == "" {
		return nil, ErrBlankName
	}
	b := &Bundle{name: name, reg: tool.NewRegistry()}
	for _, p := range parts {
		if p == nil {
			continue
		}
		if err := p.apply(b); err != nil {
			return nil, fmt.Errorf("pack %q: %w", name, err)
		}
	}
	return b, nil
}

// MustNew is New for packs defined by the program itself, where an error
// is a bug: it panics.
func MustNew(name string, parts ...Part) *Bundle {
	b, err := New(name, parts...)
	if err != nil {
		panic(err)
	}
	return b
}

// Name returns the pack's name.
func (b *Bundle) Name() string { return b.name }

// Tools lists the pack's tools in the order they were given.
func (b *Bundle) Tools(context.Context) ([]tool.Tool, error) {
	out := make([]tool.Tool, 0, len(b.order))
	for _, n := range b.order {
		bd, _ := b.reg.Lookup(n)
		out = append(out, bd.Tool)
	}
	return out, nil
}

// Call runs the tool called name. An unknown name, arguments that break
// the schema and a function's error are Failures; an error is returned
// only when ctx is done.
func (b *Bundle) Call(ctx context.Context, name string, args map[string]any) (any, error) {
	bd, ok := b.reg.Lookup(name)
	if !ok {
		return Failuref("unknown tool: %s; the %q pack has %s", name, b.name, strings.Join(b.order, ", ")), nil
	}
	if args == nil {
		args = map[string]any{}
	}
	raw, err := json.Marshal(args)
	if err != nil {
		return Failuref("arguments for %s cannot be encoded as JSON: %v", name, err), nil
	}
	v, err := bd.Call(ctx, tool.NoSandbox(), string(raw))
	if err != nil {
		if ctxErr := ctx.Err(); ctxErr != nil && errors.Is(err, ctxErr) {
			return nil, err
		}
		return Failure(err.Error()), nil
	}
	return v, nil
}

// ValidateOptions checks options with the pack's validator; a pack built
// without Validate refuses non-empty options with ErrNoOptions.
func (b *Bundle) ValidateOptions(options map[string]any) error {
	if b.validate == nil {
		if len(options) > 0 {
			return ErrNoOptions
		}
		return nil
	}
	return b.validate(options)
}

// Skills returns the skills the pack ships, or nil.
func (b *Bundle) Skills() fs.FS { return b.skills }
