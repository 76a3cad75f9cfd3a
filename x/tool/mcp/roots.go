package mcp

import (
	"net/url"
	"path/filepath"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// WithRoots announces dirs to the server as the roots it may work in
// (roots/list), each as a file URI named after its last element. A
// relative directory is made absolute against the working directory at
// NewClient. Without it the client offers no roots capability; with it
// and no directories, it offers the capability and an empty list.
func WithRoots(dirs ...string) Option {
	return func(c *config) {
		c.features.rootsSet = true
		for _, d := range dirs {
			abs, err := filepath.Abs(d)
			if d == "" || err != nil {
				c.fail("WithRoots: %q is not a directory path", d)
				continue
			}
			u := url.URL{Scheme: "file", Path: filepath.ToSlash(abs)}
			c.features.roots = append(c.features.roots, &sdk.Root{URI: u.String(), Name: filepath.Base(abs)})
		}
	}
}
