package pack

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"

	"github.com/lodeworks/lode/tool"
)

// Catalog holds the packs an application offers, keyed by name. Settings
// then choose which of them mount. The zero value is not usable; call
// NewCatalog.
type Catalog struct {
	mu    sync.RWMutex
	packs map[string]Pack
}

// NewCatalog returns a catalog holding packs, registered in order.
func NewCatalog(packs ...Pack) (*Catalog, error) {
	c := &Catalog{packs: make(map[string]Pack)}
	for _, p := range packs {
		if err := c.Register(p); err != nil {
			return nil, err
		}
	}
	return c, nil
}

// Register adds p under its name. A blank name fails, and so does a second,
// different pack under a taken name; registering the same pack again is a
// no-op.
func (c *Catalog) Register(p Pack) error {
	if p == nil {
		return errors.New("pack: register: nil pack")
	}
	name := p.Name()
	if strings.TrimSpace(name) == "" {
		return ErrBlankName
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if old, ok := c.packs[name]; ok {
		if same(old, p) {
			return nil
		}
		return &exactError{msg: "tool provider already registered for name: " + name, err: ErrAlreadyRegistered}
	}
	c.packs[name] = p
	return nil
}

// same reports whether a and b are one pack. Values of a type that cannot
// be compared are never the same.
func same(a, b Pack) (eq bool) {
	defer func() {
		if recover() != nil {
			eq = false
		}
	}()
	return a == b
}

// Lookup returns the pack registered under name.
func (c *Catalog) Lookup(name string) (Pack, bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	p, ok := c.packs[name]
	return p, ok
}

// Names returns the registered pack names, sorted.
func (c *Catalog) Names() []string {
	c.mu.RLock()
	defer c.mu.RUnlock()
	out := make([]string, 0, len(c.packs))
	for n := range c.packs {
		out = append(out, n)
	}
	slices.Sort(out)
	return out
}

// Validate checks settings at start-up: every pack they mount must be
// registered (ErrUnknownPack), and each is handed its options — the ones
// the tools: map gives it, or none — to validate (*OptionsError). A default
// pack is validated too, so one that needs options fails here, not on its
// first call.
func (c *Catalog) Validate(settings Settings) error {
	_, err := c.resolve(settings)
	return err
}

func (c *Catalog) resolve(settings Settings) ([]Pack, error) {
	names := settings.Packs()
	packs := make([]Pack, 0, len(names))
	for _, n := range names {
		p, ok := c.Lookup(n)
		if !ok {
			return nil, &exactError{msg: "unsupported tool pack: " + n, err: ErrUnknownPack}
		}
		opts := settings.Options(n)
		if v, ok := p.(OptionsValidator); ok {
			if err := v.ValidateOptions(opts); err != nil {
				return nil, &OptionsError{Pack: n, Err: err}
			}
		} else if len(opts) > 0 {
			return nil, &OptionsError{Pack: n, Err: ErrNoOptions}
		}
		packs = append(packs, p)
	}
	return packs, nil
}

// Router validates settings (see Validate) and lists the tools of every
// pack they mount into one flat namespace. Two packs declaring one tool
// name fail with a *CollisionError.
func (c *Catalog) Router(ctx context.Context, settings Settings) (*Router, error) {
	packs, err := c.resolve(settings)
	if err != nil {
		return nil, err
	}
	return newRouter(ctx, settings, packs)
}

// Mount builds the Router for settings and mounts it flat into reg, all or
// nothing: on any error reg is left as it was. The router is the source
// named RouterName, so a registry takes one Mount; a tool name already in
// reg fails with the registry's clash error.
func (c *Catalog) Mount(ctx context.Context, reg tool.Registry, settings Settings) (*Router, error) {
	r, err := c.Router(ctx, settings)
	if err != nil {
		return nil, err
	}
	if err := reg.Mount(ctx, r, tool.Flat()); err != nil {
		return nil, err
	}
	return r, nil
}
