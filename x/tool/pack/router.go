package pack

import (
	"context"
	"fmt"
	"io/fs"
	"net/http"
	"strings"

	"github.com/lodeworks/lode/tool"
)

// RouterName is the source name a Router mounts under. Its tools are
// mounted flat, so the name shows only as the owner in clash errors.
const RouterName = "packs"

// Router is the mounted packs as one tool.RemoteSource: the flat namespace
// a registry mounts and an MCP server serves. It lists every mounted tool
// and routes each call to the first pack that declares it, with the
// settings and HTTP client in the call's context.
type Router struct {
	settings Settings
	packs    []Pack
	tools    []tool.Tool
	owner    map[string]Pack
}

func newRouter(ctx context.Context, settings Settings, packs []Pack) (*Router, error) {
	r := &Router{settings: settings, packs: packs, owner: make(map[string]Pack)}
	for _, p := range packs {
		var specs []tool.Tool
		if sp, ok := p.(SpecProvider); ok {
			specs = sp.ToolSpecs(settings)
		} else {
			var err error
			if specs, err = p.Tools(WithSettings(ctx, settings)); err != nil {
				return nil, fmt.Errorf("pack %q: list tools: %w", p.Name(), err)
			}
		}
		for _, t := range specs {
			if prev, ok := r.owner[t.Name]; ok {
				if prev.Name() == p.Name() {
					continue // a pack repeating its own tool
				}
				return nil, &CollisionError{Name: t.Name, First: prev.Name(), Second: p.Name()}
			}
			r.owner[t.Name] = p
			r.tools = append(r.tools, t)
		}
	}
	return r, nil
}

// Name returns RouterName.
func (r *Router) Name() string { return RouterName }

// Tools lists every mounted tool, pack by pack in mount order.
func (r *Router) Tools(context.Context) ([]tool.Tool, error) {
	return append([]tool.Tool(nil), r.tools...), nil
}

// Call routes to the pack that declares name. An unknown name is a
// Failure listing every mounted tool.
func (r *Router) Call(ctx context.Context, name string, args map[string]any) (any, error) {
	p, ok := r.owner[name]
	if !ok {
		names := make([]string, len(r.tools))
		for i, t := range r.tools {
			names[i] = t.Name
		}
		if len(names) == 0 {
			return Failuref("unsupported tool: %s; no tools are mounted", name), nil
		}
		return Failuref("unsupported tool: %s; mounted tools: %s", name, strings.Join(names, ", ")), nil
	}
	ctx = WithSettings(ctx, r.settings)
	if r.settings.HTTPClient != nil {
		if c, _ := ctx.Value(httpClientKey{}).(*http.Client); c == nil {
			ctx = WithHTTPClient(ctx, r.settings.HTTPClient)
		}
	}
	return p.Call(ctx, name, args)
}

// Owner returns the name of the pack that serves the tool name.
func (r *Router) Owner(name string) (string, bool) {
	p, ok := r.owner[name]
	if !ok {
		return "", false
	}
	return p.Name(), true
}

// Packs returns the mounted packs in mount order.
func (r *Router) Packs() []Pack { return append([]Pack(nil), r.packs...) }

// PackSkills is the skills one mounted pack ships.
type PackSkills struct {
	Pack string
	FS   fs.FS
}

// Skills returns the skills of the mounted packs that ship any, in mount
// order.
func (r *Router) Skills() []PackSkills {
	var out []PackSkills
	for _, p := range r.packs {
		if sp, ok := p.(SkillProvider); ok {
			if fsys := sp.Skills(); fsys != nil {
				out = append(out, PackSkills{Pack: p.Name(), FS: fsys})
			}
		}
	}
	return out
}
