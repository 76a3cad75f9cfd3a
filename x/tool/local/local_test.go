package local_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lodeworks/lode/tool"
	"github.com/lodeworks/lode/x/tool/local"
	"github.com/lodeworks/lode/x/tool/pack"
	"github.com/lodeworks/lode/x/tool/query"
)

var fixed = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// board mounts the local pack on a fresh folder inside a parent folder (so
// a test can check nothing was written beside it) and returns the registry.
func board(t *testing.T) (reg tool.Registry, dir, parent string) {
	t.Helper()
	parent = t.TempDir()
	dir = filepath.Join(parent, "board")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	catalog, err := pack.NewCatalog(local.New(local.WithClock(func() time.Time { return fixed })))
	if err != nil {
		t.Fatal(err)
	}
	settings, err := pack.ParseConfig(fmt.Appendf(nil, "tools:\n  local:\n    path: %q\n", dir))
	if err != nil {
		t.Fatal(err)
	}
	reg = tool.NewRegistry()
	if _, err := catalog.Mount(context.Background(), reg, settings); err != nil {
		t.Fatal(err)
	}
	return reg, dir, parent
}

// call runs a tool through the registry, as the handler does.
func call(t *testing.T, reg tool.Registry, name, args string) *tool.Result {
	t.Helper()
	b, ok := reg.Lookup(name)
	if !ok {
		t.Fatalf("%s is not mounted", name)
	}
	out, err := b.Call(context.Background(), tool.NoSandbox(), args)
	if err != nil {
		t.Fatalf("%s(%s): %v", name, args, err)
	}
	res, ok := out.(*tool.Result)
	if !ok {
		t.Fatalf("%s returned %T", name, out)
	}
	return res
}

// value returns a successful result's value as JSON-decoded data.
func value(t *testing.T, res *tool.Result) map[string]any {
	t.Helper()
	if res.IsError {
		t.Fatalf("unexpected failure: %s", res.Content)
	}
	raw, err := json.Marshal(res.Value)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

func failure(t *testing.T, res *tool.Result, want string) {
	t.Helper()
	if !res.IsError || res.Content != want {
		t.Fatalf("result = %+v\nwant failure %q", res, want)
	}
}

func writeFile(t *testing.T, dir, name, content string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func readFile(t *testing.T, dir, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestTools(t *testing.T) {
	reg, _, _ := board(t)
	var names []string
	for _, tl := range reg.Tools() {
		names = append(names, tl.Name)
	}
	want := []string{"local_add_label", "local_comment", "local_create", "local_get", "local_query", "local_update_state"}
	if !reflect.DeepEqual(names, want) {
		t.Errorf("tools = %v", names)
	}
	b, _ := reg.Lookup("local_query")
	if !b.Tool.Hints.ReadOnly {
		t.Error("local_query is not read-only")
	}
}

func TestValidateOptions(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "f.md")
	writeFile(t, dir, "f.md", "x")
	missing := filepath.Join(dir, "nope")
	tests := []struct {
		name string
		opts map[string]any
		want string
	}{
		{"ok", map[string]any{"path": dir}, ""},
		{"none", nil, "path is required: the folder that holds the items"},
		{"empty", map[string]any{"path": ""}, "path is required: the folder that holds the items"},
		{"null", map[string]any{"path": nil}, "path is required: the folder that holds the items"},
		{"not text", map[string]any{"path": 3}, "path must be text, got int"},
		{"missing", map[string]any{"path": missing}, fmt.Sprintf("path %q does not exist", missing)},
		{"a file", map[string]any{"path": file}, fmt.Sprintf("path %q is not a directory", file)},
		{"unknown option", map[string]any{"path": dir, "depth": 2}, `unknown option "depth" (the local pack takes path)`},
	}
	catalog, _ := pack.NewCatalog(local.New())
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := local.ValidateOptions(tc.opts)
			if tc.want == "" {
				if err != nil {
					t.Fatal(err)
				}
			} else if err == nil || err.Error() != tc.want {
				t.Fatalf("err = %v, want %q", err, tc.want)
			}
			// At start-up, through the catalog.
			err = catalog.Validate(pack.Settings{Tools: pack.ToolsMap{{Name: "local", Options: tc.opts}}})
			if tc.want == "" {
				if err != nil {
					t.Fatal(err)
				}
			} else if err == nil || err.Error() != "tools.local: "+tc.want {
				t.Fatalf("catalog err = %v", err)
			}
		})
	}
	// Mounted as a default without options, the pack fails at start-up.
	if err := catalog.Validate(pack.Settings{Defaults: []string{"local"}}); err == nil || err.Error() != "tools.local: path is required: the folder that holds the items" {
		t.Errorf("default without path: %v", err)
	}
}

func TestLifecycle(t *testing.T) {
	reg, dir, _ := board(t)

	created := value(t, call(t, reg, "local_create", `{"title": "Crash on start", "labels": ["bug", "bug"], "stateType": "unstarted", "body": "Steps:\n1. start", "fields": {"priority": 1}}`))
	if want := map[string]any{"id": "1", "title": "Crash on start", "state": "open", "stateType": "unstarted", "labels": []any{"bug"}, "priority": 1.0}; !reflect.DeepEqual(created, want) {
		t.Errorf("created = %v", created)
	}
	if got, want := readFile(t, dir, "1.md"), "---\nid: \"1\"\ntitle: Crash on start\nstate: open\nstateType: unstarted\nlabels: [bug]\npriority: 1\n---\nSteps:\n1. start\n"; got != want {
		t.Errorf("1.md =\n%s\nwant\n%s", got, want)
	}
	value(t, call(t, reg, "local_create", `{"title": "Dark mode", "state": "todo"}`))
	value(t, call(t, reg, "local_create", `{"id": "ux-7", "title": "Typo", "labels": ["docs"]}`))
	failure(t, call(t, reg, "local_create", `{"id": "ux-7", "title": "Again"}`), `an item with id "ux-7" already exists`)
	failure(t, call(t, reg, "local_create", `{"title": "x", "fields": {"state": "done"}}`), "fields.state: set state with its own argument, not in fields")
	if got := readFile(t, dir, "ux-7.md"); !strings.Contains(got, "title: Typo") {
		t.Errorf("a refused create changed ux-7.md:\n%s", got)
	}

	// The next number follows the largest numeric id.
	if got := value(t, call(t, reg, "local_create", `{"title": "Third"}`))["id"]; got != "3" {
		t.Errorf("next id = %v, want 3", got)
	}

	q := value(t, call(t, reg, "local_query", `{"sort": [{"field": "id"}]}`))
	if q["total"] != 4.0 || q["skipped"] != nil {
		t.Errorf("query = %v", q)
	}
	if want := map[string]any{"id": "1", "title": "Crash on start", "state": "open", "stateType": "unstarted", "labels": []any{"bug"}}; !reflect.DeepEqual(q["items"].([]any)[0], want) {
		t.Errorf("default select = %v", q["items"].([]any)[0])
	}

	// State, label and comment changes keep the rest of the file.
	value(t, call(t, reg, "local_update_state", `{"id": "1", "state": "in progress", "stateType": "started"}`))
	value(t, call(t, reg, "local_add_label", `{"id": "1", "label": "ui"}`))
	before := readFile(t, dir, "1.md")
	labelled := value(t, call(t, reg, "local_add_label", `{"id": "1", "label": "ui"}`))
	if !reflect.DeepEqual(labelled["labels"], []any{"bug", "ui"}) || readFile(t, dir, "1.md") != before {
		t.Errorf("adding a label twice changed the item: %v", labelled)
	}
	value(t, call(t, reg, "local_comment", `{"id": "1", "text": "Reproduced on 1.2"}`))
	want := "---\nid: \"1\"\ntitle: Crash on start\nstate: in progress\nstateType: started\nlabels: [bug, ui]\npriority: 1\ncomments:\n  - at: \"2026-03-01T12:00:00Z\"\n    text: Reproduced on 1.2\n---\nSteps:\n1. start\n"
	if got := readFile(t, dir, "1.md"); got != want {
		t.Errorf("1.md =\n%s\nwant\n%s", got, want)
	}

	got := value(t, call(t, reg, "local_get", `{"id": "1"}`))
	if got["body"] != "Steps:\n1. start\n" || got["state"] != "in progress" || len(got["comments"].([]any)) != 1 {
		t.Errorf("get = %v", got)
	}

	q = value(t, call(t, reg, "local_query", `{"filter": {"and": [{"field": "labels", "op": "contains", "value": "UI", "ci": true}, {"field": "priority", "op": "gte", "value": 1}]}, "select": ["id", "state"]}`))
	if want := []any{map[string]any{"id": "1", "state": "in progress"}}; !reflect.DeepEqual(q["items"], want) {
		t.Errorf("filtered = %v", q["items"])
	}

	failure(t, call(t, reg, "local_get", `{"id": "99"}`), `no item with id "99"`)
	failure(t, call(t, reg, "local_update_state", `{"id": "99", "state": "done"}`), `no item with id "99"`)
	failure(t, call(t, reg, "local_query", `{"filter": {"field": "state", "op": "lt", "value": true}}`), `query: filter.value: lt needs a number or a string, got a boolean`)
	failure(t, call(t, reg, "local_query", `{"filter": `+strings.Repeat(`{"not": `, 9)+`{"field": "a", "op": "exists", "value": true}`+strings.Repeat("}", 9)+`}`), `query: filter.not.not.not.not.not.not.not.not: the filter nests deeper than 8 levels`)
	// What the schema already refuses never reaches the tool.
	for _, bad := range []string{`{"filter": {"field": "state", "op": "like", "value": "x"}}`, `{"limit": 500}`, `{"id": "1"}`} {
		b, _ := reg.Lookup("local_query")
		var ae *tool.ArgumentsError
		if _, err := b.Call(context.Background(), tool.NoSandbox(), bad); !errors.As(err, &ae) {
			t.Errorf("local_query(%s): err = %v, want an ArgumentsError", bad, err)
		}
	}

	// No temporary file is left behind.
	entries, _ := os.ReadDir(dir)
	var files []string
	for _, e := range entries {
		files = append(files, e.Name())
	}
	if want := []string{"1.md", "2.md", "3.md", "ux-7.md"}; !reflect.DeepEqual(files, want) {
		t.Errorf("board files = %v", files)
	}
}

// An edit keeps what a person wrote: key order, free fields, comments in
// the YAML, CRLF bodies.
func TestEditKeepsTheFile(t *testing.T) {
	reg, dir, _ := board(t)
	writeFile(t, dir, "a.md", "---\n# owner: ops\ntitle: Hand written\ndue: 2026-04-01\nstate: open # triaged\nextra: {nested: [1, 2]}\n---\r\nBody with CRLF\r\n\r\nMore.\r\n")
	value(t, call(t, reg, "local_update_state", `{"id": "a", "state": "done"}`))
	want := "---\n# owner: ops\ntitle: Hand written\ndue: 2026-04-01\nstate: done\nextra: {nested: [1, 2]}\n---\r\nBody with CRLF\r\n\r\nMore.\r\n"
	if got := readFile(t, dir, "a.md"); got != want {
		t.Errorf("a.md =\n%q\nwant\n%q", got, want)
	}
	got := value(t, call(t, reg, "local_get", `{"id": "a"}`))
	if got["due"] != "2026-04-01T00:00:00Z" || got["id"] != "a" {
		t.Errorf("get = %v", got)
	}
	q := value(t, call(t, reg, "local_query", `{"filter": {"field": "due", "op": "lt", "value": "2026-05"}, "select": ["extra"]}`))
	if want := []any{map[string]any{"extra": map[string]any{"nested": []any{1.0, 2.0}}}}; !reflect.DeepEqual(q["items"], want) {
		t.Errorf("query on a free field = %v", q["items"])
	}
}

func TestMalformedItems(t *testing.T) {
	reg, dir, _ := board(t)
	writeFile(t, dir, "good.md", "---\ntitle: Fine\n---\n")
	files := map[string]string{
		"none.md":      "just text\n",
		"empty.md":     "",
		"open.md":      "---\ntitle: never closed\n",
		"yaml.md":      "---\ntitle: [unclosed\n---\n",
		"list.md":      "---\n- a\n- b\n---\n",
		"notitle.md":   "---\nstate: open\n---\n",
		"numtitle.md":  "---\ntitle: 12\n---\n",
		"labels.md":    "---\ntitle: t\nlabels: bug\n---\n",
		"labelmaps.md": "---\ntitle: t\nlabels: [{a: 1}]\n---\n",
		"state.md":     "---\ntitle: t\nstate: [open]\n---\n",
		"mismatch.md":  "---\nid: other\ntitle: t\n---\n",
		"twice.md":     "---\ntitle: a\ntitle: b\n---\n",
		"comments.md":  "---\ntitle: t\ncomments: none\n---\n",
		"bad name.md":  "---\ntitle: t\n---\n",
		"big.md":       "---\ntitle: big\n---\n" + strings.Repeat("x", 1<<20),
		".hidden.md":   "not read",
		"notes.txt":    "not read",
		".1.md.ab.tmp": "left by a crash",
	}
	for name, content := range files {
		writeFile(t, dir, name, content)
	}
	if err := os.Mkdir(filepath.Join(dir, "folder.md"), 0o755); err != nil {
		t.Fatal(err)
	}
	q := value(t, call(t, reg, "local_query", `{}`))
	if q["total"] != 1.0 {
		t.Errorf("total = %v, want only good.md", q["total"])
	}
	skipped := map[string]string{}
	for _, s := range q["skipped"].([]any) {
		m := s.(map[string]any)
		skipped[m["file"].(string)] = m["reason"].(string)
	}
	want := map[string]string{
		"none.md":      "no front matter: the file must start with a --- line",
		"empty.md":     "no front matter: the file must start with a --- line",
		"open.md":      "front matter is not closed by a --- line",
		"yaml.md":      "front matter is not valid YAML: yaml: line 1: did not find expected ',' or ']'",
		"list.md":      "front matter must be a map of fields",
		"notitle.md":   "title is missing",
		"numtitle.md":  `title must be text, got int "12"`,
		"labels.md":    `labels must be a list, got str "bug"`,
		"labelmaps.md": "labels must be a list of text, got a map",
		"state.md":     "state must be text, got a list",
		"mismatch.md":  `front matter id str "other" does not match the file name mismatch.md`,
		"twice.md":     `line 3: "title" is given twice`,
		"comments.md":  `comments must be a list, got str "none"`,
		"bad name.md":  "the file name is not a valid item id",
		"big.md":       "the file is larger than 1048576 bytes",
	}
	if !reflect.DeepEqual(skipped, want) {
		keys := make([]string, 0)
		for k := range want {
			if skipped[k] != want[k] {
				keys = append(keys, fmt.Sprintf("%s: got %q want %q", k, skipped[k], want[k]))
			}
		}
		for k := range skipped {
			if _, ok := want[k]; !ok {
				keys = append(keys, fmt.Sprintf("%s: unexpected %q", k, skipped[k]))
			}
		}
		sort.Strings(keys)
		t.Errorf("skipped:\n%s", strings.Join(keys, "\n"))
	}

	// A malformed item is refused by get and by changes, and left alone.
	failure(t, call(t, reg, "local_get", `{"id": "notitle"}`), `item "notitle" cannot be read (notitle.md): title is missing; fix or remove the file`)
	failure(t, call(t, reg, "local_add_label", `{"id": "yaml", "label": "x"}`), `item "yaml" cannot be read (yaml.md): front matter is not valid YAML: yaml: line 1: did not find expected ',' or ']'; fix or remove the file`)
	failure(t, call(t, reg, "local_get", `{"id": "folder"}`), `item "folder" cannot be read (folder.md): not a regular file; fix or remove the file`)
	if got := readFile(t, dir, "yaml.md"); got != files["yaml.md"] {
		t.Errorf("refused change rewrote yaml.md: %q", got)
	}
}

func TestPathEscapes(t *testing.T) {
	reg, dir, parent := board(t)
	writeFile(t, parent, "secret.md", "---\ntitle: outside\n---\n")
	if err := os.Symlink(filepath.Join(parent, "secret.md"), filepath.Join(dir, "link.md")); err != nil {
		t.Fatal(err)
	}
	msg := func(id string) string {
		if len(id) > 60 {
			id = id[:60] + "..."
		}
		return fmt.Sprintf("invalid id %q: an id is 1 to 100 letters, digits, '.', '_' or '-', starting with a letter or digit", id)
	}
	ids := []string{"../secret", "..", ".", "/etc/passwd", "a/b", `a\b`, "a\x00b", ".hidden", "-x", "", strings.Repeat("a", 101), "é"}
	for _, id := range ids {
		arg, _ := json.Marshal(id)
		failure(t, call(t, reg, "local_get", `{"id": `+string(arg)+`}`), msg(id))
		failure(t, call(t, reg, "local_update_state", `{"id": `+string(arg)+`, "state": "x"}`), msg(id))
		failure(t, call(t, reg, "local_comment", `{"id": `+string(arg)+`, "text": "x"}`), msg(id))
		if id != "" {
			failure(t, call(t, reg, "local_create", `{"id": `+string(arg)+`, "title": "x"}`), msg(id))
		}
	}
	// A symlink inside the folder that points outside it is not followed.
	res := call(t, reg, "local_get", `{"id": "link"}`)
	if !res.IsError || !strings.Contains(res.Content, `item "link" cannot be read (link.md)`) || !strings.Contains(res.Content, "escapes") {
		t.Errorf("symlink get = %+v", res)
	}
	q := value(t, call(t, reg, "local_query", `{}`))
	if sk := q["skipped"].([]any); len(sk) != 1 || sk[0].(map[string]any)["file"] != "link.md" {
		t.Errorf("symlink query skipped = %v", sk)
	}
	// Nothing was written outside the folder.
	entries, _ := os.ReadDir(parent)
	if len(entries) != 2 {
		t.Errorf("parent holds %d entries, want board and secret.md", len(entries))
	}
	if got := readFile(t, parent, "secret.md"); got != "---\ntitle: outside\n---\n" {
		t.Errorf("secret.md changed: %q", got)
	}
}

func TestNotConfigured(t *testing.T) {
	p := local.New()
	out, err := p.Call(context.Background(), "local_query", map[string]any{})
	if err != nil {
		t.Fatal(err)
	}
	failure(t, out.(*tool.Result), "the local pack is not configured: tools.local: path is required: the folder that holds the items")

	// The folder removed after start-up.
	dir := filepath.Join(t.TempDir(), "gone")
	ctx := pack.WithSettings(context.Background(), pack.Settings{Tools: pack.ToolsMap{{Name: "local", Options: map[string]any{"path": dir}}}})
	out, _ = p.Call(ctx, "local_get", map[string]any{"id": "1"})
	failure(t, out.(*tool.Result), fmt.Sprintf("the local pack is not configured: tools.local: path %q does not exist", dir))
}

// Concurrent changes to one item within a process all land.
func TestConcurrentChanges(t *testing.T) {
	reg, dir, _ := board(t)
	value(t, call(t, reg, "local_create", `{"id": "x", "title": "Shared"}`))
	b, _ := reg.Lookup("local_add_label")
	var wg sync.WaitGroup
	errs := make(chan error, 20)
	for i := range 20 {
		wg.Go(func() {
			out, err := b.Call(context.Background(), tool.NoSandbox(), fmt.Sprintf(`{"id": "x", "label": "l%02d"}`, i))
			if err == nil && out.(*tool.Result).IsError {
				err = errors.New(out.(*tool.Result).Content)
			}
			if err != nil {
				errs <- err
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	got := value(t, call(t, reg, "local_get", `{"id": "x"}`))
	if n := len(got["labels"].([]any)); n != 20 {
		t.Errorf("%d labels, want 20; file:\n%s", n, readFile(t, dir, "x.md"))
	}
}

// Concurrent creates without an id get distinct ids.
func TestConcurrentCreates(t *testing.T) {
	reg, dir, _ := board(t)
	b, _ := reg.Lookup("local_create")
	var wg sync.WaitGroup
	for range 10 {
		wg.Go(func() {
			if _, err := b.Call(context.Background(), tool.NoSandbox(), `{"title": "t"}`); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	entries, _ := os.ReadDir(dir)
	if len(entries) != 10 {
		t.Errorf("%d files, want 10", len(entries))
	}
}

func TestSkills(t *testing.T) {
	catalog, _ := pack.NewCatalog(local.New())
	r, err := catalog.Router(context.Background(), pack.Settings{Tools: pack.ToolsMap{{Name: "local", Options: map[string]any{"path": t.TempDir()}}}})
	if err != nil {
		t.Fatal(err)
	}
	sk := r.Skills()
	if len(sk) != 1 || sk[0].Pack != "local" {
		t.Fatalf("Skills = %+v", sk)
	}
	data, err := fs.ReadFile(sk[0].FS, "local-board/SKILL.md")
	if err != nil || !strings.HasPrefix(string(data), "---\nname: local-board\n") {
		t.Errorf("SKILL.md = %q, %v", data, err)
	}
}

func TestQueryLimits(t *testing.T) {
	dir := t.TempDir()
	for i := range 3 {
		writeFile(t, dir, fmt.Sprintf("%d.md", i), "---\ntitle: t\n---\n")
	}
	p := local.New(local.WithQueryLimits(query.Limits{MaxPageSize: 2}))
	ctx := pack.WithSettings(context.Background(), pack.Settings{Tools: pack.ToolsMap{{Name: "local", Options: map[string]any{"path": dir}}}})
	out, err := p.Call(ctx, "local_query", map[string]any{"limit": 3})
	if err != nil {
		t.Fatal(err)
	}
	if res := out.(*tool.Result); !res.IsError || !strings.Contains(res.Content, "invalid arguments for local_query") || !strings.Contains(res.Content, "/properties/limit") {
		t.Errorf("limit over the pack's maximum = %+v", res)
	}
	out, _ = p.Call(ctx, "local_query", map[string]any{})
	if v := out.(*tool.Result).Value.(local.QueryResult); len(v.Items) != 2 || v.Total != 3 || v.NextCursor == "" {
		t.Errorf("default page = %+v", v)
	}
}

// TestNextIDAtTheTop: an item numbered with the largest int leaves no next
// number; create without an id says so instead of writing an item whose
// id wrapped round to a negative number no tool could name again.
func TestNextIDAtTheTop(t *testing.T) {
	reg, dir, _ := board(t)
	value(t, call(t, reg, "local_create", `{"id": "9223372036854775806", "title": "Almost the top"}`))
	if got := value(t, call(t, reg, "local_create", `{"title": "The top"}`))["id"]; got != "9223372036854775807" {
		t.Fatalf("next id = %v, want 9223372036854775807", got)
	}
	failure(t, call(t, reg, "local_create", `{"title": "Past the top"}`), "cannot find a free id; give one")
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var files []string
	for _, e := range entries {
		files = append(files, e.Name())
	}
	if want := []string{"9223372036854775806.md", "9223372036854775807.md"}; !reflect.DeepEqual(files, want) {
		t.Errorf("board files = %v, want %v", files, want)
	}
	if q := value(t, call(t, reg, "local_query", `{}`)); q["total"] != 2.0 || q["skipped"] != nil {
		t.Errorf("query = %v", q)
	}
}

// JSON has no NaN or infinity. A field holding one (YAML .nan, .inf,
// -.inf), at any depth, is filtered and sorted as that number and returned
// as the text "NaN", "Infinity" or "-Infinity"; the file keeps what it had.
func TestNonFiniteFields(t *testing.T) {
	reg, dir, _ := board(t)
	nan := "---\ntitle: nan\nscore: .nan\nextra: {list: [1, .NaN, -.inf], deep: {x: .Inf}}\n---\n"
	writeFile(t, dir, "a.md", nan)
	writeFile(t, dir, "b.md", "---\ntitle: high\nscore: .inf\n---\n")
	writeFile(t, dir, "c.md", "---\ntitle: low\nscore: -.inf\n---\n")
	writeFile(t, dir, "d.md", "---\ntitle: two\nscore: 2\n---\n")
	writeFile(t, dir, "e.md", "---\ntitle: text\nscore: \".nan\"\n---\n")

	items := func(args string) []any {
		t.Helper()
		q := value(t, call(t, reg, "local_query", args))
		if q["skipped"] != nil {
			t.Fatalf("skipped = %v", q["skipped"])
		}
		return q["items"].([]any)
	}
	row := func(id string, score any) map[string]any { return map[string]any{"id": id, "score": score} }
	tests := []struct {
		args string
		want []any
	}{
		{`{"select": ["id", "score"], "sort": [{"field": "score"}]}`,
			[]any{row("c", "-Infinity"), row("d", 2.0), row("b", "Infinity"), row("a", "NaN"), row("e", ".nan")}},
		{`{"select": ["id", "score"], "sort": [{"field": "score", "desc": true}]}`,
			[]any{row("b", "Infinity"), row("d", 2.0), row("c", "-Infinity"), row("a", "NaN"), row("e", ".nan")}},
		{`{"select": ["id"], "filter": {"field": "score", "op": "gte", "value": 0}}`,
			[]any{map[string]any{"id": "b"}, map[string]any{"id": "d"}}},
		{`{"select": ["id"], "filter": {"field": "score", "op": "lte", "value": 0}}`,
			[]any{map[string]any{"id": "c"}}},
		{`{"select": ["id"], "filter": {"field": "score", "op": "ne", "value": 2}}`,
			[]any{map[string]any{"id": "a"}, map[string]any{"id": "b"}, map[string]any{"id": "c"}, map[string]any{"id": "e"}}},
		{`{"select": ["id"], "filter": {"field": "score", "op": "eq", "value": "NaN"}}`,
			[]any{}},
		{`{"select": ["extra"], "filter": {"field": "id", "op": "eq", "value": "a"}}`,
			[]any{map[string]any{"extra": map[string]any{"list": []any{1.0, "NaN", "-Infinity"}, "deep": map[string]any{"x": "Infinity"}}}}},
	}
	for _, tc := range tests {
		if got := items(tc.args); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s =\n%v\nwant\n%v", tc.args, got, tc.want)
		}
	}

	got := value(t, call(t, reg, "local_get", `{"id": "a"}`))
	if got["score"] != "NaN" || !reflect.DeepEqual(got["extra"], map[string]any{"list": []any{1.0, "NaN", "-Infinity"}, "deep": map[string]any{"x": "Infinity"}}) {
		t.Errorf("get = %v", got)
	}
	if got := value(t, call(t, reg, "local_add_label", `{"id": "a", "label": "odd"}`)); got["score"] != "NaN" {
		t.Errorf("add_label = %v", got)
	}
	if got, want := readFile(t, dir, "a.md"), "---\ntitle: nan\nscore: .nan\nextra: {list: [1, .NaN, -.inf], deep: {x: .Inf}}\nlabels: [odd]\n---\n"; got != want {
		t.Errorf("a.md =\n%s\nwant\n%s", got, want)
	}
}
