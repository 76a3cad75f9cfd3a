package local_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lodeworks/lode/artifact"
	"github.com/lodeworks/lode/ledger"
	"github.com/lodeworks/lode/loop"
	"github.com/lodeworks/lode/x/provider/script"
	xtool "github.com/lodeworks/lode/x/tool"
)

// A scripted model works the board through the loop and the handler:
// results, failures included, land in the ledger as data.
func TestThroughTheLoop(t *testing.T) {
	reg, dir, _ := board(t)
	prov := script.Play(
		script.Call("c1", "local_create", `{"title": "Filed by the model", "labels": ["bot"]}`),
		script.Call("c2", "local_query", `{"filter": {"field": "labels", "op": "contains", "value": "bot"}}`),
		script.Call("c3", "local_get", `{"id": "../../etc/passwd"}`),
		script.Call("c4", "local_comment", `{"id": "1"}`),
		script.Call("c5", "local_delete", `{"id": "1"}`),
		script.Text("Done."),
	)
	step := loop.New(
		loop.WithHandlers(xtool.NewHandler(reg)),
		loop.WithInvokeOptions(xtool.WithFilteredTools(reg, nil)),
		loop.WithMaxTurns(10),
	)
	st, err := step.Run(context.Background(), ledger.NewThread(), prov)
	if err != nil {
		t.Fatal(err)
	}
	var results []artifact.ToolResult
	for _, turn := range st.Turns() {
		if turn.Role != ledger.RoleTool {
			continue
		}
		for _, a := range turn.Artifacts {
			if r, ok := a.(artifact.ToolResult); ok {
				results = append(results, r)
			}
		}
	}
	for _, r := range results {
		t.Logf("%s error=%v: %s", r.Name, r.IsError, r.Content)
	}
	if len(results) != 5 {
		t.Fatalf("%d results, want 5: %+v", len(results), results)
	}
	var created map[string]any
	if err := json.Unmarshal([]byte(results[0].Content), &created); err != nil || results[0].IsError || created["id"] != "1" {
		t.Errorf("create result = %+v", results[0])
	}
	if r := results[1]; r.IsError || !strings.Contains(r.Content, `"title":"Filed by the model"`) || !strings.Contains(r.Content, `"total":1`) {
		t.Errorf("query result = %+v", r)
	}
	if r := results[2]; !r.IsError || !strings.Contains(r.Content, `invalid id "../../etc/passwd"`) {
		t.Errorf("escape result = %+v", r)
	}
	if r := results[3]; !r.IsError || !strings.Contains(r.Content, "text") {
		t.Errorf("missing argument result = %+v", r)
	}
	if r := results[4]; !r.IsError || !strings.Contains(r.Content, "local_delete") {
		t.Errorf("unknown tool result = %+v", r)
	}
	if _, err := os.Stat(filepath.Join(dir, "1.md")); err != nil {
		t.Errorf("the created item is not on disk: %v", err)
	}
}
