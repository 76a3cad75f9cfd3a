package local_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"github.com/lodeworks/lode/tool"
	"github.com/lodeworks/lode/x/tool/local"
	"github.com/lodeworks/lode/x/tool/pack"
)

// Mount the local pack on a folder of items and query it.
func Example() {
	dir, _ := os.MkdirTemp("", "board")
	defer os.RemoveAll(dir)
	_ = os.WriteFile(filepath.Join(dir, "1.md"), []byte("---\ntitle: Crash on start\nstate: open\nlabels: [bug]\n---\nSteps to reproduce...\n"), 0o644)
	_ = os.WriteFile(filepath.Join(dir, "2.md"), []byte("---\ntitle: Dark mode\nstate: open\n---\n"), 0o644)
	_ = os.WriteFile(filepath.Join(dir, "3.md"), []byte("no front matter\n"), 0o644)

	catalog, _ := pack.NewCatalog(local.New())
	settings := pack.Settings{Tools: pack.ToolsMap{{Name: "local", Options: map[string]any{"path": dir}}}}
	ctx := context.Background()
	reg := tool.NewRegistry()
	if _, err := catalog.Mount(ctx, reg, settings); err != nil {
		fmt.Println(err)
		return
	}

	b, _ := reg.Lookup("local_query")
	out, _ := b.Call(ctx, tool.NoSandbox(), `{"filter": {"field": "labels", "op": "contains", "value": "bug"}}`)
	js, _ := json.Marshal(out.(*tool.Result).Value)
	fmt.Println(string(js))
	// Output:
	// {"items":[{"id":"1","labels":["bug"],"state":"open","title":"Crash on start"}],"total":1,"offset":0,"skipped":[{"file":"3.md","reason":"no front matter: the file must start with a --- line"}]}
}
