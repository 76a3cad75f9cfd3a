package output

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

// consistent reports whether p, a value parsed from a prefix, agrees with
// f, the whole value: every member it has is in f, strings are prefixes.
func consistent(p, f any) bool {
	switch p := p.(type) {
	case map[string]any:
		fm, ok := f.(map[string]any)
		if !ok {
			return false
		}
		for k, v := range p {
			if fv, ok := fm[k]; !ok || !consistent(v, fv) {
				return false
			}
		}
		return true
	case []any:
		fa, ok := f.([]any)
		if !ok || len(p) > len(fa) {
			return false
		}
		for i := range p {
			if !consistent(p[i], fa[i]) {
				return false
			}
		}
		return true
	case string:
		fs, ok := f.(string)
		return ok && strings.HasPrefix(fs, p)
	}
	return reflect.DeepEqual(p, f)
}

func TestCloseJSONEveryCut(t *testing.T) {
	docs := []string{
		`{"category":"bug","priority":12,"tags":["a\"b","日本語 😀","\ud83d\ude00 x\\","\u00e9\n"],"ok":true,"no":false,"none":null,"n":-1.5e3,"o":{"x":[],"y":{}}}`,
		"{\n  \"a\" : [ 1 , 2.5 , \"x\" ] ,\n  \"b\" : { \"c\" : \"d\" }\n}\n",
		`[1,"two",[3,[]],{"four":4},true]`,
		`{}`,
		`[]`,
	}
	for _, s := range docs {
		var final any
		if err := json.Unmarshal([]byte(s), &final); err != nil {
			t.Fatalf("bad fixture %s: %v", s, err)
		}
		open := strings.IndexAny(s, "{[")
		for i := 0; i <= len(s); i++ {
			doc, ok := closeJSON(s[:i])
			if i <= open {
				if ok {
					t.Fatalf("cut %d of %q: %q before anything arrived", i, s, doc)
				}
				continue
			}
			if !ok {
				t.Fatalf("cut %d of %q: nothing usable", i, s)
			}
			var p any
			if err := json.Unmarshal([]byte(doc), &p); err != nil {
				t.Fatalf("cut %d of %q: %q is not JSON: %v", i, s, doc, err)
			}
			if !consistent(p, final) {
				t.Fatalf("cut %d of %q: %q does not agree with the whole", i, s, doc)
			}
			if i == len(s) && !reflect.DeepEqual(p, final) {
				t.Fatalf("whole %q parsed as %q", s, doc)
			}
		}
	}
}

func TestCloseJSONExact(t *testing.T) {
	cases := []struct {
		in, want string
		ok       bool
	}{
		{"", "", false},
		{"Hello", "", false},
		{`"text"`, "", false},
		{`  {`, `{}`, true},
		{`{"na`, `{}`, true},
		{`{"name"`, `{}`, true},
		{`{"name":`, `{}`, true},
		{`{"name":"Jo`, `{"name":"Jo"}`, true},
		{`{"name":"Jo\`, `{"name":"Jo"}`, true},
		{`{"name":"Jo\u00`, `{"name":"Jo"}`, true},
		{`{"name":"\ud83d\ude`, `{"name":""}`, true},
		{"{\"name\":\"\xe6\x97", `{"name":""}`, true},
		{`{"n":12`, `{}`, true},
		{`{"n":12,`, `{"n":12}`, true},
		{`{"n":12,"b":tr`, `{"n":12}`, true},
		{`{"a":[1,2`, `{"a":[1]}`, true},
		{`{"a":[1,{"b":"c`, `{"a":[1,{"b":"c"}]}`, true},
		{`{"a":1} trailing`, `{"a":1}`, true},
		{`{"a" 1}`, "", false},
		{`{1:2}`, "", false},
		{`{"a":tx}`, "", false},
		{`{"a":1,}`, "", false},
		{`{"a":"\q"}`, "", false},
	}
	for _, tc := range cases {
		got, ok := closeJSON(tc.in)
		if got != tc.want || ok != tc.ok {
			t.Errorf("closeJSON(%q) = %q, %v; want %q, %v", tc.in, got, ok, tc.want, tc.ok)
		}
	}
}
