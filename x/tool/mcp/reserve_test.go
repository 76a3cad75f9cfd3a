package mcp_test

import (
	"context"
	"encoding/json"
	"reflect"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/lodeworks/lode/x/tool/mcp"
)

// asJSON renders v as generic JSON, to compare what two servers said
// whatever Go types carry it.
func asJSON(t *testing.T, v any) any {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var out any
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

// lode's server, serving tools it mounted from server-everything, says of
// them what server-everything said: title, output schema, annotations; and
// a call returns the structured content the source returned. The tool that
// server-everything runs only as an MCP task (simulate-research-query) is
// neither mounted nor served, since lode cannot call it.
func TestServerReservesWhatTheSourceSaid(t *testing.T) {
	env := requireNode(t)
	src, err := mcp.NewClient(mcp.WithName("everything"), mcp.WithStdio(env.node20, env.pkg("@modelcontextprotocol/server-everything/dist/index.js"), "stdio"))
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	reg := mount(t, mcp.WithName("everything"), mcp.WithStdio(env.node20, env.pkg("@modelcontextprotocol/server-everything/dist/index.js"), "stdio"))
	srv, err := mcp.NewServer(reg)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	ct, st := sdk.NewInMemoryTransports()
	ss, err := srv.Connect(ctx, st)
	if err != nil {
		t.Fatal(err)
	}
	defer ss.Close()
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "test", Version: "1"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()

	direct, err := src.Session(ctx)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]*sdk.Tool{}
	for tl, err := range direct.Tools(ctx, nil) {
		if err != nil {
			t.Fatal(err)
		}
		want["everything__"+tl.Name] = tl
	}
	got := map[string]*sdk.Tool{}
	for tl, err := range cs.Tools(ctx, nil) {
		if err != nil {
			t.Fatal(err)
		}
		got[tl.Name] = tl
	}
	if _, ok := got["everything__simulate-research-query"]; ok {
		t.Error("simulate-research-query, which requires MCP tasks, is served")
	}
	if _, ok := want["everything__simulate-research-query"]; ok {
		t.Error("simulate-research-query, which requires MCP tasks, is listed by the client")
	}
	if len(got) != len(want) || len(got) < 10 {
		t.Fatalf("served %d tools, the source lists %d", len(got), len(want))
	}
	withOutput := 0
	for name, w := range want {
		g, ok := got[name]
		if !ok {
			t.Errorf("%s is not served", name)
			continue
		}
		if w.OutputSchema != nil {
			withOutput++
		}
		for _, f := range []struct {
			field      string
			got, wantV any
		}{
			{"title", g.Title, w.Title},
			{"outputSchema", g.OutputSchema, w.OutputSchema},
			{"annotations", g.Annotations, w.Annotations},
		} {
			if gj, wj := asJSON(t, f.got), asJSON(t, f.wantV); !reflect.DeepEqual(gj, wj) {
				t.Errorf("%s: %s served as %v, the source said %v", name, f.field, gj, wj)
			}
		}
	}
	if withOutput == 0 {
		t.Fatal("no source tool declares an output schema; the test checks nothing")
	}

	args := map[string]any{"location": "Chicago"}
	wres, err := direct.CallTool(ctx, &sdk.CallToolParams{Name: "get-structured-content", Arguments: args})
	if err != nil {
		t.Fatal(err)
	}
	gres, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "everything__get-structured-content", Arguments: args})
	if err != nil {
		t.Fatal(err)
	}
	if gres.IsError || wres.StructuredContent == nil {
		t.Fatalf("calls: served %+v, source %+v", gres, wres)
	}
	if g, w := asJSON(t, gres.StructuredContent), asJSON(t, wres.StructuredContent); !reflect.DeepEqual(g, w) {
		t.Errorf("structuredContent served as %v, the source returned %v", g, w)
	}
}
