package output

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"strings"
	"testing"
	"time"

	"github.com/lodeworks/lode/artifact"
	"github.com/lodeworks/lode/loop"
	"github.com/lodeworks/lode/provider"
)

func TestScannerDepth(t *testing.T) {
	var s scanner
	s.write(strings.Repeat("[", maxDepth))
	if s.err != nil {
		t.Fatalf("%d levels refused: %v", maxDepth, s.err)
	}
	s.write("[")
	if !errors.Is(s.err, errDepth) || s.err.Error() != "output: the answer nests deeper than 10000 levels" {
		t.Fatalf("err = %v, want errDepth", s.err)
	}
	// A 16 MB run is refused without growing past the bound.
	var big scanner
	for range 16 << 10 {
		big.write(strings.Repeat("[", 1<<10))
	}
	if !errors.Is(big.err, errDepth) || len(big.stack) != maxDepth {
		t.Fatalf("err = %v, depth %d", big.err, len(big.stack))
	}
}

func TestScannerSplitsAgree(t *testing.T) {
	doc := `{"category":"bug","tags":["a\"b","日本語 😀","\ud83d\ude00 x\\"],"n":-1.5e3,"o":{"x":[],"y":{"z":null}}}`
	for step := 1; step <= len(doc); step++ {
		var s scanner
		for i := 0; i < len(doc); i += step {
			s.write(doc[i:min(i+step, len(doc))])
			whole, ok := closeJSON(doc[:min(i+step, len(doc))])
			if got := string(s.doc(s.usable())); !ok || got != whole {
				t.Fatalf("step %d at %d: incremental %q, whole %q", step, i, got, whole)
			}
		}
	}
}

func TestDuplicateKeys(t *testing.T) {
	cases := []struct{ in, want string }{
		{`{"a":1,"a":2}`, `output: the answer has the key "a" twice in one object`},
		{`{"o":{"k":"x","\u006b":"y"}}`, `output: the answer has the key "k" twice in one object`},
		// Past manyKeys a set holds an object's keys: a key from before it
		// took over and one after are both found.
		{manyKeyDoc(40, "k3"), `output: the answer has the key "k3" twice in one object`},
		{manyKeyDoc(40, "k39"), `output: the answer has the key "k39" twice in one object`},
		{manyKeyDoc(manyKeys, "k0"), `output: the answer has the key "k0" twice in one object`},
		// A closed inner object's keys are gone; the outer object's stay.
		{`{"a":{"x":1,"y":2},"b":[{"x":1},{"x":2}],"a":3}`, `output: the answer has the key "a" twice in one object`},
		{`{"a":1,"o":{` + manyKeyDoc(30, "")[1:] + `,"a":2}`, `output: the answer has the key "a" twice in one object`},
	}
	for _, tc := range cases {
		var s scanner
		s.write(tc.in)
		if s.err == nil || s.err.Error() != tc.want {
			t.Errorf("%s: err = %v, want %s", tc.in, s.err, tc.want)
		}
		if got := duplicateKey(tc.in); got == nil || got.Error() != strings.TrimPrefix(tc.want, "output: ") {
			t.Errorf("%s: duplicateKey = %v", tc.in, got)
		}
	}
	for _, ok := range []string{
		`{"a":{"b":1},"b":{"a":2}}`,
		`[{"a":1},{"a":2},{"a":{"a":{"a":3}}}]`,
		`{"o":` + manyKeyDoc(40, "") + `,"k1":1,"p":` + manyKeyDoc(manyKeys+1, "") + `}`,
	} {
		var s scanner
		s.write(ok)
		if s.err != nil || !s.done {
			t.Errorf("%s: keys of different objects refused: %v", ok, s.err)
		}
	}
}

// manyKeyDoc is an object with n keys k0…, then dup again when dup is set.
func manyKeyDoc(n int, dup string) string {
	var b strings.Builder
	b.WriteByte('{')
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `"k%d":%d`, i, i)
	}
	if dup != "" {
		fmt.Fprintf(&b, `,%q:0`, dup)
	}
	b.WriteByte('}')
	return b.String()
}

func TestFeedbackBounded(t *testing.T) {
	huge := strings.Repeat("x", 5<<20)
	fb := feedback(errors.New(huge), huge, ModeResponseFormat, "")
	if len(fb) > maxReason+maxQuote+400 {
		t.Fatalf("feedback is %d bytes", len(fb))
	}
	if !strings.Contains(fb, "… (cut; 5242880 bytes in all)") || !strings.Contains(fb, `" (cut; 5242880 bytes in all)`) {
		t.Fatalf("no cut markers in %q", fb[:200])
	}
	if got := clip("short", 10); got != "short" {
		t.Fatalf("clip = %q", got)
	}
}

type finishProvider struct{ arts []artifact.Artifact }

func (f finishProvider) Invoke(context.Context, *provider.Request) iter.Seq2[artifact.Artifact, error] {
	return func(yield func(artifact.Artifact, error) bool) {
		for _, a := range f.arts {
			if !yield(a, nil) {
				return
			}
		}
	}
}

func TestToolModeFinish(t *testing.T) {
	a, err := New[struct{ A int }](WithMode(ModeTool))
	if err != nil {
		t.Fatal(err)
	}
	final := artifact.ToolCall{ID: "f", Name: DefaultToolName, Arguments: `{"A":1}`}
	other := artifact.ToolCall{ID: "o", Name: "lookup", Arguments: `{}`}
	cases := []struct {
		name string
		arts []artifact.Artifact
		want string
	}{
		{"answer alone", []artifact.Artifact{final, artifact.Finish{Reason: "tool_calls"}}, "stop"},
		{"answer beside a call", []artifact.Artifact{final, other, artifact.Finish{Reason: "tool_calls"}}, "tool_calls"},
		{"other call", []artifact.Artifact{other, artifact.Finish{Reason: "tool_calls"}}, "tool_calls"},
		{"length", []artifact.Artifact{final, artifact.Finish{Reason: "length"}}, "length"},
	}
	for _, tc := range cases {
		ap := &answerProvider{inner: finishProvider{tc.arts}, mode: ModeTool, final: a.final}
		got := ""
		for art, err := range ap.Invoke(context.Background(), &provider.Request{}) {
			if err != nil {
				t.Fatal(err)
			}
			if f, ok := art.(artifact.Finish); ok {
				got = f.Reason
			}
		}
		if got != tc.want {
			t.Errorf("%s: finish %q, want %q", tc.name, got, tc.want)
		}
	}
}

func FuzzPartialAgainstDecode(f *testing.F) {
	for _, s := range []string{`{"a":[1,"x\u00e9",{"b":null}],"c":true}`, `[[[[]]]]`, `{"a":1,"a":2}`, `{"s":"\ud83d\ude00"}`, `{"n":1e5,"t":[false]}`, `[1,2,]`, manyKeyDoc(manyKeys+2, "k1"), `{"o":` + manyKeyDoc(manyKeys, "") + `,"k0":{"k0":1}}`} {
		f.Add(s, 3)
	}
	f.Fuzz(func(t *testing.T, doc string, step int) {
		if step < 1 {
			step = 1
		}
		var final any
		whole := json.Unmarshal([]byte(doc), &final) == nil && duplicateKey(doc) == nil
		var s scanner
		for i := 0; i < len(doc); i += step {
			s.write(doc[i:min(i+step, len(doc))])
			if s.err != nil || len(s.stack) == 0 && !s.done {
				continue
			}
			d := s.doc(s.usable())
			var p any
			if err := json.Unmarshal(d, &p); err != nil {
				t.Fatalf("partial %q of %q is not JSON: %v", d, doc, err)
			}
			if whole && !consistent(p, final) {
				t.Fatalf("partial %q does not agree with %q", d, doc)
			}
		}
	})
}

func TestNewUnexpressible(t *testing.T) {
	type withChan struct{ C chan int }
	type withFunc struct{ F func() }
	type withComplex struct{ Z []complex128 }
	type nested struct{ In struct{ M map[string]func() } }
	checks := map[string]func() error{
		"chan":    func() error { _, err := New[withChan](); return err },
		"func":    func() error { _, err := New[withFunc](); return err },
		"complex": func() error { _, err := New[withComplex](); return err },
		"nested":  func() error { _, err := New[nested](); return err },
	}
	want := map[string]string{
		"chan":    "output: invalid option: answer type output.withChan: field C: chan int has no JSON form",
		"func":    "output: invalid option: answer type output.withFunc: field F: func() has no JSON form",
		"complex": "output: invalid option: answer type output.withComplex: field Z: complex128 has no JSON form",
		"nested":  "output: invalid option: answer type output.nested: field In: field M: func() has no JSON form",
	}
	for name, check := range checks {
		err := check()
		if !errors.Is(err, ErrOption) || err.Error() != want[name] {
			t.Errorf("%s: err = %v", name, err)
		}
	}
}

type benchAnswer struct {
	Items []struct {
		Name string `json:"name"`
		N    int    `json:"n"`
	} `json:"items"`
}

func benchDoc() string {
	var b strings.Builder
	b.WriteString(`{"items":[`)
	for i := 0; b.Len() < 1<<20; i++ {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(`{"name":"item number `)
		b.WriteString(strings.Repeat("x", i%40))
		b.WriteString(`","n":12345}`)
	}
	b.WriteString(`]}`)
	return b.String()
}

// BenchmarkPartials1MB streams a 1 MB answer in 1 KiB deltas through
// Partials, and reports it against one whole decode of the same answer.
func BenchmarkPartials1MB(b *testing.B) {
	doc := benchDoc()
	b.Run("decode", func(b *testing.B) {
		b.SetBytes(int64(len(doc)))
		for b.Loop() {
			var v benchAnswer
			if err := json.Unmarshal([]byte(doc), &v); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("partials", func(b *testing.B) {
		b.SetBytes(int64(len(doc)))
		for b.Loop() {
			streamPartials(doc)
		}
	})
	// Each round times one decode and one stream back to back, so that
	// a machine busy with other work slows both alike; x-decode is the
	// ratio of the sums.
	b.Run("interleaved", func(b *testing.B) {
		var dec, par time.Duration
		for b.Loop() {
			t0 := time.Now()
			var v benchAnswer
			if err := json.Unmarshal([]byte(doc), &v); err != nil {
				b.Fatal(err)
			}
			t1 := time.Now()
			streamPartials(doc)
			dec, par = dec+t1.Sub(t0), par+time.Since(t1)
		}
		b.ReportMetric(float64(par)/float64(dec), "x-decode")
	})
}

// streamPartials streams doc through Partials in 1 KiB deltas.
func streamPartials(doc string) {
	ctx := context.Background()
	p := &partials[benchAnswer]{}
	for i := 0; i < len(doc); i += 1 << 10 {
		p.Emit(ctx, loop.DeltaEvent{Delta: artifact.TextDelta{Content: doc[i:min(i+1<<10, len(doc))]}})
	}
}
