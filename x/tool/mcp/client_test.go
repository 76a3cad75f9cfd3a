package mcp_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/lodeworks/lode/artifact"
	"github.com/lodeworks/lode/tool"
	xtool "github.com/lodeworks/lode/x/tool"
	"github.com/lodeworks/lode/x/tool/mcp"
	"github.com/lodeworks/lode/x/tool/mcp/internal/fixture"
)

func TestNewClientOptions(t *testing.T) {
	stdio := mcp.WithStdio("server")
	cases := []struct {
		name string
		opts []mcp.Option
		want string
	}{
		{"no name", []mcp.Option{stdio}, "mcp: invalid option: WithName is required"},
		{"bad name", []mcp.Option{mcp.WithName("file system"), stdio}, `mcp: invalid option: WithName: tool name "file system" has ' ' at byte 4; only a-z, A-Z, 0-9, '_' and '-' are allowed`},
		{"no transport", []mcp.Option{mcp.WithName("fs")}, "mcp: invalid option: no transport: give one of WithStdio, WithHTTP, WithTransport or WithInProcess"},
		{"two transports", []mcp.Option{mcp.WithName("fs"), stdio, mcp.WithHTTP("http://127.0.0.1:1/mcp")}, "mcp: invalid option: more than one transport: give only one of WithStdio, WithHTTP, WithTransport or WithInProcess"},
		{"empty command", []mcp.Option{mcp.WithName("fs"), mcp.WithStdio(" ")}, "mcp: invalid option: WithStdio: empty command"},
		{"relative url", []mcp.Option{mcp.WithName("fs"), mcp.WithHTTP("/mcp")}, `mcp: invalid option: WithHTTP: "/mcp" is not an absolute http(s) URL`},
		{"ftp url", []mcp.Option{mcp.WithName("fs"), mcp.WithHTTP("ftp://127.0.0.1/mcp")}, `mcp: invalid option: WithHTTP: "ftp://127.0.0.1/mcp" is not an absolute http(s) URL`},
		{"bad env", []mcp.Option{mcp.WithName("fs"), stdio, mcp.WithEnv("NOEQUALS")}, `mcp: invalid option: WithEnv: "NOEQUALS" is not KEY=value`},
		{"env without stdio", []mcp.Option{mcp.WithName("fs"), mcp.WithHTTP("http://127.0.0.1:1/mcp"), mcp.WithEnv("A=1")}, "mcp: invalid option: WithEnv, WithParentEnv, WithDir and WithStderr apply only to WithStdio"},
		{"header without http", []mcp.Option{mcp.WithName("fs"), stdio, mcp.WithHeader("A", "1")}, "mcp: invalid option: WithHeader and WithHTTPClient apply only to WithHTTP"},
		{"zero stop timeout", []mcp.Option{mcp.WithName("fs"), stdio, mcp.WithStopTimeout(0)}, "mcp: invalid option: WithStopTimeout: 0s is not positive"},
		{"nil option", []mcp.Option{mcp.WithName("fs"), stdio, nil}, "mcp: invalid option: nil Option"},
		{"oauth without http", []mcp.Option{mcp.WithName("fs"), stdio, mcp.WithOAuth(&auth.AuthorizationCodeHandler{})}, "mcp: invalid option: WithOAuth applies only to WithHTTP"},
		{"sampling without provider", []mcp.Option{mcp.WithName("fs"), stdio, mcp.WithSampling(nil)}, "mcp: invalid option: WithSampling: nil provider"},
		{"empty root", []mcp.Option{mcp.WithName("fs"), stdio, mcp.WithRoots("")}, `mcp: invalid option: WithRoots: "" is not a directory path`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c, err := mcp.NewClient(tc.opts...)
			if c != nil || err == nil || err.Error() != tc.want || !errors.Is(err, mcp.ErrOption) {
				t.Fatalf("got %v, %v; want error %q", c, err, tc.want)
			}
		})
	}
	c, err := mcp.NewClient(mcp.WithName("fs"), stdio)
	if err != nil || c.Name() != "fs" {
		t.Fatalf("valid options: %v", err)
	}
	if err := c.Close(); err != nil {
		t.Fatalf("Close of a client that never connected: %v", err)
	}
}

// mountFixture mounts the conformance fixture, served in process, as "fx".
func mountFixture(t *testing.T) (*mcp.Client, tool.Registry) {
	t.Helper()
	srv, err := fixture.NewServer()
	if err != nil {
		t.Fatal(err)
	}
	c, err := mcp.NewClient(mcp.WithName("fx"), mcp.WithInProcess(srv))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	reg := tool.NewRegistry(tool.WithMCPServer(c))
	if err := reg.Err(); err != nil {
		t.Fatal(err)
	}
	return c, reg
}

func TestClientMapsEveryContentKind(t *testing.T) {
	_, reg := mountFixture(t)
	h := xtool.NewHandler(reg)
	png, wav := fixture.PNG(), fixture.WAV()
	audio := artifact.Audio{MIMEType: "audio/wav", Data: wav}
	cases := []struct {
		tool    string
		content string
		parts   []artifact.Artifact
		isError bool
	}{
		{"test_simple_text", "This is a simple text response for testing.", nil, false},
		{"test_image_content", "[image image/png, " + strconv.Itoa(len(png)) + " bytes]", []artifact.Artifact{artifact.Image{MIMEType: "image/png", Data: png}}, false},
		{"test_audio_content", "[audio audio/wav, " + strconv.Itoa(len(wav)) + " bytes]", []artifact.Artifact{audio}, false},
		{"test_embedded_resource", "This is an embedded resource content.", nil, false},
		{"test_multiple_content_types", "Multiple content types test:\n[image image/png, " + strconv.Itoa(len(png)) + " bytes]\n" + `{"test":"data","value":123}`,
			[]artifact.Artifact{artifact.Image{MIMEType: "image/png", Data: png}}, false},
		{"test_error_handling", "This tool intentionally returns an error for testing", nil, true},
	}
	for _, tc := range cases {
		t.Run(tc.tool, func(t *testing.T) {
			res := h.Execute(context.Background(), artifact.ToolCall{ID: "1", Name: "fx__" + tc.tool})
			if res.Content != tc.content || res.IsError != tc.isError {
				t.Fatalf("got %q (error %v), want %q (error %v)", res.Content, res.IsError, tc.content, tc.isError)
			}
			if len(res.Parts) != len(tc.parts) || (len(tc.parts) > 0 && !reflect.DeepEqual([]artifact.Artifact(res.Parts), tc.parts)) {
				t.Fatalf("parts = %#v, want %#v", res.Parts, tc.parts)
			}
		})
	}
}

// sdkServer is a plain go-sdk server, mounted in process.
func sdkServer(t *testing.T, name string, setup func(*sdk.Server)) (*mcp.Client, *sdk.Server) {
	t.Helper()
	s := sdk.NewServer(&sdk.Implementation{Name: name, Version: "1"}, nil)
	setup(s)
	c, err := mcp.NewClient(mcp.WithName(name), mcp.WithTransport(func(ctx context.Context) (sdk.Transport, error) {
		ct, st := sdk.NewInMemoryTransports()
		if _, err := s.Connect(ctx, st, nil); err != nil {
			return nil, err
		}
		return ct, nil
	}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c, s
}

func textResult(s string) *sdk.CallToolResult {
	return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: s}}}
}

var objectSchema = json.RawMessage(`{"type":"object"}`)

func TestClientStructuredLinksAndBlobs(t *testing.T) {
	size := int64(42)
	c, _ := sdkServer(t, "rich", func(s *sdk.Server) {
		s.AddTool(&sdk.Tool{Name: "weather", InputSchema: objectSchema}, func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			return &sdk.CallToolResult{
				Content:           []sdk.Content{&sdk.TextContent{Text: `{"temp":21}`}},
				StructuredContent: map[string]any{"temp": 21},
			}, nil
		})
		s.AddTool(&sdk.Tool{Name: "links", InputSchema: objectSchema}, func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			return &sdk.CallToolResult{Content: []sdk.Content{
				&sdk.ResourceLink{URI: "file:///a.txt", Name: "a.txt", Description: "notes", MIMEType: "text/plain", Size: &size},
				&sdk.EmbeddedResource{Resource: &sdk.ResourceContents{URI: "file:///b.bin", MIMEType: "application/octet-stream", Blob: []byte{1, 2, 3}}},
			}}, nil
		})
	})
	v, err := c.Call(context.Background(), "weather", nil)
	if err != nil {
		t.Fatal(err)
	}
	r := v.(*tool.Result)
	if r.Content != `{"temp":21}` || !reflect.DeepEqual(r.Value, map[string]any{"temp": float64(21)}) {
		t.Fatalf("weather = %q, %#v", r.Content, r.Value)
	}
	v, err = c.Call(context.Background(), "links", nil)
	if err != nil {
		t.Fatal(err)
	}
	r = v.(*tool.Result)
	if want := "[resource link file:///a.txt (a.txt): notes]\n[resource file:///b.bin (application/octet-stream), 3 bytes]"; r.Content != want {
		t.Fatalf("content = %q, want %q", r.Content, want)
	}
	if len(r.Parts) != 2 {
		t.Fatalf("parts = %#v", r.Parts)
	}
	// The parts survive a ledger round trip as they came.
	raw, err := json.Marshal(artifact.List(r.Parts))
	if err != nil {
		t.Fatal(err)
	}
	want := `[{"kind":"resource_link","uri":"file:///a.txt","name":"a.txt","description":"notes","mime_type":"text/plain","size":42},` +
		`{"kind":"resource","uri":"file:///b.bin","mime_type":"application/octet-stream","blob":"AQID"}]`
	if string(raw) != want {
		t.Fatalf("parts JSON = %s\nwant %s", raw, want)
	}
	var back artifact.List
	if err := json.Unmarshal(raw, &back); err != nil || back[0].Kind() != artifact.KindResourceLink || back[1].Kind() != artifact.KindResource {
		t.Fatalf("round trip: %v %#v", err, back)
	}
}

func TestClientToolsAndHints(t *testing.T) {
	no, yes := false, true
	c, _ := sdkServer(t, "hints", func(s *sdk.Server) {
		h := func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) { return textResult("ok"), nil }
		s.AddTool(&sdk.Tool{Name: "plain", Description: "no annotations", InputSchema: objectSchema}, h)
		s.AddTool(&sdk.Tool{Name: "reader", Title: "Reader", InputSchema: objectSchema,
			Annotations: &sdk.ToolAnnotations{ReadOnlyHint: true, OpenWorldHint: &no}}, h)
		s.AddTool(&sdk.Tool{Name: "writer", Description: "writes", InputSchema: json.RawMessage(`{"type":"object","properties":{"p":{"type":"string"}},"required":["p"]}`),
			Annotations: &sdk.ToolAnnotations{DestructiveHint: &no, IdempotentHint: true, OpenWorldHint: &yes}}, h)
	})
	tools, err := c.Tools(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]tool.Tool{}
	for _, tl := range tools {
		got[tl.Name] = tl
	}
	checks := []struct {
		name, desc string
		hints      tool.Hints
	}{
		{"plain", "no annotations", tool.Hints{Destructive: true, OpenWorld: true, Untrusted: true}},
		{"reader", "Reader", tool.Hints{ReadOnly: true, Untrusted: true}},
		{"writer", "writes", tool.Hints{Idempotent: true, OpenWorld: true, Untrusted: true}},
	}
	for _, ck := range checks {
		tl, ok := got[ck.name]
		if !ok || tl.Description != ck.desc || tl.Hints != ck.hints {
			t.Errorf("%s = %+v, want description %q hints %+v", ck.name, tl, ck.desc, ck.hints)
		}
	}
	if s := string(got["writer"].Schema); !strings.Contains(s, `"required":["p"]`) {
		t.Errorf("writer schema = %s", s)
	}
	// The registry validates arguments against the server's schema before
	// the call leaves the process.
	reg := tool.NewRegistry(tool.WithMCPServer(c))
	res := xtool.NewHandler(reg).Execute(context.Background(), artifact.ToolCall{ID: "1", Name: "hints__writer", Arguments: `{}`})
	if !res.IsError || !strings.Contains(res.Content, "invalid arguments for hints__writer") {
		t.Fatalf("missing argument: %+v", res)
	}
}

func TestClientFollowsToolListChanges(t *testing.T) {
	c, s := sdkServer(t, "grow", func(s *sdk.Server) {
		s.AddTool(&sdk.Tool{Name: "one", InputSchema: objectSchema}, func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			return textResult("1"), nil
		})
	})
	reg := tool.NewRegistry(tool.WithMCPServer(c))
	if err := reg.Err(); err != nil {
		t.Fatal(err)
	}
	// Listeners run in order: when ours runs, the registry's has re-listed.
	changed := make(chan []string, 4)
	c.OnToolsChanged(func() {
		var names []string
		for _, tl := range reg.Tools() {
			names = append(names, tl.Name)
		}
		changed <- names
	})
	s.AddTool(&sdk.Tool{Name: "two", InputSchema: objectSchema}, func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
		return textResult("2"), nil
	})
	waitFor(t, changed, []string{"grow__one", "grow__two"})
	res := xtool.NewHandler(reg).Execute(context.Background(), artifact.ToolCall{ID: "1", Name: "grow__two"})
	if res.IsError || res.Content != "2" {
		t.Fatalf("new tool: %+v", res)
	}
	s.RemoveTools("one")
	waitFor(t, changed, []string{"grow__two"})
}

func waitFor(t *testing.T, ch <-chan []string, want []string) {
	t.Helper()
	timeout := time.After(10 * time.Second)
	for {
		select {
		case got := <-ch:
			if reflect.DeepEqual(got, want) {
				return
			}
		case <-timeout:
			t.Fatalf("the registry never listed %v", want)
		}
	}
}

// countingTransport counts requests and remembers the last headers.
type countingTransport struct {
	n    int
	last http.Header
	mu   chan struct{}
}

func (c *countingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	c.mu <- struct{}{}
	c.n++
	c.last = r.Header.Clone()
	<-c.mu
	return http.DefaultTransport.RoundTrip(r)
}

func TestClientHTTPHeadersAndClient(t *testing.T) {
	reg := tool.NewRegistry()
	if err := tool.RegisterFunc(reg, "echo", "echoes", func(_ context.Context, in struct {
		Text string `json:"text"`
	}) (string, error) {
		return in.Text, nil
	}); err != nil {
		t.Fatal(err)
	}
	url := serveHTTP(t, reg)
	ct := &countingTransport{mu: make(chan struct{}, 1)}
	c, err := mcp.NewClient(mcp.WithName("remote"), mcp.WithHTTP(url),
		mcp.WithHTTPClient(&http.Client{Transport: ct}), mcp.WithHeader("X-Tenant", "acme"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if got := callText(t, c, "echo", map[string]any{"text": "over http"}); got != "over http" {
		t.Fatalf("echo = %q", got)
	}
	ct.mu <- struct{}{}
	n, h := ct.n, ct.last
	<-ct.mu
	if n == 0 || h.Get("X-Tenant") != "acme" {
		t.Fatalf("custom client saw %d requests, last headers %v", n, h)
	}
}

func TestClientContent(t *testing.T) {
	// Unknown content kinds and nil resources are kept as text, not lost.
	c, _ := sdkServer(t, "odd", func(s *sdk.Server) {
		s.AddTool(&sdk.Tool{Name: "odd", InputSchema: objectSchema}, func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			return &sdk.CallToolResult{IsError: true, Content: []sdk.Content{
				&sdk.TextContent{Text: "first"},
				&sdk.EmbeddedResource{Resource: &sdk.ResourceContents{URI: "x://empty", Text: ""}},
				&sdk.ImageContent{Data: []byte{9}},
			}}, nil
		})
	})
	v, err := c.Call(context.Background(), "odd", nil)
	if err != nil {
		t.Fatal(err)
	}
	r := v.(*tool.Result)
	if want := "first\n\n[image of unknown type, 1 bytes]"; !r.IsError || r.Content != want || !bytes.Equal(r.Parts[0].(artifact.Image).Data, []byte{9}) {
		t.Fatalf("got %+v, want error with content %q", r, want)
	}
}
