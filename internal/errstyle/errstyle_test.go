package errstyle

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"
)

// importNames are the packages imported under another name than their
// package clause, because it would shadow a core package.
var importNames = map[string]string{
	"x/tool": "xtool",
}

// sentinel is one exported error variable made with a literal message.
type sentinel struct {
	pos     string // file:line
	dir     string // the package's directory, from the module root
	pkg     string // its package clause
	name    string
	message string
}

// moduleRoot is the directory of the go.mod above this package.
func moduleRoot(t *testing.T) string {
	dir, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "go.mod")); err != nil {
		t.Fatalf("no go.mod at %s: %v", dir, err)
	}
	return dir
}

// sentinels finds every package-level exported Err* variable assigned
// errors.New or fmt.Errorf with a literal message, in the non-test files
// of the module at root.
func sentinels(t *testing.T, root string) []sentinel {
	var out []sentinel
	fset := token.NewFileSet()
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			name := d.Name()
			if path != root && (strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_") || name == "testdata" || name == "vendor" || name == "node_modules") {
				return filepath.SkipDir
			}
			if _, err := os.Stat(filepath.Join(path, "go.mod")); err == nil && path != root {
				return filepath.SkipDir // a nested module follows its own rules
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(root, filepath.Dir(path))
		if err != nil {
			return err
		}
		for _, decl := range f.Decls {
			gd, ok := decl.(*ast.GenDecl)
			if !ok || gd.Tok != token.VAR {
				continue
			}
			for _, spec := range gd.Specs {
				vs := spec.(*ast.ValueSpec)
				for i, n := range vs.Names {
					if !n.IsExported() || !strings.HasPrefix(n.Name, "Err") || i >= len(vs.Values) {
						continue
					}
					msg, ok := literalError(vs.Values[i])
					if !ok {
						continue
					}
					p := fset.Position(n.Pos())
					out = append(out, sentinel{
						pos:     filepath.ToSlash(filepath.Join(rel, filepath.Base(p.Filename))) + ":" + strconv.Itoa(p.Line),
						dir:     filepath.ToSlash(rel),
						pkg:     f.Name.Name,
						name:    n.Name,
						message: msg,
					})
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// literalError returns the message of errors.New("...") or
// fmt.Errorf("...", ...).
func literalError(e ast.Expr) (string, bool) {
	call, ok := e.(*ast.CallExpr)
	if !ok || len(call.Args) == 0 {
		return "", false
	}
	sel, ok := call.Fun.(*ast.SelectorExpr)
	if !ok {
		return "", false
	}
	pkg, ok := sel.X.(*ast.Ident)
	if !ok || !(pkg.Name == "errors" && sel.Sel.Name == "New" || pkg.Name == "fmt" && sel.Sel.Name == "Errorf") {
		return "", false
	}
	lit, ok := call.Args[0].(*ast.BasicLit)
	if !ok || lit.Kind != token.STRING {
		return "", false
	}
	s, err := strconv.Unquote(lit.Value)
	return s, err == nil
}

// problem says what is wrong with s's message, or "".
func problem(s sentinel) string {
	// The command prints its errors after "lode: " itself.
	if s.pkg == "main" || s.dir == "x/cli" {
		return ""
	}
	name := s.pkg
	if alias, ok := importNames[s.dir]; ok {
		name = alias
	}
	prefix := name + ": "
	rest, ok := strings.CutPrefix(s.message, prefix)
	switch {
	case !ok:
		return "does not start with " + strconv.Quote(prefix)
	case strings.Contains(rest, prefix):
		return "repeats " + strconv.Quote(prefix)
	case rest == "":
		return "says nothing after the prefix"
	}
	if r, _ := utf8.DecodeRuneInString(rest); unicode.IsUpper(r) {
		return "goes on with a capital letter"
	}
	return ""
}

func TestErrorMessages(t *testing.T) {
	all := sentinels(t, moduleRoot(t))
	// The module has dozens; far fewer means the walk missed the sources.
	if len(all) < 30 {
		t.Fatalf("found %d exported error variables; the walk missed the sources", len(all))
	}
	for _, s := range all {
		if p := problem(s); p != "" {
			t.Errorf("%s: %s = %q %s", s.pos, s.name, s.message, p)
		}
	}
}

func TestProblem(t *testing.T) {
	cases := []struct {
		dir, pkg, msg, want string
	}{
		{"loop", "loop", "loop: no such pending call", ""},
		{"x/tool", "tool", "xtool: the call waits for approval", ""},
		{"x/tool", "tool", "tool: the call waits for approval", `does not start with "xtool: "`},
		{"x/agent", "agent", "x/agent: too deep", `does not start with "agent: "`},
		{"tool", "tool", "tool name already taken", `does not start with "tool: "`},
		{"loop", "loop", "loop: run: loop: limit", `repeats "loop: "`},
		{"loop", "loop", "loop: Limit reached", "goes on with a capital letter"},
		{"loop", "loop", "loop: ", "says nothing after the prefix"},
		{"cmd/lode", "main", "whatever", ""},
		{"x/cli", "cli", "whatever", ""},
	}
	for _, c := range cases {
		got := problem(sentinel{dir: c.dir, pkg: c.pkg, message: c.msg})
		if got != c.want {
			t.Errorf("%s %q: %q, want %q", c.dir, c.msg, got, c.want)
		}
	}
}

// The walk reads every package of the module, skips tests, test data and
// nested modules, and finds grouped and single declarations alike.
func TestSentinelsWalk(t *testing.T) {
	root := t.TempDir()
	files := map[string]string{
		"go.mod":            "module example.com/m\n",
		"a/a.go":            "package a\n\nimport \"errors\"\n\nvar ErrOne = errors.New(\"a: one\")\n\nvar errHidden = errors.New(\"hidden\")\n",
		"a/a_test.go":       "package a\n\nimport \"errors\"\n\nvar ErrTest = errors.New(\"test\")\n",
		"x/b/b.go":          "package b\n\nimport (\n\t\"errors\"\n\t\"fmt\"\n)\n\nvar (\n\tErrTwo = fmt.Errorf(\"b: two\")\n\tErrThree, ErrFour = errors.New(\"b: three\"), errors.New(\"four\")\n\tErrWrapped = fmt.Errorf(\"b: %w\", ErrTwo)\n)\n",
		"x/b/testdata/c.go": "package c\n\nimport \"errors\"\n\nvar ErrData = errors.New(\"data\")\n",
		"nested/go.mod":     "module example.com/nested\n",
		"nested/n.go":       "package nested\n\nimport \"errors\"\n\nvar ErrNested = errors.New(\"nested\")\n",
	}
	for name, body := range files {
		path := filepath.Join(root, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	var got []string
	for _, s := range sentinels(t, root) {
		got = append(got, s.dir+" "+s.name+" "+s.message+" "+problem(s))
	}
	slices.Sort(got)
	want := []string{
		"a ErrOne a: one ",
		"x/b ErrFour four does not start with \"b: \"",
		"x/b ErrThree b: three ",
		"x/b ErrTwo b: two ",
		"x/b ErrWrapped b: %w ",
	}
	if !slices.Equal(got, want) {
		t.Fatalf("found\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
