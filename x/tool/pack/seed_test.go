package pack_test

import (
	"context"
	"errors"
	"testing"

	"github.com/lodeworks/lode/tool"
	"github.com/lodeworks/lode/x/tool/pack"
)

// TestSeedMessages pins, word for word, every error message the pack
// model specifies (the "Tool packs" seed). These messages carry no
// "pack: " prefix: they read exactly as the model words them, and each
// still matches its sentinel.
func TestSeedMessages(t *testing.T) {
	ctx := context.Background()
	catalog := func(t *testing.T, packs ...pack.Pack) *pack.Catalog {
		t.Helper()
		c, err := pack.NewCatalog(packs...)
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	cases := []struct {
		name string
		// seed is the message as the model gives it, <name> and <pack>
		// standing for the names in the case.
		seed string
		want string
		is   error
		err  func(t *testing.T) error
	}{
		{
			name: "register: a different pack claims a taken name",
			seed: "tool provider already registered for name: <name>",
			want: "tool provider already registered for name: jira",
			is:   pack.ErrAlreadyRegistered,
			err: func(t *testing.T) error {
				c := catalog(t, &fakePack{name: "jira"})
				return c.Register(&fakePack{name: "jira"})
			},
		},
		{
			name: "new catalog: two packs under one name",
			seed: "tool provider already registered for name: <name>",
			want: "tool provider already registered for name: echo",
			is:   pack.ErrAlreadyRegistered,
			err: func(t *testing.T) error {
				_, err := pack.NewCatalog(echoPack(), echoPack())
				return err
			},
		},
		{
			name: "validate: tools: names a pack not registered",
			seed: "unsupported tool pack: <name>",
			want: "unsupported tool pack: jira",
			is:   pack.ErrUnknownPack,
			err: func(t *testing.T) error {
				return catalog(t, echoPack()).Validate(pack.Settings{Tools: pack.ToolsMap{{Name: "jira"}}})
			},
		},
		{
			name: "mount: a default pack not registered",
			seed: "unsupported tool pack: <name>",
			want: "unsupported tool pack: linear",
			is:   pack.ErrUnknownPack,
			err: func(t *testing.T) error {
				_, err := catalog(t, echoPack()).Mount(ctx, tool.NewRegistry(), pack.Settings{Defaults: []string{"linear"}})
				return err
			},
		},
		{
			name: "validate: options to a pack without a validator",
			seed: `tools.<pack> is not supported by the "<pack>" pack`,
			want: `tools.plain is not supported by the "plain" pack`,
			is:   pack.ErrNoOptions,
			err: func(t *testing.T) error {
				c := catalog(t, &fakePack{name: "plain"})
				return c.Validate(pack.Settings{Tools: pack.ToolsMap{{Name: "plain", Options: map[string]any{"a": 1}}}})
			},
		},
		{
			name: "validate: options to a bundle built without Validate",
			seed: `tools.<pack> is not supported by the "<pack>" pack`,
			want: `tools.echo is not supported by the "echo" pack`,
			is:   pack.ErrNoOptions,
			err: func(t *testing.T) error {
				settings, err := pack.ParseConfig([]byte("tools:\n  echo:\n    volume: 11\n"))
				if err != nil {
					t.Fatal(err)
				}
				return catalog(t, echoPack()).Validate(settings)
			},
		},
		{
			name: "mount: two packs declare one tool name",
			seed: `tool name collision: <name> is declared by both the "<a>" and "<b>" packs`,
			want: `tool name collision: shared is declared by both the "a" and "b" packs`,
			is:   tool.ErrNameTaken,
			err: func(t *testing.T) error {
				c := catalog(t, &fakePack{name: "a", specs: []string{"shared"}}, &fakePack{name: "b", specs: []string{"shared"}})
				_, err := c.Router(ctx, pack.Settings{Defaults: []string{"a", "b"}})
				return err
			},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.err(t)
			if err == nil {
				t.Fatalf("no error, want %q", tc.want)
			}
			if got := err.Error(); got != tc.want {
				t.Errorf("message = %q, want %q (the seed: %s)", got, tc.want, tc.seed)
			}
			if !errors.Is(err, tc.is) {
				t.Errorf("errors.Is(%v, %v) = false", err, tc.is)
			}
		})
	}
}
