package layers

import (
	"bufio"
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

const module = "github.com/lodeworks/lode"

// layering lists the module's packages from the bottom up, as paths below
// the module; "dir/..." stands for every package under dir. A package is
// in the layer of its longest matching entry, and may import its own
// layer and those before it.
var layering = [][]string{
	{"artifact", "internal/structjson", "internal/secrets", "internal/pgtest", "internal/browsertest", "internal/errstyle", "internal/layers", "internal/filesize"},
	{"ledger"},
	{"ledger/...", "tool", "capture", "internal/runspan", "internal/allstores"},
	{"provider"},
	// The model adapters are providers: they know nothing of the loop,
	// and post their events with provider.Notify.
	{"x/provider/..."},
	// providertest drives the adapters through loop.Run for their tests.
	{"loop", "loop/...", "x/provider/internal/providertest"},
	{"x/..."},
	{"x/cli", "cmd/...", "examples/...", "bench/..."},
}

// layerOf returns the index in layering of the package at rel (a path
// below the module), or -1 when no entry matches.
func layerOf(rel string) int {
	best, bestLen := -1, -1
	for i, entries := range layering {
		for _, e := range entries {
			n := 0
			if dir, ok := strings.CutSuffix(e, "/..."); ok {
				if rel != dir && !strings.HasPrefix(rel, dir+"/") {
					continue
				}
				n = len(dir)
			} else if rel == e {
				n = len(e) + 1 // an exact entry beats a pattern of the same path
			} else {
				continue
			}
			if n > bestLen {
				best, bestLen = i, n
			}
		}
	}
	return best
}

// problem says what is wrong with the package at pkg importing imp (both
// paths below the module), or "".
func problem(pkg, imp string) string {
	from, to := layerOf(pkg), layerOf(imp)
	switch {
	case from < 0:
		return pkg + " is in no layer; add it to layering"
	case to < 0:
		return imp + " is in no layer; add it to layering"
	case to > from:
		return pkg + " imports " + imp + ", which is above it"
	case !strings.HasPrefix(pkg, "x/") && from < layerOf("x/") && strings.HasPrefix(imp, "x/"):
		// The model adapters sit below loop, and the core still imports
		// nothing under x/.
		return pkg + " is in the core and imports " + imp + ", under x/"
	}
	return ""
}

// imports lists, for every package of the module, the module's packages
// it imports in its non-test files, as paths below the module.
func imports(t *testing.T) map[string][]string {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	goCmd := filepath.Join(runtime.GOROOT(), "bin", "go")
	if _, err := os.Stat(goCmd); err != nil {
		if goCmd, err = exec.LookPath("go"); err != nil {
			t.Fatalf("no go command: %v", err)
		}
	}
	cmd := exec.Command(goCmd, "list", "-f", "{{.ImportPath}}{{range .Imports}} {{.}}{{end}}", "./...")
	cmd.Dir = root
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, stderr.Bytes())
	}
	rel := func(p string) (string, bool) {
		r, ok := strings.CutPrefix(p, module+"/")
		return r, ok
	}
	all := map[string][]string{}
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) == 0 {
			continue
		}
		pkg, ok := rel(fields[0])
		if !ok {
			t.Fatalf("go list named %s, outside the module", fields[0])
		}
		all[pkg] = nil
		for _, imp := range fields[1:] {
			if r, ok := rel(imp); ok {
				all[pkg] = append(all[pkg], r)
			}
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return all
}

func TestImportsGoDown(t *testing.T) {
	if testing.Short() {
		t.Skip("lists every package of the module")
	}
	all := imports(t)
	// The module has dozens of packages; far fewer means go list missed them.
	if len(all) < 40 {
		t.Fatalf("go list found %d packages", len(all))
	}
	for pkg, imps := range all {
		if p := problem(pkg, pkg); p != "" {
			t.Error(p)
			continue
		}
		for _, imp := range imps {
			if p := problem(pkg, imp); p != "" {
				t.Error(p)
			}
		}
	}
}

func TestProblem(t *testing.T) {
	cases := []struct{ pkg, imp, want string }{
		{"ledger", "artifact", ""},
		{"ledger/file", "ledger", ""},
		{"ledger/sqlstore/sqlite", "ledger/sqlstore", ""},
		{"provider", "tool", ""},
		{"loop", "provider", ""},
		{"loop/internal/storetest", "loop", ""},
		{"x/tool", "loop", ""},
		{"x/provider/fallback", "provider", ""},
		{"x/provider/openai/responses", "x/provider/openai", ""},
		{"x/provider/internal/providertest", "loop", ""},
		{"x/agent", "x/provider/script", ""},
		{"x/provider/fallback", "loop", "x/provider/fallback imports loop, which is above it"},
		{"x/provider/script", "x/tool", "x/provider/script imports x/tool, which is above it"},
		{"loop", "x/provider/script", "loop is in the core and imports x/provider/script, under x/"},
		{"loop/internal/storetest", "x/provider/fallback", "loop/internal/storetest is in the core and imports x/provider/fallback, under x/"},
		{"x/cli", "x/tool/pack", ""},
		{"cmd/lode", "x/cli", ""},
		{"ledger", "ledger/file", "ledger imports ledger/file, which is above it"},
		{"tool", "provider", "tool imports provider, which is above it"},
		{"loop/internal/storetest", "x/tool", "loop/internal/storetest imports x/tool, which is above it"},
		{"provider", "loop", "provider imports loop, which is above it"},
		{"x/tool", "x/cli", "x/tool imports x/cli, which is above it"},
		{"artifact", "ledger", "artifact imports ledger, which is above it"},
		{"newthing", "artifact", "newthing is in no layer; add it to layering"},
		{"loop", "loopy", "loopy is in no layer; add it to layering"},
	}
	for _, c := range cases {
		if got := problem(c.pkg, c.imp); got != c.want {
			t.Errorf("%s -> %s: %q, want %q", c.pkg, c.imp, got, c.want)
		}
	}
}
