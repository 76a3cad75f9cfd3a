package policy_test

import (
	"encoding/json"
	"errors"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/google/jsonschema-go/jsonschema"
	"go.yaml.in/yaml/v3"

	"github.com/lodeworks/lode/x/policy"
)

const testPolicy = `roles:
  viewer:
    allow:
      packs: [calculator]
      tools: ["fs_read*", fs_list]
  editor:
    allow:
      tools: ["fs_*"]
      mcp: [docs]
    deny:
      tools: [fs_delete]
    approve:
      tools: ["fs_write*"]
    limits:
      calls_per_turn: 2
      calls_per_run: 3
  auditor:
    allow:
      tools: ["*"]
    deny:
      packs: [calculator]
    limits:
      calls_per_turn: 5
`

func mustParse(t testing.TB, doc string) *policy.Policy {
	t.Helper()
	p, err := policy.Parse([]byte(doc))
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	return p
}

func TestDecide(t *testing.T) {
	p := mustParse(t, testPolicy)
	calc := policy.Tool{Name: "calculator__add", Source: "calculator"}
	read := policy.Tool{Name: "fs_read_file", Source: "local"}
	write := policy.Tool{Name: "fs_write_file", Source: "local"}
	del := policy.Tool{Name: "fs_delete", Source: "local"}
	search := policy.Tool{Name: "docs__search", Source: "docs"}
	for _, tc := range []struct {
		name    string
		roles   []string
		tool    policy.Tool
		allowed bool
		rule    string
		approve bool
	}{
		{"no role gets nothing", nil, read, false, policy.NoRule, false},
		{"unknown role gets nothing", []string{"root"}, read, false, policy.NoRule, false},
		{"viewer glob", []string{"viewer"}, read, true, `viewer allow tools "fs_read*" (line 5)`, false},
		{"viewer pack", []string{"viewer"}, calc, true, `viewer allow packs "calculator" (line 4)`, false},
		{"viewer may not write", []string{"viewer"}, write, false, policy.NoRule, false},
		{"editor write needs approval", []string{"editor"}, write, true, `editor allow tools "fs_*" (line 8)`, true},
		{"editor deny beats own allow", []string{"editor"}, del, false, `editor deny tools "fs_delete" (line 11)`, false},
		{"editor mcp server", []string{"editor"}, search, true, `editor allow mcp "docs" (line 9)`, false},
		{"union of allows", []string{"viewer", "editor"}, write, true, `editor allow tools "fs_*" (line 8)`, true},
		{"any deny wins over another role's allow", []string{"viewer", "auditor"}, calc, false, `auditor deny packs "calculator" (line 21)`, false},
		{"deny wins whatever the order", []string{"auditor", "viewer"}, calc, false, `auditor deny packs "calculator" (line 21)`, false},
		{"deny of editor wins over auditor's star", []string{"auditor", "editor"}, del, false, `editor deny tools "fs_delete" (line 11)`, false},
		{"approval of any role applies", []string{"auditor", "editor"}, write, true, `auditor allow tools "*" (line 19)`, true},
		{"unknown role beside a known one adds nothing", []string{"ghost", "viewer"}, write, false, policy.NoRule, false},
		{"a source is not a tool name", []string{"viewer"}, policy.Tool{Name: "calculator"}, false, policy.NoRule, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := p.Decide(tc.roles, tc.tool)
			if d.Allowed != tc.allowed || d.Rule != tc.rule || d.NeedsApproval != tc.approve {
				t.Errorf("Decide(%v, %s) = %+v, want allowed=%v rule=%q approve=%v", tc.roles, tc.tool.Name, d, tc.allowed, tc.rule, tc.approve)
			}
		})
	}
	var nilPolicy *policy.Policy
	if d := nilPolicy.Decide([]string{"viewer"}, read); d.Allowed || d.Rule != policy.NoRule {
		t.Errorf("nil policy: %+v, want nothing allowed", d)
	}
}

func TestLimitsStrictestWins(t *testing.T) {
	p := mustParse(t, testPolicy)
	for _, tc := range []struct {
		roles []string
		want  policy.Limits
	}{
		{nil, policy.Limits{}},
		{[]string{"viewer"}, policy.Limits{}},
		{[]string{"editor"}, policy.Limits{CallsPerTurn: 2, CallsPerRun: 3}},
		{[]string{"auditor", "editor"}, policy.Limits{CallsPerTurn: 2, CallsPerRun: 3}},
		{[]string{"auditor", "viewer"}, policy.Limits{CallsPerTurn: 5}},
	} {
		if got := p.Limits(tc.roles); got != tc.want {
			t.Errorf("Limits(%v) = %+v, want %+v", tc.roles, got, tc.want)
		}
	}
}

func TestParseRejects(t *testing.T) {
	for _, tc := range []struct {
		name, doc string
		want      string // a fragment of the error
	}{
		{"not yaml", "roles: [", "yaml:"},
		{"no roles", "{}", "required"},
		{"unknown top key", "roles: {}\nrules: {}\n", "rules"},
		{"unknown role key", "roles:\n  a:\n    allows: {}\n", "allows"},
		{"unknown rule key", "roles:\n  a:\n    allow:\n      tool: [x]\n", "tool"},
		{"pattern with a slash", "roles:\n  a:\n    allow:\n      tools: [\"a/b\"]\n", "a/b"},
		{"empty pattern", "roles:\n  a:\n    allow:\n      tools: [\"\"]\n", "tools"},
		{"negative limit", "roles:\n  a:\n    limits:\n      calls_per_turn: -1\n", "minimum"},
		{"limit not a number", "roles:\n  a:\n    limits:\n      calls_per_run: many\n", "calls_per_run"},
		{"tools not a list", "roles:\n  a:\n    allow:\n      tools: x\n", "tools"},
		{"a second document", "roles:\n  a:\n    allow: {tools: [x]}\n---\nroles:\n  a:\n    deny: {tools: [x]}\n", "line 5: a second YAML document"},
		{"an empty second document", "roles:\n  a:\n    allow: {tools: [x]}\n---\n", "a second YAML document"},
		{"a broken second document", "roles: {}\n---\nroles: [\n", "after the first document"},
		{"a role given twice", "roles:\n  a:\n    allow: {tools: [x]}\n  a:\n    deny: {tools: [x]}\n", "line 4: the key \"a\" is already given at line 2"},
		{"a rule given twice", "roles:\n  a:\n    deny: {tools: [x]}\n    deny: {tools: [y]}\n", "line 4: the key \"deny\" is already given at line 3"},
		{"a pattern list given twice", "roles:\n  a:\n    deny:\n      tools: [x]\n      tools: [y]\n", "line 5: the key \"tools\""},
		{"a merge key", "roles:\n  a:\n    <<: {deny: {tools: [x]}}\n    allow: {tools: [y]}\n", "line 3: a merge key"},
		{"a custom tag", "roles:\n  a:\n    deny: {tools: !later [x]}\n", "line 3: the YAML tag !later"},
		{"a binary tag", "roles:\n  a:\n    deny: {tools: [!!binary eA==]}\n", "the YAML tag !!binary"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := policy.Parse([]byte(tc.doc))
			if p != nil || !errors.Is(err, policy.ErrInvalid) {
				t.Fatalf("Parse = %v, %v; want nil and ErrInvalid", p, err)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %q does not mention %q", err, tc.want)
			}
		})
	}
}

// docExample is the YAML block of the package doc.
func docExample(t *testing.T) []byte {
	t.Helper()
	src, err := os.ReadFile("doc.go")
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for line := range strings.Lines(string(src)) {
		if rest, ok := strings.CutPrefix(line, "//\t"); ok {
			b.WriteString(rest)
		}
	}
	if b.Len() == 0 {
		t.Fatal("doc.go has no indented YAML block")
	}
	return []byte(b.String())
}

// TestExamplesValidate checks every policy the docs and examples show
// against the published schema, with the validator itself, and parses it.
func TestExamplesValidate(t *testing.T) {
	var s jsonschema.Schema
	if err := json.Unmarshal(policy.Schema(), &s); err != nil {
		t.Fatal(err)
	}
	rs, err := s.Resolve(nil)
	if err != nil {
		t.Fatal(err)
	}
	roles, err := os.ReadFile("../../examples/roles/policy.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for name, doc := range map[string][]byte{
		"doc.go":          docExample(t),
		"examples/roles":  roles,
		"test policy":     []byte(testPolicy),
		"a JSON document": []byte(`{"roles": {"viewer": {"allow": {"tools": ["calc*"]}}}}`),
	} {
		t.Run(name, func(t *testing.T) {
			var v any
			if err := yaml.Unmarshal(doc, &v); err != nil {
				t.Fatal(err)
			}
			js, _ := json.Marshal(v)
			var inst any
			_ = json.Unmarshal(js, &inst)
			if err := rs.Validate(inst); err != nil {
				t.Errorf("schema: %v", err)
			}
			if _, err := policy.Parse(doc); err != nil {
				t.Errorf("Parse: %v", err)
			}
		})
	}
}

func TestMatch(t *testing.T) {
	for _, tc := range []struct {
		pattern, name string
		want          bool
	}{
		{"*", "", true},
		{"*", "anything", true},
		{"", "", true},
		{"", "a", false},
		{"a", "a", true},
		{"a", "ab", false},
		{"ab", "a", false},
		{"a*", "a", true},
		{"a*c", "abbbc", true},
		{"a*c", "abbbcd", false},
		{"*c", "cc", true},
		{"a?c", "abc", true},
		{"a?c", "ac", false},
		{"*_delete", "fs_delete", true},
		{"*_delete", "fs_delete_all", false},
		{"**a**", "xxaxx", true},
		{"a*b*c", "aXbYbZc", true},
		{"a*b*c", "aXcYb", false},
	} {
		if got := policy.Match(tc.pattern, tc.name); got != tc.want {
			t.Errorf("Match(%q, %q) = %v, want %v", tc.pattern, tc.name, got, tc.want)
		}
	}
}

// FuzzMatch holds the matcher to a regular expression built from the same
// glob.
func FuzzMatch(f *testing.F) {
	for _, s := range [][2]string{{"*", "x"}, {"a*b?c", "aXXbYc"}, {"**", ""}, {"?", ""}, {"*a*a*a*a*b", "aaaaaaaaaaaaaaaaaaaa"}} {
		f.Add(s[0], s[1])
	}
	f.Fuzz(func(t *testing.T, pattern, name string) {
		var re strings.Builder
		re.WriteString(`\A(?s:`)
		for i := 0; i < len(pattern); i++ {
			switch c := pattern[i]; c {
			case '*':
				re.WriteString(`[\x00-\xff]*`)
			case '?':
				re.WriteString(`[\x00-\xff]`)
			default:
				re.WriteString(regexp.QuoteMeta(string([]byte{c})))
			}
		}
		re.WriteString(`)\z`)
		// Compare byte-wise: the matcher works on bytes, so map both to
		// Latin-1 so that regexp sees one rune per byte.
		rx, err := regexp.Compile(latin1(re.String()))
		if err != nil {
			t.Skip()
		}
		want := rx.MatchString(latin1(name))
		if got := policy.Match(pattern, name); got != want {
			t.Errorf("Match(%q, %q) = %v, regexp says %v", pattern, name, got, want)
		}
	})
}

// latin1 spells every byte of s as the rune of the same value.
func latin1(s string) string {
	r := make([]rune, len(s))
	for i := 0; i < len(s); i++ {
		r[i] = rune(s[i])
	}
	return string(r)
}
