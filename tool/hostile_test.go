package tool_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/lodeworks/lode/tool"
)

// A nil source given to NewRegistry is a mount failure like any other.
func TestNilSourceAtConstruction(t *testing.T) {
	reg := tool.NewRegistry(tool.WithMCPServer(nil), tool.WithSource(&fakeSource{name: "ok", tools: []tool.Tool{{Name: "t"}}}))
	if err := reg.Err(); err == nil || err.Error() != "tool: mount: nil source" {
		t.Fatalf("Err = %v", err)
	}
	if _, ok := tool.MountFailures(reg)["(nil source)"]; !ok {
		t.Fatalf("failures = %v", tool.MountFailures(reg))
	}
	if got := names(reg.Tools()); got != "ok__t" {
		t.Fatalf("tools = %s", got)
	}
}

// eagerSource reports a change from inside OnToolsChanged, as a source
// that learns of one while being mounted may.
type eagerSource struct{ fakeSource }

func (e *eagerSource) OnToolsChanged(fn func()) {
	e.set(tool.Tool{Name: "a"}, tool.Tool{Name: "b"})
	fn()
}

func TestSourceNotifyingWhileMounted(t *testing.T) {
	reg := tool.NewRegistry()
	src := &eagerSource{fakeSource{name: "s", tools: []tool.Tool{{Name: "a"}}}}
	if err := reg.Mount(context.Background(), src); err != nil {
		t.Fatal(err)
	}
	if got := names(reg.Tools()); got != "s__a,s__b" {
		t.Fatalf("tools = %s", got)
	}
}

// gatedSource lists its tools only when the test lets it.
type gatedSource struct {
	fakeSource
	listing chan struct{}
	gate    chan struct{}
}

func (g *gatedSource) Tools(ctx context.Context) ([]tool.Tool, error) {
	if g.gate != nil {
		g.listing <- struct{}{}
		<-g.gate
	}
	return g.fakeSource.Tools(ctx)
}

// A refresh that finishes after its source was unmounted (or mounted
// again) must not bring the old tools back.
func TestRefreshRacingUnmount(t *testing.T) {
	for _, remount := range []bool{false, true} {
		t.Run(fmt.Sprintf("remount=%v", remount), func(t *testing.T) {
			reg := tool.NewRegistry()
			src := &gatedSource{fakeSource: fakeSource{name: "s", tools: []tool.Tool{{Name: "a"}}}}
			if err := reg.Mount(context.Background(), src); err != nil {
				t.Fatal(err)
			}
			notify := src.notify
			src.gate, src.listing = make(chan struct{}), make(chan struct{})
			src.set(tool.Tool{Name: "stale"})
			done := make(chan struct{})
			go func() { notify(); close(done) }()
			<-src.listing
			if err := reg.Unmount("s"); err != nil {
				t.Fatal(err)
			}
			want := ""
			if remount {
				other := &fakeSource{name: "s", tools: []tool.Tool{{Name: "fresh"}}}
				if err := reg.Mount(context.Background(), other); err != nil {
					t.Fatal(err)
				}
				want = "s__fresh"
			}
			close(src.gate)
			<-done
			if got := names(reg.Tools()); got != want {
				t.Fatalf("tools = %q, want %q", got, want)
			}
			if _, ok := reg.Lookup("s__stale"); ok {
				t.Fatal("a stale tool of an unmounted source is callable")
			}
		})
	}
}

// Many changes in a row reach a listener, which always sees the registry
// as it is after them.
func TestListenersSeeTheLatestSnapshot(t *testing.T) {
	reg := tool.NewRegistry()
	seen := make(chan int, 1000)
	reg.(tool.Notifier).OnToolsChanged(func() { seen <- len(reg.Tools()) })
	const n = 200
	for i := range n {
		if err := reg.Register(tool.Tool{Name: fmt.Sprintf("t%03d", i)}, add); err != nil {
			t.Fatal(err)
		}
	}
	for last := 0; last != n; {
		last = <-seen
	}
	if got := len(reg.Tools()); got != n || !strings.HasPrefix(names(reg.Tools()), "t000,t001,") {
		t.Fatalf("%d tools: %.40s", got, names(reg.Tools()))
	}
}

// An *ArgumentsError keeps the decoder's error reachable.
func TestArgumentsErrorUnwraps(t *testing.T) {
	reg := tool.NewRegistry()
	_ = reg.Register(tool.Tool{Name: "add", Schema: addSchema}, add)
	b, _ := reg.Lookup("add")
	cases := []struct {
		raw    string
		target any
	}{
		{`{"a":1,`, new(*json.SyntaxError)},
		{`{"a":1}x`, new(*json.SyntaxError)},
		{`{"a":1e400,"b":1}`, new(*json.UnmarshalTypeError)},
	}
	for _, c := range cases {
		_, err := b.Decode(c.raw)
		if !errors.As(err, new(*tool.ArgumentsError)) || !errors.As(err, c.target) {
			t.Errorf("Decode(%s) = %v (%T), want an *ArgumentsError wrapping %T", c.raw, err, err, c.target)
		}
	}
}

// ctxSource lists its tools only while the context it is given is live.
type ctxSource struct{ fakeSource }

func (c *ctxSource) Tools(ctx context.Context) ([]tool.Tool, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return c.fakeSource.Tools(ctx)
}

func TestZeroMountTimeoutMeansDefault(t *testing.T) {
	for _, d := range []time.Duration{0, -time.Second} {
		reg := tool.NewRegistry(tool.WithMountTimeout(d), tool.WithSource(&ctxSource{fakeSource{name: "s", tools: []tool.Tool{{Name: "t"}}}}))
		if err := reg.Err(); err != nil || names(reg.Tools()) != "s__t" {
			t.Fatalf("WithMountTimeout(%v): %v, tools %s", d, err, names(reg.Tools()))
		}
	}
}
