package tool_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/lodeworks/lode/tool"
)

var addSchema = json.RawMessage(`{"type":"object","properties":{"a":{"type":"number"},"b":{"type":"number"}},"required":["a","b"]}`)

func add(_ context.Context, _ tool.Sandbox, args map[string]any) (any, error) {
	return args["a"].(float64) + args["b"].(float64), nil
}

// fakeSource is a RemoteSource whose tool list the test controls.
type fakeSource struct {
	name   string
	mu     sync.Mutex
	tools  []tool.Tool
	err    error
	notify func()
	calls  []string
}

func (f *fakeSource) Name() string { return f.name }
func (f *fakeSource) Tools(context.Context) ([]tool.Tool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]tool.Tool(nil), f.tools...), f.err
}
func (f *fakeSource) Call(_ context.Context, name string, args map[string]any) (any, error) {
	f.mu.Lock()
	f.calls = append(f.calls, name)
	f.mu.Unlock()
	return fmt.Sprintf("%s:%s got %v", f.name, name, args), nil
}
func (f *fakeSource) OnToolsChanged(fn func()) { f.notify = fn }
func (f *fakeSource) set(tools ...tool.Tool) {
	f.mu.Lock()
	f.tools = tools
	f.mu.Unlock()
}

func names(tools []tool.Tool) string {
	var s []string
	for _, t := range tools {
		s = append(s, t.Name)
	}
	return strings.Join(s, ",")
}

func TestRegisterRules(t *testing.T) {
	long := strings.Repeat("x", 65)
	cases := []struct {
		name    string
		tool    tool.Tool
		fn      tool.ToolFunc
		wantErr string
	}{
		{"ok", tool.Tool{Name: "add", Schema: addSchema}, add, ""},
		{"empty schema is an empty object", tool.Tool{Name: "noargs"}, add, ""},
		{"64 chars ok", tool.Tool{Name: strings.Repeat("y", 64)}, add, ""},
		{"empty name", tool.Tool{}, add, "tool name is empty"},
		{"too long", tool.Tool{Name: long}, add, "the limit is 64"},
		{"space", tool.Tool{Name: "add two"}, add, `has ' ' at byte 3`},
		{"dot", tool.Tool{Name: "a.b"}, add, `has '.' at byte 1`},
		{"unicode", tool.Tool{Name: "ädd"}, add, "only a-z"},
		{"schema not json", tool.Tool{Name: "s1", Schema: json.RawMessage(`{"type":`)}, add, "not valid JSON"},
		{"schema not object type", tool.Tool{Name: "s2", Schema: json.RawMessage(`{"type":"string"}`)}, add, `"type": "object"`},
		{"schema missing type", tool.Tool{Name: "s3", Schema: json.RawMessage(`{"properties":{}}`)}, add, `got type (missing)`},
		{"schema array", tool.Tool{Name: "s4", Schema: json.RawMessage(`[]`)}, add, "must be a JSON object"},
		{"schema bad keyword value", tool.Tool{Name: "s5", Schema: json.RawMessage(`{"type":"object","properties":{"a":{"type":"nope"}}}`)}, add, "invalid schema"},
		{"nil func", tool.Tool{Name: "nilfn"}, nil, "nil ToolFunc"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			reg := tool.NewRegistry()
			err := reg.Register(c.tool, c.fn)
			if c.wantErr == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), c.wantErr) {
				t.Fatalf("err = %v, want it to contain %q", err, c.wantErr)
			}
			if len(reg.Tools()) != 0 {
				t.Fatal("a refused tool was registered")
			}
		})
	}
}

func TestReusedNameNamesBothOwners(t *testing.T) {
	reg := tool.NewRegistry()
	if err := reg.Register(tool.Tool{Name: "fs__read"}, add); err != nil {
		t.Fatal(err)
	}
	err := reg.Register(tool.Tool{Name: "fs__read", Description: "other"}, add)
	var ce *tool.ClashError
	if !errors.As(err, &ce) || !errors.Is(err, tool.ErrNameTaken) || ce.Owner != "local" || ce.Claims != "local" {
		t.Fatalf("err = %v", err)
	}
	src := &fakeSource{name: "fs", tools: []tool.Tool{{Name: "read"}, {Name: "write"}}}
	err = reg.Mount(context.Background(), src)
	if !errors.As(err, &ce) || ce.Name != "fs__read" || ce.Owner != "local" || ce.Claims != "fs" {
		t.Fatalf("mount clash err = %v", err)
	}
	if got := names(reg.Tools()); got != "fs__read" {
		t.Fatalf("failed mount left tools %s", got)
	}
	b, _ := reg.Lookup("fs__read")
	if b.Tool.Description != "" || b.Source != "local" {
		t.Fatalf("original was overwritten: %+v", b)
	}
}

func TestMountNamespacedAndFlat(t *testing.T) {
	reg := tool.NewRegistry()
	a := &fakeSource{name: "github", tools: []tool.Tool{{Name: "search"}, {Name: "issue"}}}
	b := &fakeSource{name: "local", tools: []tool.Tool{{Name: "local_query"}}}
	ctx := context.Background()
	if err := reg.Mount(ctx, a); err != nil {
		t.Fatal(err)
	}
	if err := reg.Mount(ctx, b, tool.Flat()); err != nil {
		t.Fatal(err)
	}
	if got := names(reg.Tools()); got != "github__issue,github__search,local_query" {
		t.Fatalf("tools = %s", got)
	}
	bind, ok := reg.Lookup("github__search")
	if !ok || !bind.Remote || bind.Original != "search" || bind.Source != "github" {
		t.Fatalf("binding = %+v", bind)
	}
	v, err := bind.Call(ctx, tool.NoSandbox(), `{"q":"x"}`)
	if err != nil || v != "github:search got map[q:x]" {
		t.Fatalf("call = %v, %v", v, err)
	}
	// Same source name twice, and two sources whose flat names clash.
	if err := reg.Mount(ctx, a); err == nil || !strings.Contains(err.Error(), "already mounted") {
		t.Fatalf("double mount: %v", err)
	}
	c := &fakeSource{name: "other", tools: []tool.Tool{{Name: "local_query"}}}
	err = reg.Mount(ctx, c, tool.Flat())
	var ce *tool.ClashError
	if !errors.As(err, &ce) || ce.Owner != "local" || ce.Claims != "other" {
		t.Fatalf("flat clash: %v", err)
	}
	if !strings.Contains(err.Error(), `"local"`) || !strings.Contains(err.Error(), `"other"`) {
		t.Fatalf("clash error %q does not name both sources", err)
	}
}

func TestMountRefusesBadSources(t *testing.T) {
	ctx := context.Background()
	cases := []struct {
		name string
		src  *fakeSource
		opts []tool.MountOption
		want string
	}{
		{"list fails", &fakeSource{name: "s", err: errors.New("refused")}, nil, `source "s": list tools: refused`},
		{"nameless tool", &fakeSource{name: "s", tools: []tool.Tool{{Name: ""}}}, nil, `source "s" lists a tool with no name`},
		{"names that become one", &fakeSource{name: "s", tools: []tool.Tool{{Name: "a.b"}, {Name: "a_b"}}}, nil, `source "s": tools "a.b" and "a_b" would both be offered as "s__a_b"`},
		{"duplicate tool", &fakeSource{name: "s", tools: []tool.Tool{{Name: "a"}, {Name: "a"}}}, nil, "twice"},
		{"bad schema", &fakeSource{name: "s", tools: []tool.Tool{{Name: "a", Schema: json.RawMessage(`{"type":"array"}`)}}}, nil, `tool "s__a"`},
		{"bad source name", &fakeSource{name: "my server"}, nil, "mount source"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			reg := tool.NewRegistry()
			err := reg.Mount(ctx, c.src, c.opts...)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err = %v, want %q", err, c.want)
			}
			if len(reg.Tools()) != 0 {
				t.Fatal("failed mount added tools")
			}
		})
	}
}

func TestToolsSnapshotSortedAndStable(t *testing.T) {
	reg := tool.NewRegistry()
	for _, n := range []string{"zeta", "alpha", "mid"} {
		_ = reg.Register(tool.Tool{Name: n}, add)
	}
	first := reg.Tools()
	if names(first) != "alpha,mid,zeta" {
		t.Fatalf("not sorted: %s", names(first))
	}
	if second := reg.Tools(); &second[0] != &first[0] {
		t.Fatal("Tools rebuilt the snapshot without a change")
	}
	_ = reg.Register(tool.Tool{Name: "beta"}, add)
	if names(first) != "alpha,mid,zeta" || names(reg.Tools()) != "alpha,beta,mid,zeta" {
		t.Fatalf("old snapshot %s, new %s", names(first), names(reg.Tools()))
	}
}

func TestSourceChangesRefreshSnapshot(t *testing.T) {
	reg := tool.NewRegistry()
	src := &fakeSource{name: "mcp", tools: []tool.Tool{{Name: "a"}}}
	_ = reg.Register(tool.Tool{Name: "mcp__taken"}, add)
	if err := reg.Mount(context.Background(), src); err != nil {
		t.Fatal(err)
	}
	src.set(tool.Tool{Name: "a"}, tool.Tool{Name: "b"})
	if names(reg.Tools()) != "mcp__a,mcp__taken" {
		t.Fatal("snapshot changed before the source said so")
	}
	src.notify()
	if got := names(reg.Tools()); got != "mcp__a,mcp__b,mcp__taken" {
		t.Fatalf("after list_changed: %s", got)
	}
	// A new list that would clash is refused and the old one kept.
	src.set(tool.Tool{Name: "taken"})
	src.notify()
	if got := names(reg.Tools()); got != "mcp__a,mcp__b,mcp__taken" {
		t.Fatalf("after a clashing change: %s", got)
	}
	src.set()
	src.notify()
	if got := names(reg.Tools()); got != "mcp__taken" {
		t.Fatalf("after the source dropped its tools: %s", got)
	}
}

func TestWithMCPServerFailureReported(t *testing.T) {
	bad := &fakeSource{name: "fs", err: errors.New("server not found")}
	good := &fakeSource{name: "ok", tools: []tool.Tool{{Name: "t"}}}
	reg := tool.NewRegistry(tool.WithMCPServer(bad), tool.WithMCPServer(good))
	if err := reg.Err(); err == nil || !strings.Contains(err.Error(), "server not found") {
		t.Fatalf("Err = %v", err)
	}
	if names(reg.Tools()) != "ok__t" {
		t.Fatalf("tools = %s", names(reg.Tools()))
	}
}

func TestDecodeArguments(t *testing.T) {
	reg := tool.NewRegistry()
	_ = reg.Register(tool.Tool{Name: "add", Schema: addSchema}, add)
	b, _ := reg.Lookup("add")
	cases := []struct {
		raw, want string
	}{
		{`{"a":1,"b":2}`, ""},
		{`  {"a":1,"b":2}  `, ""},
		{`{"a":1,`, "not valid JSON"},
		{``, `missing properties`},
		{`null`, "got null"},
		{`[1,2]`, "got an array"},
		{`"a"`, "got a string"},
		{`42`, "got a number"},
		{`{"a":"1","b":2}`, `validating /properties/a: type: 1 has type "string", want "number"`},
		{`{"a":1}`, `missing properties: ["b"]`},
	}
	for _, c := range cases {
		t.Run(c.raw, func(t *testing.T) {
			_, err := b.Decode(c.raw)
			if c.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			var ae *tool.ArgumentsError
			if !errors.As(err, &ae) || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err = %v, want ArgumentsError containing %q", err, c.want)
			}
		})
	}
}

type sandboxSource struct{ fakeSource }

func (s *sandboxSource) Call(ctx context.Context, name string, _ map[string]any) (any, error) {
	return tool.SandboxFrom(ctx).Name(), nil
}

func TestSourcesSeeTheAssignedSandbox(t *testing.T) {
	reg := tool.NewRegistry()
	src := &sandboxSource{fakeSource{name: "pack", tools: []tool.Tool{{Name: "where"}}}}
	if err := reg.Mount(context.Background(), src); err != nil {
		t.Fatal(err)
	}
	b, _ := reg.Lookup("pack__where")
	if v, _ := b.Call(context.Background(), tool.NoSandbox(), "{}"); v != "none" {
		t.Fatalf("no sandbox: %v", v)
	}
	if v, _ := b.Call(context.Background(), namedSandbox("box-1"), "{}"); v != "box-1" {
		t.Fatalf("assigned sandbox: %v", v)
	}
	if got := tool.SandboxFrom(context.Background()).Name(); got != "none" {
		t.Fatalf("SandboxFrom on a bare context = %q", got)
	}
}

type namedSandbox string

func (n namedSandbox) Name() string { return string(n) }

func TestUnmount(t *testing.T) {
	reg := tool.NewRegistry()
	src := &fakeSource{name: "s", tools: []tool.Tool{{Name: "a"}}}
	ctx := context.Background()
	if err := reg.Mount(ctx, src); err != nil {
		t.Fatal(err)
	}
	if err := reg.Unmount("s"); err != nil {
		t.Fatal(err)
	}
	if len(reg.Tools()) != 0 {
		t.Fatalf("tools after unmount: %s", names(reg.Tools()))
	}
	if err := reg.Unmount("s"); err == nil || !strings.Contains(err.Error(), `no source "s"`) {
		t.Fatalf("second unmount: %v", err)
	}
	if err := reg.Mount(ctx, src); err != nil {
		t.Fatalf("remount: %v", err)
	}
}

func TestSourceNamesMadeSafe(t *testing.T) {
	long := strings.Repeat("t", 100)
	src := &fakeSource{name: "srv", tools: []tool.Tool{{Name: "files.read"}, {Name: "ok"}, {Name: long}, {Name: "ünï"}}}
	reg := tool.NewRegistry()
	if err := reg.Mount(context.Background(), src); err != nil {
		t.Fatal(err)
	}
	got := names(reg.Tools())
	longName := tool.SafeName("srv__" + long)
	if len(longName) != 64 || !strings.HasPrefix(longName, "srv__ttt") {
		t.Fatalf("long name %q", longName)
	}
	want := strings.Join([]string{"srv____n__", "srv__files_read", "srv__ok", longName}, ",")
	if got != want {
		t.Fatalf("tools = %s\nwant    %s", got, want)
	}
	b, _ := reg.Lookup("srv__files_read")
	if v, err := b.Call(context.Background(), tool.NoSandbox(), "{}"); err != nil || v != "srv:files.read got map[]" {
		t.Fatalf("call reached %v, %v; want the source's own name", v, err)
	}
	if tool.SafeName("fine_name-1") != "fine_name-1" {
		t.Fatal("a valid name changed")
	}
	if a, b := tool.SafeName(strings.Repeat("x", 70)+"a"), tool.SafeName(strings.Repeat("x", 70)+"b"); a == b {
		t.Fatal("two long names collapsed into one")
	}
}

func TestRegistryNotifiesChanges(t *testing.T) {
	reg := tool.NewRegistry()
	changed := make(chan int, 4)
	reg.(tool.Notifier).OnToolsChanged(func() { changed <- len(reg.Tools()) })
	_ = reg.Register(tool.Tool{Name: "a"}, add)
	if n := <-changed; n != 1 {
		t.Fatalf("listener saw %d tools", n)
	}
	_ = reg.Mount(context.Background(), &fakeSource{name: "s", tools: []tool.Tool{{Name: "b"}}})
	if n := <-changed; n != 2 {
		t.Fatalf("listener saw %d tools after mount", n)
	}
}

// BenchmarkRegister10k registers 10,000 tools and lists them once: the
// snapshot is sorted once, not on every registration.
func BenchmarkRegister10k(b *testing.B) {
	nameList := make([]string, 10000)
	for i := range nameList {
		nameList[i] = fmt.Sprintf("tool_%05d", i)
	}
	b.ReportAllocs()
	for b.Loop() {
		reg := tool.NewRegistry()
		for _, n := range nameList {
			if err := reg.Register(tool.Tool{Name: n}, add); err != nil {
				b.Fatal(err)
			}
		}
		if len(reg.Tools()) != len(nameList) {
			b.Fatal("tools lost")
		}
	}
}
