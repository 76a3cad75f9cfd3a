package structjson

import (
	"bytes"
	"encoding/json"
	"math"
	"net/netip"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"
)

// stdEncode is the reference: what render's pooled json.Encoder writes.
func stdEncode(v any) (string, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return "", err
	}
	return strings.TrimSuffix(buf.String(), "\n"), nil
}

// appendValue runs the fast path on v after a prefix, and checks that the
// prefix is left alone.
func appendValue(t *testing.T, v any) (string, bool) {
	t.Helper()
	e := NewEncoder(reflect.TypeOf(v))
	if e == nil {
		t.Fatalf("NewEncoder(%T) = nil, want an encoder", v)
	}
	const prefix = "prefix"
	out, ok := e.Append([]byte(prefix), reflect.ValueOf(v))
	if !strings.HasPrefix(string(out), prefix) {
		t.Fatalf("Append(%T) changed the bytes before it: %q", v, out)
	}
	return string(out[len(prefix):]), ok
}

type (
	namedBool    bool
	namedInt     int
	namedUint8   uint8
	namedFloat32 float32
	namedString  string
)

type small struct {
	Sum   int    `json:"sum"`
	Label string `json:"label"`
}

type tagged struct {
	Plain    int
	Renamed  int `json:"renamed"`
	Dash     int `json:"-,"`
	Hidden   int `json:"-"`
	hidden   int
	Spaced   int      `json:"a b"`
	Punct    int      `json:"!#$%&()*+-./:;<=>?@[]^_{|}~"`
	Unicode  int      `json:"naïve_ß1"`
	Quote    int      `json:"a\"b"`
	Slash    int      `json:"a\\b"`
	Comma    int      `json:",omitempty"`
	Unknown  int      `json:"unknown,nonsense"`
	Empty    int      `json:""`
	Other    int      `xml:"other"`
	Öffnung  int      // a Go name beyond ASCII
	Named    namedInt `json:"named"`
	NamedStr namedString
}

type omitting struct {
	B   bool         `json:"b,omitempty"`
	I   int          `json:"i,omitempty"`
	U   uint         `json:"u,omitempty"`
	F32 float32      `json:"f32,omitempty"`
	F64 float64      `json:"f64,omitempty"`
	S   string       `json:"s,omitempty"`
	N   namedFloat32 `json:"n,omitempty"`
	SS  []string     `json:"ss,omitempty"`
	P   *int         `json:"p,omitempty"`
}

type inner struct {
	A int    `json:"a"`
	B string `json:"b,omitempty"`
}

type nested struct {
	In   inner      `json:"in"`
	Tags []string   `json:"tags"`
	N    *int       `json:"n"`
	S    *string    `json:"s"`
	F    *float32   `json:"f"`
	B    *namedBool `json:"b"`
}

func ptr[T any](v T) *T { return &v }

func TestAppendFastPath(t *testing.T) {
	tests := []struct {
		name string
		v    any
		want string
	}{
		{"small", small{42, "answer"}, `{"sum":42,"label":"answer"}`},
		{"small zero", small{}, `{"sum":0,"label":""}`},
		{"pointer", &small{-7, "x"}, `{"sum":-7,"label":"x"}`},
		{"nil pointer", (*small)(nil), `null`},
		{"no fields", struct{}{}, `{}`},
		{"only hidden fields", struct {
			a int
			B int `json:"-"`
		}{}, `{}`},
		{"tags", tagged{Plain: 1, Renamed: 2, Dash: 3, Hidden: 4, hidden: 5, Spaced: 6, Punct: 7, Unicode: 8, Quote: 9, Slash: 10, Comma: 11, Unknown: 12, Empty: 13, Other: 14, Öffnung: 15, Named: 16, NamedStr: "s"},
			`{"Plain":1,"renamed":2,"-":3,"a b":6,"!#$%&()*+-./:;<=>?@[]^_{|}~":7,"naïve_ß1":8,"Quote":9,"Slash":10,"Comma":11,"unknown":12,"Empty":13,"Other":14,"Öffnung":15,"named":16,"NamedStr":"s"}`},
		{"kinds", struct {
			B   bool
			I8  int8
			I16 int16
			I32 int32
			I64 int64
			U8  uint8
			U16 uint16
			U32 uint32
			U64 uint64
			UP  uintptr
			NB  namedBool
			NU  namedUint8
		}{true, math.MinInt8, math.MinInt16, math.MinInt32, math.MinInt64, math.MaxUint8, math.MaxUint16, math.MaxUint32, math.MaxUint64, 12, false, 200},
			`{"B":true,"I8":-128,"I16":-32768,"I32":-2147483648,"I64":-9223372036854775808,"U8":255,"U16":65535,"U32":4294967295,"U64":18446744073709551615,"UP":12,"NB":false,"NU":200}`},
		{"omitempty all empty", omitting{F64: math.Copysign(0, -1)}, `{}`},
		{"omitempty all set", omitting{true, 1, 2, 0.5, -0.25, "s", 3, []string{}, ptr(0)},
			`{"b":true,"i":1,"u":2,"f32":0.5,"f64":-0.25,"s":"s","n":3,"p":0}`},
		{"omitempty slice", omitting{SS: []string{""}}, `{"ss":[""]}`},
		{"nested nils", nested{}, `{"in":{"a":0},"tags":null,"n":null,"s":null,"f":null,"b":null}`},
		{"nested set", nested{inner{1, "<b>"}, []string{}, ptr(-2), ptr("\n"), ptr(float32(0.1)), ptr(namedBool(true))},
			`{"in":{"a":1,"b":"<b>"},"tags":[],"n":-2,"s":"\n","f":0.1,"b":true}`},
		{"strings", struct{ L []string }{[]string{"a", "\"", "é"}}, `{"L":["a","\"","é"]}`},
		{"bare bool", true, `true`},
		{"bare int", namedInt(-3), `-3`},
		{"bare uint", uint16(9), `9`},
		{"bare float32", float32(1e21), `1e+21`},
		{"bare float64", 1e-7, `1e-7`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := appendValue(t, tt.v)
			if !ok || got != tt.want {
				t.Errorf("Append = %s, %v; want %s, true", got, ok, tt.want)
			}
			if std, err := stdEncode(tt.v); err != nil || std != tt.want {
				t.Errorf("encoding/json writes %s (%v); the test wants %s", std, err, tt.want)
			}
		})
	}
}

func TestAppendFloat(t *testing.T) {
	tests := []struct {
		f    float64
		bits int
		want string
	}{
		{0, 64, "0"},
		{math.Copysign(0, -1), 64, "-0"},
		{0.1, 64, "0.1"},
		{1e-6, 64, "0.000001"},
		{1e-7, 64, "1e-7"},
		{math.Nextafter(1e-6, 0), 64, "9.999999999999997e-7"},
		{1e20, 64, "100000000000000000000"},
		{1e21, 64, "1e+21"},
		{-1e21, 64, "-1e+21"},
		{1.5e300, 64, "1.5e+300"},
		{5e-324, 64, "5e-324"},
		{math.MaxFloat64, 64, "1.7976931348623157e+308"},
		{1e-10, 64, "1e-10"},
		{float64(float32(0.1)), 32, "0.1"},
		{float64(float32(1e-6)), 32, "0.000001"}, // below 1e-6 as a float64
		{float64(math.Nextafter32(1e-6, 0)), 32, "9.999999e-7"},
		{float64(float32(1e21)), 32, "1e+21"},
		{float64(float32(1e20)), 32, "100000000000000000000"},
		{math.SmallestNonzeroFloat32, 32, "1e-45"},
		{math.MaxFloat32, 32, "3.4028235e+38"},
	}
	for _, tt := range tests {
		got, ok := appendFloat(nil, tt.f, tt.bits)
		if !ok || string(got) != tt.want {
			t.Errorf("appendFloat(%v, %d) = %s, %v; want %s, true", tt.f, tt.bits, got, ok, tt.want)
		}
		var v any = tt.f
		if tt.bits == 32 {
			v = float32(tt.f)
		}
		if std, _ := stdEncode(v); std != tt.want {
			t.Errorf("encoding/json writes %v as %s; the test wants %s", v, std, tt.want)
		}
	}
}

func TestAppendString(t *testing.T) {
	var controls strings.Builder
	for b := range 0x20 {
		controls.WriteByte(byte(b))
	}
	tests := []struct {
		name, s, want string
	}{
		{"empty", "", `""`},
		{"html stays", "<a href='x'>&amp;</a>", `"<a href='x'>&amp;</a>"`},
		{"quotes and backslashes", `"\\"`, `"\"\\\\\""`},
		{"controls", controls.String(), `"\u0000\u0001\u0002\u0003\u0004\u0005\u0006\u0007\b\t\n\u000b\f\r\u000e\u000f\u0010\u0011\u0012\u0013\u0014\u0015\u0016\u0017\u0018\u0019\u001a\u001b\u001c\u001d\u001e\u001f"`},
		{"del", "\x7f", "\"\x7f\""},
		{"separators", "a\u2028b\u2029c", `"a\u2028b\u2029c"`},
		{"invalid utf-8", "a\xffb\xc3", `"a\ufffdb\ufffd"`},
		{"truncated rune", "\xe2\x80", `"\ufffd\ufffd"`},
		{"surrogate", "\xed\xa0\x80", `"\ufffd\ufffd\ufffd"`},
		{"emoji", "ok 👍🏽 é", `"ok 👍🏽 é"`},
		{"replacement char itself", "\ufffd", "\"\ufffd\""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := string(appendString(nil, tt.s)); got != tt.want {
				t.Errorf("appendString(%q) = %s, want %s", tt.s, got, tt.want)
			}
			if std, _ := stdEncode(tt.s); std != tt.want {
				t.Errorf("encoding/json writes %q as %s; the test wants %s", tt.s, std, tt.want)
			}
		})
	}
}

func TestAppendDeclines(t *testing.T) {
	type floats struct {
		A float32
		B float64 `json:",omitempty"`
		C *float64
	}
	nan := math.NaN()
	tests := []struct {
		name string
		v    any
	}{
		{"NaN", floats{B: nan}},
		{"+Inf", floats{B: math.Inf(1)}},
		{"-Inf float32", floats{A: float32(math.Inf(-1))}},
		{"NaN behind a pointer", floats{C: &nan}},
		{"NaN in a pointer", &floats{A: float32(nan)}},
		{"bare NaN", nan},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, ok := appendValue(t, tt.v); ok {
				t.Errorf("Append(%#v) reported true", tt.v)
			}
			if _, err := stdEncode(tt.v); err == nil {
				t.Errorf("encoding/json encodes %#v; the case should be one it refuses", tt.v)
			}
		})
	}
}

func TestAppendWrongValue(t *testing.T) {
	e := NewEncoder(reflect.TypeFor[small]())
	tests := []struct {
		name string
		e    *Encoder
		v    reflect.Value
	}{
		{"nil encoder", nil, reflect.ValueOf(small{})},
		{"invalid value", e, reflect.Value{}},
		{"other type", e, reflect.ValueOf(struct{ Sum int }{})},
		{"pointer to the type", e, reflect.ValueOf(&small{})},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, ok := tt.e.Append([]byte("x"), tt.v)
			if ok || string(out) != "x" {
				t.Errorf("Append = %q, %v; want %q, false", out, ok, "x")
			}
		})
	}
}

type (
	valueMarshaler   struct{ A int }
	pointerMarshaler struct{ A int }
	valueText        int
	pointerText      string
	marshalerBool    bool
	intPointer       *int
)

func (valueMarshaler) MarshalJSON() ([]byte, error)    { return []byte(`1`), nil }
func (*pointerMarshaler) MarshalJSON() ([]byte, error) { return []byte(`1`), nil }
func (valueText) MarshalText() ([]byte, error)         { return []byte(`t`), nil }
func (*pointerText) MarshalText() ([]byte, error)      { return []byte(`t`), nil }
func (*marshalerBool) MarshalJSON() ([]byte, error)    { return []byte(`1`), nil }

func TestNewEncoderNil(t *testing.T) {
	type embedded struct{ small }
	type embeddedPointer struct{ *small }
	type embeddedUnexported struct {
		namedInt
		A int
	}
	tests := []struct {
		name string
		t    reflect.Type
	}{
		{"nil type", nil},
		{"string", reflect.TypeFor[string]()},
		{"slice", reflect.TypeFor[[]string]()},
		{"map", reflect.TypeFor[map[string]int]()},
		{"pointer to int", reflect.TypeFor[*int]()},
		{"pointer to pointer", reflect.TypeFor[**small]()},
		{"complex", reflect.TypeFor[complex128]()},
		{"interface", reflect.TypeFor[any]()},
		{"value marshaler", reflect.TypeFor[valueMarshaler]()},
		{"pointer marshaler", reflect.TypeFor[pointerMarshaler]()},
		{"pointer to pointer marshaler", reflect.TypeFor[*pointerMarshaler]()},
		{"time", reflect.TypeFor[time.Time]()},
		{"text marshaler struct", reflect.TypeFor[netip.Addr]()},
		{"bare text marshaler", reflect.TypeFor[valueText]()},
		{"bare json.Number", reflect.TypeFor[json.Number]()},
		{"field value marshaler", reflect.TypeFor[struct{ A valueMarshaler }]()},
		{"field pointer marshaler", reflect.TypeFor[struct{ A pointerMarshaler }]()},
		{"field value text marshaler", reflect.TypeFor[struct{ A valueText }]()},
		{"field pointer text marshaler", reflect.TypeFor[struct{ A pointerText }]()},
		{"field bool marshaler", reflect.TypeFor[struct{ A marshalerBool }]()},
		{"field pointer to marshaler", reflect.TypeFor[struct{ A *valueText }]()},
		{"field strings of text marshalers", reflect.TypeFor[struct{ A []pointerText }]()},
		{"field json.Number", reflect.TypeFor[struct{ A json.Number }]()},
		{"field json.Numbers", reflect.TypeFor[struct{ A []json.Number }]()},
		{"field pointer to json.Number", reflect.TypeFor[struct{ A *json.Number }]()},
		{"field time", reflect.TypeFor[struct {
			A time.Duration
			B time.Time
		}]()},
		{"field any", reflect.TypeFor[struct{ A any }]()},
		{"field map", reflect.TypeFor[struct{ A map[string]int }]()},
		{"field ints", reflect.TypeFor[struct{ A []int }]()},
		{"field bytes", reflect.TypeFor[struct{ A []byte }]()},
		{"field array", reflect.TypeFor[struct{ A [2]string }]()},
		{"field complex", reflect.TypeFor[struct{ A complex64 }]()},
		{"field chan", reflect.TypeFor[struct{ A chan int }]()},
		{"field func", reflect.TypeFor[struct{ A func() }]()},
		{"field pointer to struct", reflect.TypeFor[struct{ A *small }]()},
		{"field pointer to pointer", reflect.TypeFor[struct{ A **int }]()},
		{"field named pointer", reflect.TypeFor[struct{ A intPointer }]()},
		{"nested struct with a bad field", reflect.TypeFor[struct{ A struct{ B any } }]()},
		{"embedded", reflect.TypeFor[embedded]()},
		{"embedded pointer", reflect.TypeFor[embeddedPointer]()},
		{"embedded unexported", reflect.TypeFor[embeddedUnexported]()},
		{"omitzero", reflect.TypeFor[struct {
			A int `json:"a,omitzero"`
		}]()},
		{"string option", reflect.TypeFor[struct {
			A int `json:"a,string"`
		}]()},
		{"string option after omitempty", reflect.TypeFor[struct {
			A int `json:"a,omitempty,string"`
		}]()},
		// Built at run time, since vet rightly refuses such tags in source.
		{"duplicate tags", structOf(`json:"x"`, `json:"x"`)},
		{"tag shadows a Go name", structOf(``, `json:"A"`)},
		{"duplicate via invalid tag", structOf(`json:"B"`, `json:"a\\b"`)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if e := NewEncoder(tt.t); e != nil {
				t.Errorf("NewEncoder(%v) = %+v, want nil", tt.t, e)
			}
		})
	}
}

// structOf returns a struct type of int fields A, B, ... with the given tags.
func structOf(tags ...reflect.StructTag) reflect.Type {
	fields := make([]reflect.StructField, len(tags))
	for i, tag := range tags {
		fields[i] = reflect.StructField{Name: string(rune('A' + i)), Type: reflect.TypeFor[int](), Tag: tag}
	}
	return reflect.StructOf(fields)
}

func TestEncodersCache(t *testing.T) {
	var c Encoders
	st := reflect.TypeFor[small]()
	if a, b := c.For(st), c.For(st); a == nil || a != b {
		t.Errorf("For(small) = %p then %p, want one encoder", a, b)
	}
	if e := c.For(reflect.TypeFor[valueMarshaler]()); e != nil {
		t.Errorf("For(valueMarshaler) = %p, want nil", e)
	}
}

func TestEncodersConcurrent(t *testing.T) {
	var c Encoders
	values := []any{small{1, "a"}, &small{2, "b"}, mixedValue, nested{}}
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			for k := range 50 {
				v := values[(g+k)%len(values)]
				got, ok := c.For(reflect.TypeOf(v)).Append(nil, reflect.ValueOf(v))
				if want, _ := stdEncode(v); !ok || string(got) != want {
					t.Errorf("Append(%#v) = %s, %v; want %s, true", v, got, ok, want)
					return
				}
			}
		})
	}
	wg.Wait()
}

// checkAppendStringBoth holds AppendString to encoding/json with HTML
// escaping on and off, and StringLen to what AppendString writes.
func checkAppendStringBoth(t *testing.T, s string) {
	t.Helper()
	marshalled, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	plain, _ := stdEncode(s)
	for _, c := range []struct {
		html bool
		want string
	}{{true, string(marshalled)}, {false, plain}} {
		got := AppendString(nil, s, c.html)
		if string(got) != c.want {
			t.Errorf("AppendString(%q, html %v) = %s, want %s", s, c.html, got, c.want)
		}
		if n := StringLen(s, c.html); n != len(got) {
			t.Errorf("StringLen(%q, html %v) = %d, want %d", s, c.html, n, len(got))
		}
	}
}

func TestAppendStringHTML(t *testing.T) {
	for _, s := range []string{
		"", "plain", "<b>&amp;</b>", `"q" \b\`, "\x00\b\f\n\r\t\x1f\x7f", "a\u2028b\u2029",
		"bad \xff\xfe", "cut \xe2\x82", "日本語 🙂👍🏽", "\ufffd",
	} {
		checkAppendStringBoth(t, s)
	}
}

func FuzzAppendString(f *testing.F) {
	for _, s := range []string{"", "<&>", "\"\\\n", "\u2028", "\xff", "日本"} {
		f.Add(s)
	}
	f.Fuzz(checkAppendStringBoth)
}
