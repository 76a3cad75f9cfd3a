package pack_test

import (
	"context"
	"fmt"

	"github.com/lodeworks/lode/tool"
	"github.com/lodeworks/lode/x/tool/pack"
)

// sayArgs are the arguments of echo_say; the schema the model sees is
// reflected from them.
type sayArgs struct {
	Message string `json:"message" jsonschema:"description=The message to return."`
}

// echoPack is the seed's echo pack: one tool that returns its argument.
func echoPack() *pack.Bundle {
	return pack.MustNew("echo",
		pack.Tool("echo_say", "Return the given message unchanged. Args: message.",
			func(ctx context.Context, in sayArgs) (*tool.Result, error) {
				if in.Message == "" {
					return pack.Failure("'message' must not be empty"), nil
				}
				return pack.Success(map[string]any{"message": in.Message}), nil
			}),
	)
}

// Writing a pack: build it, register it in a catalog, turn it on with
// "echo: {}" and call its tool through the registry.
func Example_writingAPack() {
	catalog, _ := pack.NewCatalog(echoPack())
	settings, _ := pack.ParseConfig([]byte("tools:\n  echo: {}\n"))

	ctx := context.Background()
	reg := tool.NewRegistry()
	if _, err := catalog.Mount(ctx, reg, settings); err != nil {
		fmt.Println(err)
		return
	}
	b, _ := reg.Lookup("echo_say")
	out, _ := b.Call(ctx, tool.NoSandbox(), `{"message":"hello"}`)
	fmt.Println(out.(*tool.Result).Value)

	out, _ = b.Call(ctx, tool.NoSandbox(), `{"message":""}`)
	fmt.Println(out.(*tool.Result).IsError, out.(*tool.Result).Content)
	// Output:
	// map[message:hello]
	// true 'message' must not be empty
}

// Mounting packs from a tools: map: defaults first, then the map's keys in
// the order written; a pack given options it does not take fails at
// start-up with the seed's message.
func ExampleCatalog_Mount() {
	shout := pack.MustNew("shout",
		pack.Tool("shout_say", "Say it loud.",
			func(ctx context.Context, in sayArgs) (string, error) { return in.Message + "!", nil }),
	)
	catalog, _ := pack.NewCatalog(echoPack(), shout)

	settings, _ := pack.ParseConfig([]byte(`
model: whatever        # other keys belong to the caller
tools:
  shout: {}
  echo:
`))
	settings.Defaults = []string{"echo"}
	fmt.Println(settings.Packs())

	reg := tool.NewRegistry()
	r, err := catalog.Mount(context.Background(), reg, settings)
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, t := range reg.Tools() {
		owner, _ := r.Owner(t.Name)
		fmt.Println(t.Name, "from", owner)
	}

	bad, _ := pack.ParseConfig([]byte("tools:\n  echo:\n    volume: 11\n"))
	fmt.Println(catalog.Validate(bad))
	// Output:
	// [echo shout]
	// echo_say from echo
	// shout_say from shout
	// tools.echo is not supported by the "echo" pack
}
