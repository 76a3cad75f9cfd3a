package cassette_test

import (
	"context"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/lodeworks/lode/tool"
	"github.com/lodeworks/lode/x/cassette"
	"github.com/lodeworks/lode/x/tool/mcp"
)

type addArgs struct {
	A float64 `json:"a"`
	B float64 `json:"b"`
}

// mcpSession lists a remote MCP server's tools and calls one twice, over
// streamable HTTP through rec.
func mcpSession(t *testing.T, url string, rec *cassette.Recorder) ([]tool.Tool, []any) {
	t.Helper()
	c, err := mcp.NewClient(mcp.WithName("calc"), mcp.WithHTTP(url), mcp.WithHTTPClient(rec.Client()),
		mcp.WithHeader("X-Api-Key", secretKey))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	tools, err := c.Tools(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var results []any
	for _, args := range []map[string]any{{"a": 2, "b": 40}, {"a": 1, "b": 1}} {
		res, err := c.Call(ctx, "add", args)
		if err != nil {
			t.Fatal(err)
		}
		results = append(results, res)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if err := rec.Stop(); err != nil {
		t.Fatal(err)
	}
	return tools, results
}

func TestMCPRoundTrip(t *testing.T) {
	served := tool.NewRegistry()
	if err := tool.RegisterFunc(served, "add", "Adds two numbers",
		func(_ context.Context, in addArgs) (float64, error) { return in.A + in.B, nil }); err != nil {
		t.Fatal(err)
	}
	srv, err := mcp.NewServer(served)
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(srv)
	url := ts.URL + "/mcp"
	path := filepath.Join(t.TempDir(), "mcp.yaml")

	rec, err := cassette.New(path, cassette.WithMode(cassette.Record))
	if err != nil {
		t.Fatal(err)
	}
	liveTools, liveResults := mcpSession(t, url, rec)
	ts.Close()

	rep, err := cassette.New(path)
	if err != nil {
		t.Fatal(err)
	}
	tools, results := mcpSession(t, url, rep)
	if !reflect.DeepEqual(tools, liveTools) {
		t.Errorf("replayed tools differ:\n got %#v\nwant %#v", tools, liveTools)
	}
	if !reflect.DeepEqual(results, liveResults) {
		t.Errorf("replayed results differ:\n got %#v\nwant %#v", results, liveResults)
	}
	if len(results) != 2 || !strings.Contains(reflectString(results[0]), "42") {
		t.Errorf("results = %#v, want 42 first", results)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(data), secretKey) {
		t.Errorf("cassette holds the MCP API key")
	}
	if !strings.Contains(string(data), "Mcp-Session-Id") {
		t.Errorf("cassette holds no MCP session")
	}
}

func reflectString(v any) string { return strings.TrimSpace(strings.ReplaceAll(fmtV(v), "\n", " ")) }
