package capture_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/lodeworks/lode/artifact"
	"github.com/lodeworks/lode/capture"
	"github.com/lodeworks/lode/ledger"
)

func TestParseEnv(t *testing.T) {
	cases := []struct {
		v       string
		on, err bool
	}{
		{"", false, false}, {"true", true, false}, {"True", true, false}, {" TRUE ", true, false},
		{"false", false, false}, {"SPAN_ONLY", true, false}, {"span_and_event", true, false},
		{"EVENT_ONLY", false, false}, {"NO_CONTENT", false, false},
		{"1", false, true}, {"yes", false, true}, {"on", false, true},
	}
	for _, c := range cases {
		on, err := capture.ParseEnv(c.v)
		if on != c.on || (err != nil) != c.err {
			t.Errorf("ParseEnv(%q) = %v, %v; want %v, error %v", c.v, on, err, c.on, c.err)
		}
		if err != nil && !strings.Contains(err.Error(), capture.EnvVar) {
			t.Errorf("ParseEnv(%q) error %q does not name the variable", c.v, err)
		}
	}
}

func TestFromEnv(t *testing.T) {
	t.Setenv(capture.EnvVar, "true")
	t.Setenv("ACME_API_KEY", "acme-secret-value")
	c, err := capture.FromEnv()
	if err != nil || !c.On {
		t.Fatalf("FromEnv = %+v, %v", c, err)
	}
	if got := c.Attr("key acme-secret-value"); got != `"key [REDACTED]"` {
		t.Errorf("Attr = %s", got)
	}
	t.Setenv(capture.EnvVar, "maybe")
	if _, err := capture.FromEnv(); err == nil {
		t.Error("FromEnv took an unknown value")
	}
}

func TestStructuredForm(t *testing.T) {
	turns := []ledger.Turn{
		{Role: ledger.RoleSystem, Artifacts: []artifact.Artifact{artifact.Text{Content: "Be brief."}}},
		{Role: ledger.RoleUser, Artifacts: []artifact.Artifact{artifact.Text{Content: "Hi"},
			artifact.Image{URL: "file:///a.png", MIMEType: "image/png"}, artifact.Audio{MIMEType: "audio/wav", Data: []byte{1, 2}}}},
		{Role: ledger.RoleAssistant, Artifacts: []artifact.Artifact{artifact.Reasoning{Content: "think"},
			artifact.ToolCall{ID: "c1", Name: "f", Arguments: `{"a":1}`}, artifact.ToolCall{ID: "c2", Name: "g", Arguments: `{bad`},
			artifact.Usage{InputTokens: 3}}},
		{Role: ledger.RoleTool, Artifacts: []artifact.Artifact{artifact.ToolResult{ToolCallID: "c1", Content: ""}}},
		{Role: ledger.RoleAssistant, Artifacts: []artifact.Artifact{artifact.Tripwire{Guard: "g"}}},
	}
	system, msgs := capture.Input(turns)
	c := capture.Config{On: true}
	if got, want := c.Attr(system), `[{"type":"text","content":"Be brief."}]`; got != want {
		t.Errorf("system = %s\nwant %s", got, want)
	}
	want := `[{"role":"user","parts":[{"type":"text","content":"Hi"},{"type":"uri","modality":"image","mime_type":"image/png","uri":"file:///a.png"},{"type":"blob","modality":"audio","mime_type":"audio/wav","content":"AQI="}]},` +
		`{"role":"assistant","parts":[{"type":"reasoning","content":"think"},{"type":"tool_call","id":"c1","name":"f","arguments":{"a":1}},{"type":"tool_call","id":"c2","name":"g","arguments":"{bad"}]},` +
		`{"role":"tool","parts":[{"type":"tool_call_response","id":"c1","response":""}]}]`
	if got := c.Attr(msgs); got != want {
		t.Errorf("input =\n%s\nwant\n%s", got, want)
	}
	out := capture.Output([]artifact.Artifact{artifact.TextDelta{Content: "x"}, artifact.Text{Content: "ok"}, artifact.Finish{Reason: "tool_calls"}})
	if got, want := c.Attr([]capture.Message{out}), `[{"role":"assistant","parts":[{"type":"text","content":"ok"}],"finish_reason":"tool_call"}]`; got != want {
		t.Errorf("output = %s\nwant %s", got, want)
	}
}

func TestAttrBoundAndSecrets(t *testing.T) {
	secret := `pa/ss"wörd`
	c := capture.Config{On: true, MaxBytes: 300, Secrets: []string{secret, ""}}
	msgs := []capture.Message{
		{Role: "user", Parts: []capture.Part{{Type: "text", Content: "my " + secret + " " + strings.Repeat("é", 500)}}},
		{Role: "tool", Parts: []capture.Part{{Type: "tool_call_response", ID: "c1", Response: strings.Repeat("r", 400)}}},
	}
	got := c.Attr(msgs)
	if len(got) > 300 {
		t.Errorf("%d bytes, over the bound of 300", len(got))
	}
	if !json.Valid([]byte(got)) || !strings.Contains(got, "…[truncated ") {
		t.Errorf("cut attribute = %s", got)
	}
	if strings.Contains(got, "ss") || !strings.Contains(got, capture.Redacted) {
		t.Errorf("secret not scrubbed: %s", got)
	}
	if tiny := (capture.Config{On: true, MaxBytes: 10}).Attr(msgs); len(tiny) > 40 || !json.Valid([]byte(tiny)) {
		t.Errorf("with nothing left to cut: %s", tiny)
	}
	if whole := (capture.Config{On: true, MaxBytes: -1}).Attr(msgs); strings.Contains(whole, "truncated") {
		t.Error("a negative bound cut")
	}
	if bad := c.Attr("\xff ok"); bad != `"\ufffd ok"` {
		t.Errorf("invalid UTF-8 = %q", bad)
	}
}

func TestHold(t *testing.T) {
	_, h := capture.WithHold(t.Context())
	var got []bool
	h.Add(func(pass bool) { got = append(got, pass) })
	h.Release(false)
	h.Release(true) // a second release does nothing
	h.Add(func(pass bool) { got = append(got, pass) })
	if len(got) != 2 || got[0] || got[1] {
		t.Errorf("got %v, want [false false]", got)
	}
}
