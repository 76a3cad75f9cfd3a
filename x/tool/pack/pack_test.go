package pack_test

import (
	"context"
	"errors"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"sync/atomic"
	"testing"
	"testing/fstest"

	"go.yaml.in/yaml/v3"

	"github.com/lodeworks/lode/tool"
	"github.com/lodeworks/lode/x/tool/pack"
)

// fakePack is a hand-written pack: specs given, no validator, Call
// records what it received.
type fakePack struct {
	name  string
	specs []string
	calls []string
	ctxs  []context.Context
}

func (f *fakePack) Name() string { return f.name }
func (f *fakePack) Tools(context.Context) ([]tool.Tool, error) {
	out := make([]tool.Tool, len(f.specs))
	for i, n := range f.specs {
		out[i] = tool.Tool{Name: n, Description: n}
	}
	return out, nil
}
func (f *fakePack) Call(ctx context.Context, name string, args map[string]any) (any, error) {
	f.calls = append(f.calls, name)
	f.ctxs = append(f.ctxs, ctx)
	return pack.Success(f.name + ":" + name), nil
}

// validating takes options and refuses any without "ok".
type validating struct{ fakePack }

func (v *validating) ValidateOptions(o map[string]any) error {
	if _, ok := o["ok"]; !ok {
		return errors.New(`option "ok" is required`)
	}
	return nil
}

// settingsSpecs declares a tool per name listed in its "tools" option.
type settingsSpecs struct{ fakePack }

func (s *settingsSpecs) ValidateOptions(map[string]any) error { return nil }
func (s *settingsSpecs) ToolSpecs(st pack.Settings) []tool.Tool {
	var out []tool.Tool
	names, _ := st.Options(s.name)["tools"].([]any)
	for _, n := range names {
		out = append(out, tool.Tool{Name: n.(string)})
	}
	return out
}

// valuePack is a pack of a type that cannot be compared.
type valuePack struct {
	name string
	m    map[string]int
}

func (v valuePack) Name() string                               { return v.name }
func (v valuePack) Tools(context.Context) ([]tool.Tool, error) { return nil, nil }
func (v valuePack) Call(context.Context, string, map[string]any) (any, error) {
	return nil, nil
}

func TestRegister(t *testing.T) {
	a := &fakePack{name: "a"}
	tests := []struct {
		name    string
		packs   []pack.Pack
		wantErr string
		is      error
	}{
		{"one", []pack.Pack{a}, "", nil},
		{"same instance twice", []pack.Pack{a, a}, "", nil},
		{"blank name", []pack.Pack{&fakePack{name: ""}}, "pack: tool provider name is blank", pack.ErrBlankName},
		{"space name", []pack.Pack{&fakePack{name: "  "}}, "pack: tool provider name is blank", pack.ErrBlankName},
		{"nil", []pack.Pack{nil}, "pack: register: nil pack", nil},
		{"different pack same name", []pack.Pack{a, &fakePack{name: "a"}}, "tool provider already registered for name: a", pack.ErrAlreadyRegistered},
		{"uncomparable values", []pack.Pack{valuePack{name: "v"}, valuePack{name: "v"}}, "tool provider already registered for name: v", pack.ErrAlreadyRegistered},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c, _ := pack.NewCatalog()
			var err error
			for _, p := range tc.packs {
				if err = c.Register(p); err != nil {
					break
				}
			}
			checkErr(t, err, tc.wantErr, tc.is)
			if tc.wantErr != "" && len(tc.packs) == 2 {
				// The first pack keeps its name.
				if got, _ := c.Lookup(tc.packs[0].Name()); !reflect.DeepEqual(got, tc.packs[0]) {
					t.Errorf("Lookup after refused register = %v, want the first pack", got)
				}
			}
		})
	}
	if _, err := pack.NewCatalog(a, &fakePack{name: "a"}); err == nil || err.Error() != "tool provider already registered for name: a" {
		t.Errorf("NewCatalog with a clash: %v", err)
	}
}

func checkErr(t *testing.T, err error, want string, is error) {
	t.Helper()
	if want == "" {
		if err != nil {
			t.Fatalf("unexpected error: %v", err)
		}
		return
	}
	if err == nil || err.Error() != want {
		t.Fatalf("error = %v, want %q", err, want)
	}
	if is != nil && !errors.Is(err, is) {
		t.Fatalf("errors.Is(%v, %v) = false", err, is)
	}
}

func TestParseConfig(t *testing.T) {
	tests := []struct {
		name    string
		doc     string
		want    pack.ToolsMap
		wantErr string
	}{
		{"empty document", "", nil, ""},
		{"no tools key", "model: x\nother: [1]\n", nil, ""},
		{"null tools", "tools:\n", nil, ""},
		{"empty map", "tools: {}\n", pack.ToolsMap{}, ""},
		{"order kept", "tools:\n  zeta: {}\n  alpha: {}\n  mid: {}\n", pack.ToolsMap{{Name: "zeta", Options: map[string]any{}}, {Name: "alpha", Options: map[string]any{}}, {Name: "mid", Options: map[string]any{}}}, ""},
		{"null options", "tools:\n  echo:\n", pack.ToolsMap{{Name: "echo"}}, ""},
		{"nested options", "tools:\n  local:\n    path: ./board\n    deep: {a: [1, two]}\n", pack.ToolsMap{{Name: "local", Options: map[string]any{"path": "./board", "deep": map[string]any{"a": []any{1, "two"}}}}}, ""},
		{"anchors", "base: &b {path: x}\ntools:\n  local: *b\n", pack.ToolsMap{{Name: "local", Options: map[string]any{"path": "x"}}}, ""},
		{"tools is a list", "tools:\n  - echo\n", nil, "pack: config: line 2: tools must be a map of pack name to options, got a list"},
		{"tools is a scalar", "tools: echo\n", nil, `pack: config: line 1: tools must be a map of pack name to options, got str "echo"`},
		{"options are a list", "tools:\n  echo: [1]\n", nil, "pack: config: line 2: tools.echo must be a map of options (use {} for none), got a list"},
		{"options are a scalar", "tools:\n  echo: true\n", nil, `pack: config: line 2: tools.echo must be a map of options (use {} for none), got bool "true"`},
		{"duplicate pack", "tools:\n  echo: {}\n  local: {}\n  echo: {}\n", nil, "pack: config: line 4: tools.echo is given twice (first at line 2)"},
		{"blank key", "tools:\n  '': {}\n", nil, "pack: config: line 2: a tools key is blank; it must name a pack"},
		{"number key", "tools:\n  12: {}\n", nil, `pack: config: line 2: a tools key must be a pack name, got int "12"`},
		{"map key", "tools:\n  ? {a: 1}\n  : {}\n", nil, "pack: config: line 2: a tools key must be a pack name, got a map"},
		{"not yaml", "tools: [\n", nil, "pack: config: yaml: line 1: did not find expected node content"},
		{"document is a list", "- a\n", nil, "pack: config: yaml: unmarshal errors:\n  line 1: cannot unmarshal !!seq into pack.Settings"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s, err := pack.ParseConfig([]byte(tc.doc))
			checkErr(t, err, tc.wantErr, nil)
			if tc.wantErr != "" {
				if !reflect.DeepEqual(s, pack.Settings{}) {
					t.Errorf("settings after an error = %+v, want zero", s)
				}
				return
			}
			if !reflect.DeepEqual(s.Tools, tc.want) {
				t.Errorf("Tools = %#v, want %#v", s.Tools, tc.want)
			}
		})
	}
}

// A command embeds Settings inline in its own configuration.
func TestSettingsEmbedded(t *testing.T) {
	var cfg struct {
		Model         string `yaml:"model"`
		pack.Settings `yaml:",inline"`
	}
	if err := yaml.Unmarshal([]byte("model: m\ntools:\n  b: {}\n  a: {x: 1}\n"), &cfg); err != nil {
		t.Fatal(err)
	}
	if cfg.Model != "m" || !reflect.DeepEqual(cfg.Settings.Packs(), []string{"b", "a"}) || cfg.Options("a")["x"] != 1 {
		t.Fatalf("cfg = %+v", cfg)
	}
	out, err := yaml.Marshal(cfg.Settings)
	if err != nil {
		t.Fatal(err)
	}
	if want := "tools:\n    b: {}\n    a:\n        x: 1\n"; string(out) != want {
		t.Errorf("Marshal = %q, want %q", out, want)
	}
	back, err := pack.ParseConfig(out)
	if err != nil || !reflect.DeepEqual(back.Packs(), []string{"b", "a"}) {
		t.Errorf("round trip = %v, %v", back.Packs(), err)
	}
}

func TestSettingsPacks(t *testing.T) {
	s := pack.Settings{
		Defaults: []string{"jira", "local", "jira"},
		Tools:    pack.ToolsMap{{Name: "slack"}, {Name: "local", Options: map[string]any{"path": "x"}}, {Name: "echo"}},
	}
	if got, want := s.Packs(), []string{"jira", "local", "slack", "echo"}; !reflect.DeepEqual(got, want) {
		t.Errorf("Packs = %v, want %v", got, want)
	}
	if got := s.Options("local"); got["path"] != "x" {
		t.Errorf("Options(local) = %v", got)
	}
	if got := s.Options("jira"); got != nil {
		t.Errorf("Options(jira) = %v, want nil", got)
	}
	if got := (pack.Settings{}).Packs(); len(got) != 0 {
		t.Errorf("zero Packs = %v", got)
	}
}

func newCatalog(t *testing.T, packs ...pack.Pack) *pack.Catalog {
	t.Helper()
	c, err := pack.NewCatalog(packs...)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestValidate(t *testing.T) {
	c := newCatalog(t,
		echoPack(),
		&fakePack{name: "plain", specs: []string{"plain_x"}},
		&validating{fakePack{name: "strict", specs: []string{"strict_x"}}},
	)
	tests := []struct {
		name     string
		settings pack.Settings
		wantErr  string
		is       error
	}{
		{"nothing", pack.Settings{}, "", nil},
		{"echo no options", pack.Settings{Tools: pack.ToolsMap{{Name: "echo", Options: map[string]any{}}}}, "", nil},
		{"unknown in tools", pack.Settings{Tools: pack.ToolsMap{{Name: "echo"}, {Name: "jira"}}}, "unsupported tool pack: jira", pack.ErrUnknownPack},
		{"unknown default", pack.Settings{Defaults: []string{"linear"}}, "unsupported tool pack: linear", pack.ErrUnknownPack},
		{"options to echo", pack.Settings{Tools: pack.ToolsMap{{Name: "echo", Options: map[string]any{"loud": true}}}}, `tools.echo is not supported by the "echo" pack`, pack.ErrNoOptions},
		{"options to a pack without validator", pack.Settings{Tools: pack.ToolsMap{{Name: "plain", Options: map[string]any{"a": 1}}}}, `tools.plain is not supported by the "plain" pack`, pack.ErrNoOptions},
		{"validator refuses", pack.Settings{Tools: pack.ToolsMap{{Name: "strict", Options: map[string]any{"no": 1}}}}, `tools.strict: option "ok" is required`, nil},
		{"validator refuses a default without options", pack.Settings{Defaults: []string{"strict"}}, `tools.strict: option "ok" is required`, nil},
		{"validator accepts", pack.Settings{Defaults: []string{"strict"}, Tools: pack.ToolsMap{{Name: "strict", Options: map[string]any{"ok": 1}}}}, "", nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := c.Validate(tc.settings)
			checkErr(t, err, tc.wantErr, tc.is)
			var oe *pack.OptionsError
			if tc.wantErr != "" && strings.HasPrefix(tc.wantErr, "tools.") && !errors.As(err, &oe) {
				t.Errorf("%v is not an *OptionsError", err)
			}
			// Mount refuses the same settings with the same error, and
			// leaves the registry empty.
			reg := tool.NewRegistry()
			_, err = c.Mount(context.Background(), reg, tc.settings)
			checkErr(t, err, tc.wantErr, tc.is)
			if tc.wantErr != "" && len(reg.Tools()) != 0 {
				t.Errorf("registry after a failed mount: %v", reg.Tools())
			}
		})
	}
}

func TestMountCollision(t *testing.T) {
	c := newCatalog(t,
		&fakePack{name: "a", specs: []string{"a_one", "shared"}},
		&fakePack{name: "b", specs: []string{"b_one", "shared"}},
		&fakePack{name: "self", specs: []string{"self_x", "self_x", "self_y"}},
	)
	ctx := context.Background()
	reg := tool.NewRegistry()
	if err := reg.Register(tool.Tool{Name: "mine"}, func(context.Context, tool.Sandbox, map[string]any) (any, error) { return "mine", nil }); err != nil {
		t.Fatal(err)
	}

	_, err := c.Mount(ctx, reg, pack.Settings{Defaults: []string{"a"}, Tools: pack.ToolsMap{{Name: "b"}}})
	checkErr(t, err, `tool name collision: shared is declared by both the "a" and "b" packs`, tool.ErrNameTaken)
	var ce *pack.CollisionError
	if !errors.As(err, &ce) || ce.First != "a" || ce.Second != "b" || ce.Name != "shared" {
		t.Errorf("CollisionError = %+v", ce)
	}
	if got := names(reg.Tools()); !reflect.DeepEqual(got, []string{"mine"}) {
		t.Errorf("registry after a collision = %v, want only [mine]", got)
	}

	// A pack repeating its own tool name mounts it once.
	r, err := c.Mount(ctx, reg, pack.Settings{Tools: pack.ToolsMap{{Name: "self"}}})
	if err != nil {
		t.Fatal(err)
	}
	if got := names(reg.Tools()); !reflect.DeepEqual(got, []string{"mine", "self_x", "self_y"}) {
		t.Errorf("registry = %v", got)
	}
	rt, _ := r.Tools(ctx)
	if got := names(rt); !reflect.DeepEqual(got, []string{"self_x", "self_y"}) {
		t.Errorf("router tools = %v", got)
	}
}

func TestMountClashWithRegistry(t *testing.T) {
	c := newCatalog(t, &fakePack{name: "a", specs: []string{"a_one", "mine"}})
	reg := tool.NewRegistry()
	if err := reg.Register(tool.Tool{Name: "mine"}, func(context.Context, tool.Sandbox, map[string]any) (any, error) { return "mine", nil }); err != nil {
		t.Fatal(err)
	}
	_, err := c.Mount(context.Background(), reg, pack.Settings{Defaults: []string{"a"}})
	if !errors.Is(err, tool.ErrNameTaken) {
		t.Fatalf("err = %v, want a name clash", err)
	}
	if got := names(reg.Tools()); !reflect.DeepEqual(got, []string{"mine"}) {
		t.Errorf("registry after a clash = %v", got)
	}
}

func names(ts []tool.Tool) []string {
	out := make([]string, len(ts))
	for i, t := range ts {
		out[i] = t.Name
	}
	return out
}

func TestRouterCalls(t *testing.T) {
	a := &fakePack{name: "a", specs: []string{"a_one", "a_two"}}
	b := &fakePack{name: "b", specs: []string{"b_one"}}
	c := newCatalog(t, a, b)
	ctx := context.Background()
	reg := tool.NewRegistry()
	settings := pack.Settings{Defaults: []string{"b"}, Tools: pack.ToolsMap{{Name: "a"}}}
	r, err := c.Mount(ctx, reg, settings)
	if err != nil {
		t.Fatal(err)
	}
	rt, _ := r.Tools(ctx)
	if got := names(rt); !reflect.DeepEqual(got, []string{"b_one", "a_one", "a_two"}) {
		t.Errorf("router tools (mount order) = %v", got)
	}

	for name, want := range map[string]string{"a_two": "a:a_two", "b_one": "b:b_one"} {
		bd, ok := reg.Lookup(name)
		if !ok {
			t.Fatalf("%s not mounted", name)
		}
		out, err := bd.Call(ctx, tool.NoSandbox(), `{}`)
		if err != nil {
			t.Fatal(err)
		}
		if res := out.(*tool.Result); res.IsError || res.Value != want {
			t.Errorf("%s = %+v, want %s", name, res, want)
		}
	}
	// The pack saw the settings it was mounted with.
	got, ok := pack.SettingsFrom(a.ctxs[0])
	if !ok || !reflect.DeepEqual(got.Packs(), settings.Packs()) {
		t.Errorf("settings in call context = %+v, %v", got, ok)
	}

	out, err := r.Call(ctx, "nope", nil)
	if err != nil {
		t.Fatal(err)
	}
	res := out.(*tool.Result)
	if want := "unsupported tool: nope; mounted tools: b_one, a_one, a_two"; !res.IsError || res.Content != want {
		t.Errorf("unknown tool = %+v, want %q", res, want)
	}

	empty, err := c.Router(ctx, pack.Settings{})
	if err != nil {
		t.Fatal(err)
	}
	out, _ = empty.Call(ctx, "x", nil)
	if res := out.(*tool.Result); !res.IsError || res.Content != "unsupported tool: x; no tools are mounted" {
		t.Errorf("unknown tool, nothing mounted = %+v", res)
	}
	if _, ok := r.Owner("a_one"); !ok {
		t.Error("Owner(a_one) not found")
	}
	if _, ok := r.Owner("zzz"); ok {
		t.Error("Owner(zzz) found")
	}
	if got := r.Packs(); len(got) != 2 || got[0].Name() != "b" {
		t.Errorf("Packs = %v", got)
	}
}

func TestSpecProvider(t *testing.T) {
	p := &settingsSpecs{fakePack{name: "dyn"}}
	c := newCatalog(t, p)
	reg := tool.NewRegistry()
	s := pack.Settings{Tools: pack.ToolsMap{{Name: "dyn", Options: map[string]any{"tools": []any{"dyn_a", "dyn_b"}}}}}
	if _, err := c.Mount(context.Background(), reg, s); err != nil {
		t.Fatal(err)
	}
	if got := names(reg.Tools()); !reflect.DeepEqual(got, []string{"dyn_a", "dyn_b"}) {
		t.Errorf("tools = %v", got)
	}
}

func TestSkills(t *testing.T) {
	skills := fstest.MapFS{"greet/SKILL.md": {Data: []byte("---\nname: greet\n---\nSay hi.\n")}}
	withSkills := pack.MustNew("sk", pack.Skills(skills))
	c := newCatalog(t, withSkills, echoPack())
	r, err := c.Router(context.Background(), pack.Settings{Defaults: []string{"echo", "sk"}})
	if err != nil {
		t.Fatal(err)
	}
	got := r.Skills()
	if len(got) != 1 || got[0].Pack != "sk" {
		t.Fatalf("Skills = %+v", got)
	}
	data, err := fs.ReadFile(got[0].FS, "greet/SKILL.md")
	if err != nil || !strings.Contains(string(data), "Say hi.") {
		t.Errorf("SKILL.md = %q, %v", data, err)
	}
}

func TestHTTPClient(t *testing.T) {
	var hits atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		w.Write([]byte("pong"))
	}))
	defer srv.Close()
	ctx := context.Background()

	// No client given: every request is refused before it leaves.
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, srv.URL, strings.NewReader("body"))
	_, err := pack.HTTPClient(ctx).Do(req)
	if !errors.Is(err, pack.ErrNoHTTPClient) {
		t.Fatalf("err = %v, want ErrNoHTTPClient", err)
	}
	if !strings.Contains(err.Error(), "no HTTP client was given to this tool call") {
		t.Errorf("error text = %q", err)
	}
	if _, err := pack.HTTPClient(pack.WithHTTPClient(ctx, nil)).Get(srv.URL); !errors.Is(err, pack.ErrNoHTTPClient) {
		t.Fatalf("nil client: err = %v, want ErrNoHTTPClient", err)
	}
	if hits.Load() != 0 {
		t.Fatalf("server was reached %d times without a client", hits.Load())
	}

	// Given a client, the pack uses it.
	resp, err := pack.HTTPClient(pack.WithHTTPClient(ctx, srv.Client())).Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if hits.Load() != 1 {
		t.Fatalf("hits = %d, want 1", hits.Load())
	}
}

// The router hands the settings' client to calls whose context has none,
// and leaves a client the context carries alone.
func TestRouterHTTPClient(t *testing.T) {
	fetch := pack.MustNew("net", pack.Tool("net_get", "GET a URL.",
		func(ctx context.Context, in struct {
			URL string `json:"url"`
		}) (string, error) {
			resp, err := pack.HTTPClient(ctx).Get(in.URL)
			if err != nil {
				return "", err
			}
			resp.Body.Close()
			return resp.Status, nil
		}))
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Via", r.Header.Get("X-Via"))
	}))
	defer srv.Close()
	c := newCatalog(t, fetch)
	ctx := context.Background()
	args := map[string]any{"url": srv.URL}

	closed, _ := c.Router(ctx, pack.Settings{Defaults: []string{"net"}})
	out, err := closed.Call(ctx, "net_get", args)
	if err != nil {
		t.Fatal(err)
	}
	if res := out.(*tool.Result); !res.IsError || !strings.Contains(res.Content, "no HTTP client was given") {
		t.Errorf("closed network = %+v", res)
	}

	open, _ := c.Router(ctx, pack.Settings{Defaults: []string{"net"}, HTTPClient: srv.Client()})
	out, err = open.Call(ctx, "net_get", args)
	if err != nil || out != "200 OK" {
		t.Errorf("open network = %v, %v", out, err)
	}

	var used atomic.Bool
	own := &http.Client{Transport: roundTripFunc(func(r *http.Request) (*http.Response, error) {
		used.Store(true)
		return http.DefaultTransport.RoundTrip(r)
	})}
	out, err = open.Call(pack.WithHTTPClient(ctx, own), "net_get", args)
	if err != nil || out != "200 OK" || !used.Load() {
		t.Errorf("context client: %v, %v, used=%v", out, err, used.Load())
	}
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

func TestBundle(t *testing.T) {
	type in struct {
		N int `json:"n"`
	}
	p, err := pack.New("calc",
		pack.Tool("calc_half", "Half of n.", func(ctx context.Context, a in) (int, error) {
			if a.N%2 != 0 {
				return 0, errors.New("n is odd")
			}
			return a.N / 2, nil
		}),
		pack.Tool("calc_block", "Waits for cancellation.", func(ctx context.Context, a in) (int, error) {
			<-ctx.Done()
			return 0, ctx.Err()
		}),
		pack.Spec(tool.Tool{Name: "calc_raw", Schema: []byte(`{"type":"object","properties":{"s":{"type":"string"}},"required":["s"]}`)},
			func(ctx context.Context, args map[string]any) (any, error) { return args["s"], nil }),
	)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	ts, _ := p.Tools(ctx)
	if got := names(ts); !reflect.DeepEqual(got, []string{"calc_half", "calc_block", "calc_raw"}) {
		t.Errorf("Tools = %v (want the order given)", got)
	}
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	tests := []struct {
		name    string
		ctx     context.Context
		tool    string
		args    map[string]any
		want    any
		failure string
		errIs   error
	}{
		{"ok", ctx, "calc_half", map[string]any{"n": 4}, 2, "", nil},
		{"nil args to a tool that needs some", ctx, "calc_half", nil, nil, "invalid arguments for calc_half: arguments do not match the schema: validating root: required: missing properties: [\"n\"]", nil},
		{"wrong type", ctx, "calc_half", map[string]any{"n": "four"}, nil, "invalid arguments for calc_half: arguments do not match the schema: validating root: validating /properties/n: type: four has type \"string\", want \"integer\"", nil},
		{"func error is a failure", ctx, "calc_half", map[string]any{"n": 3}, nil, "n is odd", nil},
		{"unknown tool", ctx, "calc_nope", nil, nil, `unknown tool: calc_nope; the "calc" pack has calc_half, calc_block, calc_raw`, nil},
		{"unencodable args", ctx, "calc_raw", map[string]any{"s": make(chan int)}, nil, "arguments for calc_raw cannot be encoded as JSON: json: unsupported type: chan int", nil},
		{"spec tool", ctx, "calc_raw", map[string]any{"s": "x"}, "x", "", nil},
		{"cancelled is an error", cancelled, "calc_block", map[string]any{"n": 1}, nil, "", context.Canceled},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			out, err := p.Call(tc.ctx, tc.tool, tc.args)
			if tc.errIs != nil {
				if !errors.Is(err, tc.errIs) {
					t.Fatalf("err = %v, want %v", err, tc.errIs)
				}
				return
			}
			if err != nil {
				t.Fatalf("err = %v", err)
			}
			if tc.failure != "" {
				res, ok := out.(*tool.Result)
				if !ok || !res.IsError || res.Content != tc.failure {
					t.Fatalf("out = %#v, want failure %q", out, tc.failure)
				}
				return
			}
			if out != tc.want {
				t.Errorf("out = %#v, want %#v", out, tc.want)
			}
		})
	}
}

func TestNewErrors(t *testing.T) {
	noop := func(ctx context.Context, a struct{}) (int, error) { return 0, nil }
	tests := []struct {
		name    string
		pack    string
		parts   []pack.Part
		wantErr string
	}{
		{"blank pack name", "", nil, "pack: tool provider name is blank"},
		{"bad tool name", "p", []pack.Part{pack.Tool("has space", "", noop)}, `pack "p": tool name "has space" has ' ' at byte 3; only a-z, A-Z, 0-9, '_' and '-' are allowed`},
		{"tool twice", "p", []pack.Part{pack.Tool("p_x", "", noop), pack.Tool("p_x", "", noop)}, `pack "p": tool "p_x" is given twice`},
		{"spec given twice", "p", []pack.Part{pack.Tool("p_x", "", noop), pack.Spec(tool.Tool{Name: "p_x"}, func(context.Context, map[string]any) (any, error) { return nil, nil })}, `pack "p": tool "p_x" is given twice`},
		{"typed args not a struct", "p", []pack.Part{pack.Tool("p_x", "", func(ctx context.Context, a int) (int, error) { return a, nil })}, `pack "p": registering "p_x": tool: arguments type int is not a struct`},
		{"nil spec func", "p", []pack.Part{pack.Spec(tool.Tool{Name: "p_x"}, nil)}, `pack "p": tool "p_x": nil function`},
		{"bad schema", "p", []pack.Part{pack.Spec(tool.Tool{Name: "p_x", Schema: []byte(`{"type":"string"}`)}, func(context.Context, map[string]any) (any, error) { return nil, nil })}, `pack "p": tool "p_x": schema must have "type": "object" (tool arguments are a JSON object), got type "string"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := pack.New(tc.pack, tc.parts...)
			checkErr(t, err, tc.wantErr, nil)
		})
	}
	defer func() {
		if r := recover(); r == nil {
			t.Error("MustNew with a blank name did not panic")
		}
	}()
	pack.MustNew("")
}

func TestBundleOptions(t *testing.T) {
	plain := pack.MustNew("plain")
	if err := plain.ValidateOptions(nil); err != nil {
		t.Errorf("plain, no options: %v", err)
	}
	if err := plain.ValidateOptions(map[string]any{"a": 1}); !errors.Is(err, pack.ErrNoOptions) {
		t.Errorf("plain, options: %v", err)
	}
	if plain.Skills() != nil {
		t.Error("plain pack ships skills")
	}
	strict := pack.MustNew("strict", pack.Validate(func(o map[string]any) error {
		if o["level"] != 1 {
			return errors.New("level must be 1")
		}
		return nil
	}))
	if err := strict.ValidateOptions(map[string]any{"level": 1}); err != nil {
		t.Errorf("strict ok: %v", err)
	}
	if err := strict.ValidateOptions(nil); err == nil || err.Error() != "level must be 1" {
		t.Errorf("strict refused: %v", err)
	}
}

func TestResults(t *testing.T) {
	if r := pack.Success(3); r.IsError || r.Value != 3 {
		t.Errorf("Success = %+v", r)
	}
	if r := pack.Failuref("'%s' is required", "id"); !r.IsError || r.Content != "'id' is required" {
		t.Errorf("Failuref = %+v", r)
	}
}
