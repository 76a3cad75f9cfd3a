package eval_test

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/lodeworks/lode/x/eval"
)

func TestLoadSuite(t *testing.T) {
	s, err := eval.LoadSuite(filepath.Join("..", "..", "examples", "evals", "suite.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	r := eval.RunSuite(t.Context(), s)
	if r.Suite != "packs-from-yaml" || len(r.Cases) != 3 {
		t.Fatalf("suite %q with %d cases", r.Suite, len(r.Cases))
	}
	for _, c := range r.Cases {
		if c.Status != eval.Passed {
			t.Errorf("%s: %s %v", c.Name, c.Status, c.Failures)
		}
	}
	if c := r.Cases[2]; len(c.Calls) != 1 || !c.Calls[0].Refused {
		t.Errorf("reader-may-not-write: calls %+v", c.Calls)
	}
}

func TestLoadSuiteBadFiles(t *testing.T) {
	dir := t.TempDir()
	const model = "    model: {script: [{text: hi}]}\n"
	cases := []struct {
		name, text, want string
	}{
		{"not YAML", "cases: [", "yaml: line 1: did not find expected node content"},
		{"unknown key", "cases:\n  - name: a\n    promt: hi\n" + model, "yaml: unmarshal errors:\n  line 3: field promt not found in type eval.caseFile"},
		{"no cases", "name: x\n", "has no cases"},
		{"no name", "cases:\n  - prompt: hi\n" + model, "case 1 has no name"},
		{"same name", "cases:\n  - name: a\n" + model + "  - name: a\n" + model, "case 2 (a): the name is taken by an earlier case"},
		{"no model", "cases:\n  - name: a\n", "case 1 (a): model: give exactly one of script, cassette, recorded"},
		{"two models", "cases:\n  - name: a\n    model: {script: [{text: hi}], cassette: c.yaml, name: m}\n",
			"case 1 (a): model: give exactly one of script, cassette, recorded"},
		{"step with both", "cases:\n  - name: a\n    model: {script: [{text: hi, call: {name: x}}]}\n",
			"case 1 (a): model: script step 1: give text or call, not both or neither"},
		{"cassette without a model name", "cases:\n  - name: a\n    model: {cassette: c.yaml}\n",
			"case 1 (a): model: name the model the recording was made with (name:)"},
		{"unknown pack", "cases:\n  - name: a\n    tools: {bash: {}}\n" + model,
			`case 1 (a): tools: unknown pack "bash"; the packs are calculator, filesystem`},
		{"filesystem without root", "cases:\n  - name: a\n    tools: {filesystem: {}}\n" + model,
			"case 1 (a): filesystem: option root is required: the directory the tools are confined to"},
		{"bad duration", "cases:\n  - name: a\n" + model + "    expect: {max_time: soon}\n",
			`case 1 (a): expect.max_time: time: invalid duration "soon"`},
		{"bad policy", "cases:\n  - name: a\n" + model + "    policy: {roles: {r: {allow: {tool: [x]}}}}\n",
			`case 1 (a): policy: invalid document (line 4): validating root: validating /properties/roles: validating /properties/roles/additionalProperties: validating /$defs/role: validating /$defs/role/properties/allow: validating /$defs/rules: unexpected additional properties ["tool"]; see policy.schema.json`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			path := filepath.Join(dir, "suite.yaml")
			if err := os.WriteFile(path, []byte(c.text), 0o600); err != nil {
				t.Fatal(err)
			}
			_, err := eval.LoadSuite(path)
			if !errors.Is(err, eval.ErrSuiteFile) {
				t.Fatalf("err = %v, want ErrSuiteFile", err)
			}
			want := "eval: bad suite file: " + path + ": " + c.want
			if c.name == "no cases" {
				want = "eval: bad suite file: " + path + " " + c.want
			}
			if err.Error() != want {
				t.Errorf("err:\n got %s\nwant %s", err, want)
			}
		})
	}
	if _, err := eval.LoadSuite(filepath.Join(dir, "none.yaml")); !errors.Is(err, eval.ErrSuiteFile) || !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing file: %v", err)
	}
}
