package match

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestRules(t *testing.T) {
	cases := []struct {
		rule string
		name string
		want bool
	}{
		{`{"equals":"GPT-4o"}`, "gpt-4o", true},
		{`{"equals":"gpt-4o"}`, "gpt-4o-mini", false},
		{`{"starts_with":"claude-3"}`, "claude-3-5-haiku", true},
		{`{"ends_with":"-latest"}`, "mistral-large-latest", true},
		{`{"contains":"sonnet"}`, "claude-sonnet-4", true},
		{`{"regex":"^o[134](-|$)"}`, "o3-mini", true},
		{`{"regex":"^o[134](-|$)"}`, "omni", false},
		{`{"or":[{"equals":"a"},{"equals":"b"}]}`, "b", true},
		{`{"and":[{"starts_with":"gemini"},{"not":{"contains":"-tts"}}]}`, "gemini-2.5-flash", true},
		{`{"and":[{"starts_with":"gemini"},{"not":{"contains":"-tts"}}]}`, "gemini-2.5-flash-tts", false},
		{`{"and":[]}`, "x", false},
		{`{"or":[]}`, "x", false},
	}
	for _, c := range cases {
		var r Rule
		if err := json.Unmarshal([]byte(c.rule), &r); err != nil {
			t.Fatalf("%s: %v", c.rule, err)
		}
		if got := r.Match(c.name); got != c.want {
			t.Errorf("%s on %q = %v", c.rule, c.name, got)
		}
	}
	var zero Rule
	if zero.Match("") || zero.Match("x") {
		t.Error("the zero rule matched")
	}
}

func TestBadRules(t *testing.T) {
	cases := []struct{ rule, want string }{
		{`{}`, "exactly one of"},
		{`{"equals":"a","contains":"b"}`, "exactly one of"},
		{`{"regex":"^(?!x)"}`, "invalid or unsupported Perl syntax"},
		{`{"or":[{"regex":"("}]}`, "missing closing )"},
		{`{"not":{}}`, "exactly one of"},
		{`[1]`, "cannot unmarshal"},
	}
	for _, c := range cases {
		var r Rule
		err := json.Unmarshal([]byte(c.rule), &r)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: err = %v, want %q", c.rule, err, c.want)
		}
	}
}
