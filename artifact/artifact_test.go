package artifact_test

import (
	"cmp"
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/lodeworks/lode/artifact"
)

func TestRoundTrip(t *testing.T) {
	cases := []artifact.Artifact{
		artifact.Text{Content: "héllo\n<b>"},
		artifact.Text{},
		artifact.Reasoning{Content: "think", Signature: "sig"},
		// Data is opaque JSON from a server: spaces, <, > and & survive.
		artifact.Reasoning{Content: "a", Field: "reasoning_details", Data: "[ {\"type\": \"reasoning.text\", \"text\": \"<a> & b\"} ]"},
		artifact.Reasoning{Content: "a", Field: "reasoning_details", ContentField: "reasoning_content", Data: "[]"},
		artifact.ToolCall{ID: "c1", Name: "add", Arguments: `{"a":1,`},
		artifact.ToolResult{ToolCallID: "c1", Name: "add", Content: "3", IsError: true, Truncated: true, Full: "3333",
			Parts: artifact.List{artifact.Image{MIMEType: "image/png", Data: []byte{0, 1, 2}}}},
		artifact.Usage{InputTokens: 10, OutputTokens: 5, CachedInputTokens: 2, CacheWriteTokens: 3, ReasoningTokens: 1},
		artifact.Image{URL: "https://example.invalid/a.png", Detail: "low"},
		artifact.Finish{Reason: "tool_calls"},
		artifact.Audio{MIMEType: "audio/wav", Data: []byte("RIFF")},
		artifact.Resource{URI: "file:///a.txt", MIMEType: "text/plain", Text: "hello"},
		artifact.Resource{URI: "file:///a.bin", Blob: []byte{0xff, 0}},
		artifact.ResourceLink{URI: "file:///b", Name: "b", Title: "B", Description: "d", MIMEType: "text/x", Size: new(int64)},
		artifact.Summary{Content: "they agreed on Tuesday", First: 1, Last: 9},
		artifact.TextDelta{Content: "he"},
		artifact.ReasoningDelta{Content: "th"},
		artifact.ToolCallDelta{Index: 2, ID: "c", Name: "n", Arguments: "{"},
		artifact.Pending{ToolCallID: "c1", Name: "rm", Arguments: `{"path":"a"}`, Reason: "destructive"},
		artifact.Decision{ToolCallID: "c1", Name: "rm", Approved: true, Arguments: `{"path":"b"}`, Reason: "ok", By: "ana"},
		// Data is a server's block as it came: spaces, <, > and & survive.
		artifact.Opaque{Provider: "anthropic", Type: "web_search_tool_result", Data: "{\"type\": \"web_search_tool_result\", \"title\": \"<a> & b\"}"},
	}
	for _, a := range cases {
		t.Run(a.Kind(), func(t *testing.T) {
			b, err := artifact.Marshal(a)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.HasPrefix(string(b), `{"kind":"`+a.Kind()+`"`) {
				t.Errorf("encoding %s does not lead with its kind", b)
			}
			got, err := artifact.Unmarshal(b)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, a) {
				t.Errorf("round trip:\n got %#v\nwant %#v", got, a)
			}
		})
	}
}

func TestUnknownKindKeptVerbatim(t *testing.T) {
	raw := `{"kind":"hologram","frames":[1,2,3],"meta":{"z":1,"a":"x"}}`
	a, err := artifact.Unmarshal([]byte(raw))
	if err != nil {
		t.Fatal(err)
	}
	u, ok := a.(artifact.Unknown)
	if !ok || u.Kind() != "hologram" {
		t.Fatalf("got %#v, want Unknown of kind hologram", a)
	}
	out, err := artifact.Marshal(u)
	if err != nil {
		t.Fatal(err)
	}
	if string(out) != raw {
		t.Errorf("re-encoded as %s, want %s byte for byte", out, raw)
	}
	// Inside a list too.
	var l artifact.List
	if err := json.Unmarshal([]byte(`[{"kind":"text","content":"a"},`+raw+`]`), &l); err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(l)
	if want := `[{"kind":"text","content":"a"},` + raw + `]`; string(b) != want {
		t.Errorf("list round trip: %s, want %s", b, want)
	}
}

func TestUnmarshalKindAnywhere(t *testing.T) {
	for _, in := range []string{
		`{"content":"x","kind":"text"}`,
		`{ "kind" : "text", "content":"x"}`,
		`{"kind":"te\u0078t","content":"x"}`,
	} {
		a, err := artifact.Unmarshal([]byte(in))
		if err != nil || a != (artifact.Text{Content: "x"}) {
			t.Errorf("Unmarshal(%s) = %#v, %v", in, a, err)
		}
	}
	if _, err := artifact.Unmarshal([]byte(`{"kind":"future",`)); err == nil {
		t.Error("truncated unknown kind accepted")
	}
}

func TestUnmarshalErrors(t *testing.T) {
	cases := map[string]string{
		"not json":       `{"kind":`,
		"no kind":        `{"content":"x"}`,
		"not an object":  `[1]`,
		"wrong field ty": `{"kind":"text","content":5}`,
	}
	for name, in := range cases {
		t.Run(name, func(t *testing.T) {
			if a, err := artifact.Unmarshal([]byte(in)); err == nil {
				t.Fatalf("Unmarshal(%s) = %#v, want error", in, a)
			}
		})
	}
	if _, err := artifact.Marshal(nil); err == nil {
		t.Error("Marshal(nil) succeeded")
	}
	if _, err := artifact.Marshal(artifact.Unknown{Type: "x", Raw: []byte("{")}); err == nil {
		t.Error("Marshal of an Unknown with invalid JSON succeeded")
	}
}

func TestIsDelta(t *testing.T) {
	if !artifact.IsDelta(artifact.TextDelta{}) || !artifact.IsDelta(artifact.ToolCallDelta{}) || !artifact.IsDelta(artifact.ReasoningDelta{}) {
		t.Error("deltas not recognised")
	}
	if artifact.IsDelta(artifact.Text{}) || artifact.IsDelta(artifact.ToolCall{}) {
		t.Error("whole artifacts taken for deltas")
	}
}

// A nil artifact, typed or not, is refused with an error rather than a
// panic; a pointer to an artifact encodes as the value it points to.
func TestMarshalNilAndPointers(t *testing.T) {
	cases := []struct {
		name string
		in   artifact.Artifact
		want string // "" means an error
	}{
		{"nil", nil, ""},
		{"nil *Text", (*artifact.Text)(nil), ""},
		{"nil *ToolCall", (*artifact.ToolCall)(nil), ""},
		{"*Text", &artifact.Text{Content: "x"}, `{"kind":"text","content":"x"}`},
		{"*Unknown", &artifact.Unknown{Type: "future", Raw: []byte(`{"kind":"future","a":1}`)}, `{"kind":"future","a":1}`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := artifact.Marshal(c.in)
			if c.want == "" {
				if err == nil || !strings.Contains(err.Error(), "nil artifact") {
					t.Fatalf("Marshal = %s, %v; want the nil artifact error", got, err)
				}
				return
			}
			if err != nil || string(got) != c.want {
				t.Fatalf("Marshal = %s, %v; want %s", got, err, c.want)
			}
		})
	}
	if _, err := json.Marshal(artifact.List{artifact.Text{}, (*artifact.Text)(nil)}); err == nil {
		t.Fatal("a list holding a nil *Text encoded")
	}
}

func TestNormalize(t *testing.T) {
	type custom struct{ artifact.Text }
	c := &custom{}
	cases := []struct {
		name string
		in   artifact.Artifact
		want artifact.Artifact
	}{
		{"nil", nil, nil},
		{"typed nil", (*artifact.ToolCall)(nil), nil},
		{"value", artifact.Text{Content: "a"}, artifact.Text{Content: "a"}},
		{"pointer", &artifact.ToolCall{ID: "1"}, artifact.ToolCall{ID: "1"}},
		{"pointer to a custom type", c, custom{}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := artifact.Normalize(tc.in); !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("Normalize(%#v) = %#v, want %#v", tc.in, got, tc.want)
			}
		})
	}
}

// Empty byte fields and empty lists, which Marshal omits, decode as nil so
// that a decoded value survives a second round trip unchanged.
func TestEmptyFieldsDecodeAsNil(t *testing.T) {
	cases := map[string]artifact.Artifact{
		`{"kind":"image","data":""}`:                                  artifact.Image{},
		`{"kind":"resource","uri":"u","blob":""}`:                     artifact.Resource{URI: "u"},
		`{"kind":"tool_result","parts":[]}`:                           artifact.ToolResult{},
		`{"kind":"tool_result","parts":null}`:                         artifact.ToolResult{},
		`{"kind":"audio","data":""}`:                                  artifact.Audio{Data: []byte{}},
		`{"kind":"audio","data":null}`:                                artifact.Audio{},
		`{"kind":"tool_result","parts":[{"kind":"image","data":""}]}`: artifact.ToolResult{Parts: artifact.List{artifact.Image{}}},
	}
	for in, want := range cases {
		t.Run(in, func(t *testing.T) {
			got, err := artifact.Unmarshal([]byte(in))
			if err != nil || !reflect.DeepEqual(got, want) {
				t.Fatalf("Unmarshal = %#v, %v; want %#v", got, err, want)
			}
			b, err := artifact.Marshal(got)
			if err != nil {
				t.Fatal(err)
			}
			again, err := artifact.Unmarshal(b)
			if err != nil || !reflect.DeepEqual(again, got) {
				t.Fatalf("second round trip via %s = %#v, %v", b, again, err)
			}
		})
	}
}

// Reasoning stored before ContentField held both of Kimi's places in Field,
// joined by a comma, the text's first. It decodes into one name each, and
// encodes in the form of today.
func TestReasoningStoredForms(t *testing.T) {
	cases := []struct {
		name, stored string
		want         artifact.Reasoning
		again        string // its encoding now; "" when the same as stored
	}{
		{"one field", `{"kind":"reasoning","content":"r","field":"reasoning"}`,
			artifact.Reasoning{Content: "r", Field: "reasoning"}, ""},
		{"no field", `{"kind":"reasoning","content":"r","signature":"s"}`,
			artifact.Reasoning{Content: "r", Signature: "s"}, ""},
		{"both fields, old form", `{"kind":"reasoning","content":"Plan.","field":"reasoning_content,reasoning_details","data":"[{\"type\":\"reasoning.text\"}]"}`,
			artifact.Reasoning{Content: "Plan.", Field: "reasoning_details", ContentField: "reasoning_content", Data: `[{"type":"reasoning.text"}]`},
			`{"kind":"reasoning","content":"Plan.","field":"reasoning_details","content_field":"reasoning_content","data":"[{\"type\":\"reasoning.text\"}]"}`},
		{"both fields", `{"kind":"reasoning","content":"Plan.","field":"reasoning_details","content_field":"reasoning_content","data":"[]"}`,
			artifact.Reasoning{Content: "Plan.", Field: "reasoning_details", ContentField: "reasoning_content", Data: "[]"}, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := artifact.Unmarshal([]byte(tc.stored))
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("decoded %#v\nwant %#v", got, tc.want)
			}
			if r := got.(artifact.Reasoning); strings.Contains(r.Field, ",") || strings.Contains(r.ContentField, ",") {
				t.Errorf("a field holds more than one name: %#v", r)
			}
			want := cmp.Or(tc.again, tc.stored)
			if b, err := artifact.Marshal(got); err != nil || string(b) != want {
				t.Errorf("encodes as %s (%v)\nwant %s", b, err, want)
			}
		})
	}
}

// A comma anywhere else is neither form: decoding refuses it rather than
// guess, and so does encoding, whose output would read back changed.
func TestReasoningFieldHoldsOneName(t *testing.T) {
	for _, stored := range []string{
		`{"kind":"reasoning","field":"a,b,c"}`,
		`{"kind":"reasoning","field":",b"}`,
		`{"kind":"reasoning","field":"a,"}`,
		`{"kind":"reasoning","field":"a,b","content_field":"c"}`,
		`{"kind":"reasoning","field":"a","content_field":"b,c"}`,
	} {
		if a, err := artifact.Unmarshal([]byte(stored)); err == nil || !strings.Contains(err.Error(), "artifact: decode reasoning:") {
			t.Errorf("Unmarshal(%s) = %#v, %v; want a decode error", stored, a, err)
		}
	}
	for _, r := range []artifact.Reasoning{
		{Field: "reasoning_content,reasoning_details"},
		{Field: "reasoning_details", ContentField: "a,b"},
	} {
		if b, err := artifact.Marshal(r); err == nil || !strings.Contains(err.Error(), "each holds one name") {
			t.Errorf("Marshal(%#v) = %s, %v; want an error", r, b, err)
		}
	}
}
