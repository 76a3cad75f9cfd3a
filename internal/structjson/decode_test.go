package structjson_test

import (
	"bytes"
	"encoding/json"
	"math"
	"reflect"
	"runtime"
	"strings"
	"testing"
	"time"
	"unsafe"

	"github.com/lodeworks/lode/internal/structjson"
)

// The types below are shared by the table, fuzz and benchmark tests of the
// decoder; each covers a group of the kind and tag rules.

type decScalars struct {
	Bool bool    `json:"bool"`
	Int  int     `json:"int"`
	I8   int8    `json:"i8"`
	I16  int16   `json:"i16"`
	I32  int32   `json:"i32"`
	I64  int64   `json:"i64"`
	U    uint    `json:"u"`
	U8   uint8   `json:"u8"`
	U16  uint16  `json:"u16"`
	U32  uint32  `json:"u32"`
	U64  uint64  `json:"u64"`
	Uptr uintptr `json:"uptr"`
	F32  float32 `json:"f32"`
	F64  float64 `json:"f64"`
	S    string  `json:"s"`
}

type (
	decBool   bool
	decInt8   int8
	decUint16 uint16
	decFloat  float32
	decString string
)

type decNamed struct {
	B decBool   `json:"b"`
	I decInt8   `json:"i"`
	U decUint16 `json:"u"`
	F decFloat  `json:"f"`
	S decString `json:"s"`
}

type decTags struct {
	Skipped  int    `json:"-"`
	Dash     int    `json:"-,"`
	Quote    string `json:"na'me"` // invalid tag name: the Go name counts
	Empty    bool   `json:",omitempty"`
	Unicode  string `json:"ünï"`
	Spaced   int    `json:"with space"`
	Zero     uint8  `json:"z,omitzero"`
	Ünicode  int8
	Stringer string `json:"strings,omitempty"` // "strings" is not "string"
	hidden   int
	private  string
}

type decCase struct {
	Lower int `json:"a"`
	Upper int `json:"A"`
	Name  string
}

type decSmall struct {
	A     int    `json:"a"`
	B     int    `json:"b"`
	Label string `json:"label"`
}

type decNone struct {
	Skipped string `json:"-"`
	hidden  int
}

type decRefs struct {
	PI   *int       `json:"pi"`
	PS   *string    `json:"ps"`
	PB   *bool      `json:"pb"`
	PF   *float32   `json:"pf"`
	PU   *decInt8   `json:"pn"`
	SS   []string   `json:"ss"`
	SI   []int64    `json:"si"`
	SU8  []uint16   `json:"su"`
	SF   []float64  `json:"sf"`
	SB   []bool     `json:"sb"`
	SN   []decInt8  `json:"sn"`
	Tags decStrings `json:"tags"`
}

// decMixed is the benchmark's typical tool argument.
type decMixed struct {
	Path    string  `json:"path"`
	Content string  `json:"content"`
	Line    int     `json:"line"`
	Limit   uint32  `json:"limit"`
	Offset  int64   `json:"offset"`
	Ratio   float64 `json:"ratio"`
	Force   bool    `json:"force"`
	Mode    string  `json:"mode"`
}

// decodeAs runs the fast path on raw into a fresh zero value of typ.
func decodeAs(t *testing.T, typ reflect.Type, raw string) (any, bool) {
	t.Helper()
	d := structjson.NewDecoder(typ)
	if d == nil {
		t.Fatalf("NewDecoder(%v) = nil", typ)
	}
	v := reflect.New(typ)
	ok := d.Decode(raw, v.UnsafePointer())
	return v.Elem().Interface(), ok
}

// sameAsJSON checks that got is what json.Unmarshal makes of raw, down to
// the sign of a zero (which reflect.DeepEqual does not see).
func sameAsJSON(t *testing.T, typ reflect.Type, raw string, got any) {
	t.Helper()
	want := reflect.New(typ)
	if err := json.Unmarshal([]byte(raw), want.Interface()); err != nil {
		t.Fatalf("Decode(%q) took the fast path, but json.Unmarshal fails: %v", raw, err)
	}
	if !reflect.DeepEqual(got, want.Elem().Interface()) {
		t.Fatalf("Decode(%q) = %#v; json.Unmarshal gives %#v", raw, got, want.Elem().Interface())
	}
	gotJSON, err1 := json.Marshal(got)
	wantJSON, err2 := json.Marshal(want.Interface())
	if err1 != nil || err2 != nil || !bytes.Equal(gotJSON, wantJSON) {
		t.Fatalf("Decode(%q) marshals to %s (%v); json.Unmarshal's value to %s (%v)", raw, gotJSON, err1, wantJSON, err2)
	}
}

func TestDecodeTakesFastPath(t *testing.T) {
	cases := []struct {
		name string
		raw  string
		want any
	}{
		{"small", `{"a":40,"b":2,"label":"answer"}`, decSmall{A: 40, B: 2, Label: "answer"}},
		{"empty object", `{}`, decSmall{}},
		{"empty object spaced", " \t\r\n{ \n} \r\n", decSmall{}},
		{"whitespace everywhere", " {\n\t\"a\" :\r 1 ,\n \"label\"\t:\"x\" } ", decSmall{A: 1, Label: "x"}},
		{"duplicate key keeps last", `{"a":1,"a":2,"label":"x","label":"y"}`, decSmall{A: 2, Label: "y"}},
		{"every kind", `{"bool":true,"int":-1,"i8":-128,"i16":32767,"i32":-2147483648,` +
			`"i64":9223372036854775807,"u":1,"u8":255,"u16":65535,"u32":4294967295,` +
			`"u64":18446744073709551615,"uptr":7,"f32":1.5,"f64":-2.5e-3,"s":"é😀"}`,
			decScalars{Bool: true, Int: -1, I8: -128, I16: 32767, I32: math.MinInt32, I64: math.MaxInt64,
				U: 1, U8: 255, U16: 65535, U32: math.MaxUint32, U64: math.MaxUint64, Uptr: 7,
				F32: 1.5, F64: -2.5e-3, S: "é😀"}},
		{"int64 min", `{"i64":-9223372036854775808}`, decScalars{I64: math.MinInt64}},
		{"int8 bounds", `{"i8":127}`, decScalars{I8: 127}},
		{"false", `{"bool":false}`, decScalars{}},
		{"minus zero int", `{"int":-0}`, decScalars{}},
		{"zero uint", `{"u64":0}`, decScalars{}},
		{"minus zero float", `{"f64":-0}`, decScalars{F64: math.Copysign(0, -1)}},
		{"float forms", `{"f64":1E+2,"f32":0.1}`, decScalars{F64: 100, F32: 0.1}},
		{"float exponent forms", `{"f64":1e-2,"f32":2.5E3}`, decScalars{F64: 0.01, F32: 2500}},
		{"float integer", `{"f64":12}`, decScalars{F64: 12}},
		{"float underflow is zero", `{"f64":1e-400}`, decScalars{}},
		{"escapes", `{"s":"a\"b\\c\/d\be\ff\ng\rh\ti"}`, decScalars{S: "a\"b\\c/d\be\ff\ng\rh\ti"}},
		{"unicode escapes", `{"s":"\u00e9\u00E9\ud83d\ude00"}`, decScalars{S: "éé😀"}},
		{"escape after text", `{"s":"é line\nnext"}`, decScalars{S: "é line\nnext"}},
		{"lone high surrogate", `{"s":"\ud800x"}`, decScalars{S: "\uFFFDx"}},
		{"lone high surrogate at end", `{"s":"\ud800"}`, decScalars{S: "\uFFFD"}},
		{"lone low surrogate", `{"s":"\udc00"}`, decScalars{S: "\uFFFD"}},
		{"high then non-low", `{"s":"\ud800\u0041"}`, decScalars{S: "\uFFFDA"}},
		{"high high low", `{"s":"\ud800\ud83d\ude00"}`, decScalars{S: "\uFFFD😀"}},
		{"escaped NUL", `{"s":"\u0000"}`, decScalars{S: "\x00"}},
		{"literal U+FFFD", "{\"s\":\"\uFFFD\"}", decScalars{S: "\uFFFD"}},
		{"named types", `{"b":true,"i":-5,"u":600,"f":2.5,"s":"x"}`, decNamed{B: true, I: -5, U: 600, F: 2.5, S: "x"}},
		{"tag rules", `{"-":1,"Quote":"q","Empty":true,"ünï":"u","with space":2,"z":3,"Ünicode":4,"strings":"s"}`,
			decTags{Dash: 1, Quote: "q", Empty: true, Unicode: "u", Spaced: 2, Zero: 3, Ünicode: 4, Stringer: "s"}},
		{"exact case", `{"A":1,"a":2,"Name":"n"}`, decCase{Lower: 2, Upper: 1, Name: "n"}},
		{"no fields", `{}`, decNone{}},
		{"pointers", `{"pi":-3,"ps":"x\ny","pb":false,"pf":0.5,"pn":-128}`,
			decRefs{PI: ptr(-3), PS: ptr("x\ny"), PB: ptr(false), PF: ptr[float32](0.5), PU: ptr[decInt8](-128)}},
		{"null pointers", `{"pi":null,"ps":null}`, decRefs{}},
		{"pointer then null", `{"pi":1,"pi":null}`, decRefs{}},
		{"null then pointer", `{"pi":null,"pi":2}`, decRefs{PI: ptr(2)}},
		{"slices", `{"ss":["a","b\tc",""],"si":[1,-2,9223372036854775807],"su":[65535],` +
			`"sf":[1.5,-0,1e2],"sb":[true,false],"sn":[-1,127],"tags":[ "x" , "y" ]}`,
			decRefs{SS: []string{"a", "b\tc", ""}, SI: []int64{1, -2, math.MaxInt64}, SU8: []uint16{65535},
				SF: []float64{1.5, 0, 100}, SB: []bool{true, false}, SN: []decInt8{-1, 127}, Tags: decStrings{"x", "y"}}},
		{"empty slices", `{"ss":[],"si":[ ],"tags":[` + "\n\t" + `]}`, decRefs{SS: []string{}, SI: []int64{}, Tags: decStrings{}}},
		{"null slices", `{"ss":null,"si":null}`, decRefs{}},
		{"slice then null", `{"ss":["a"],"ss":null}`, decRefs{}},
		{"longer slice then shorter", `{"ss":["a","b"],"ss":["c"]}`, decRefs{SS: []string{"c"}}},
		{"slice then empty", `{"si":[1],"si":[]}`, decRefs{SI: []int64{}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			typ := reflect.TypeOf(tc.want)
			got, ok := decodeAs(t, typ, tc.raw)
			if !ok {
				t.Fatalf("Decode(%s) declined; want the fast path", tc.raw)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("Decode(%s) = %+v; want %+v", tc.raw, got, tc.want)
			}
			sameAsJSON(t, typ, tc.raw, got)
		})
	}
}

func TestDecodeDeclines(t *testing.T) {
	scalars, small, tags, refs := decScalars{}, decSmall{}, decTags{}, decRefs{}
	cases := []struct {
		name string
		zero any
		raw  string
	}{
		{"empty input", small, ``},
		{"only space", small, "  \n"},
		{"not an object", small, `[1]`},
		{"null document", small, `null`},
		{"unclosed", small, `{"a":1`},
		{"unclosed empty", small, `{`},
		{"trailing comma", small, `{"a":1,}`},
		{"missing colon", small, `{"a" 1}`},
		{"missing value", small, `{"a":}`},
		{"trailing garbage", small, `{"a":1}x`},
		{"second document", small, `{"a":1} {}`},
		{"trailing garbage after empty", small, `{}]`},
		{"unknown key", small, `{"c":1}`},
		{"case-different key", small, `{"A":1}`},
		{"escaped key", small, `{"\u0061":1}`},
		{"key with escaped quote", small, `{"a\"":1}`},
		{"unterminated key", small, `{"a`},
		{"unquoted key", small, `{a:1}`},
		{"ignored field's key", tags, `{"Skipped":1}`},
		{"unexported field's key", tags, `{"hidden":1}`},
		{"unexported tagged field's key", tags, `{"private":"x"}`},
		{"invalid tag as key", tags, `{"na'me":"x"}`},
		{"null int", small, `{"a":null}`},
		{"null string", small, `{"label":null}`},
		{"null bool", scalars, `{"bool":null}`},
		{"null float", scalars, `{"f64":null}`},
		{"string for int", small, `{"a":"1"}`},
		{"bool for int", small, `{"a":true}`},
		{"int for string", small, `{"label":1}`},
		{"int for bool", scalars, `{"bool":1}`},
		{"string for bool", scalars, `{"bool":"true"}`},
		{"string for float", scalars, `{"f64":"1"}`},
		{"object for int", small, `{"a":{}}`},
		{"array for string", small, `{"label":["x"]}`},
		{"truncated true", scalars, `{"bool":tru}`},
		{"true with tail", scalars, `{"bool":truex}`},
		{"fraction for int", small, `{"a":1.0}`},
		{"exponent for int", small, `{"a":1e2}`},
		{"big exponent for int", small, `{"a":1E+2}`},
		{"leading zero", small, `{"a":01}`},
		{"leading zero float", scalars, `{"f64":01.5}`},
		{"plus sign", small, `{"a":+1}`},
		{"bare minus", small, `{"a":-}`},
		{"int8 over", scalars, `{"i8":128}`},
		{"int8 under", scalars, `{"i8":-129}`},
		{"int16 over", scalars, `{"i16":32768}`},
		{"int32 under", scalars, `{"i32":-2147483649}`},
		{"int64 over", scalars, `{"i64":9223372036854775808}`},
		{"int64 under", scalars, `{"i64":-9223372036854775809}`},
		{"int over", scalars, `{"int":9223372036854775808}`},
		{"beyond uint64", scalars, `{"i64":99999999999999999999}`},
		{"uint negative", scalars, `{"u":-1}`},
		{"uint minus zero", scalars, `{"u":-0}`},
		{"uint8 over", scalars, `{"u8":256}`},
		{"uint16 over", scalars, `{"u16":65536}`},
		{"uint32 over", scalars, `{"u32":4294967296}`},
		{"uint64 over", scalars, `{"u64":18446744073709551616}`},
		{"uintptr negative", scalars, `{"uptr":-1}`},
		{"float64 overflow", scalars, `{"f64":1e400}`},
		{"float32 overflow", scalars, `{"f32":1e39}`},
		{"float dot without digits", scalars, `{"f64":1.}`},
		{"float leading dot", scalars, `{"f64":.5}`},
		{"float exponent without digits", scalars, `{"f64":1e}`},
		{"float infinity", scalars, `{"f64":Infinity}`},
		{"float hex", scalars, `{"f64":0x10}`},
		{"float NaN", scalars, `{"f64":NaN}`},
		{"invalid UTF-8", scalars, "{\"s\":\"a\xffb\"}"},
		{"invalid UTF-8 after escape", scalars, "{\"s\":\"\\n\xff\"}"},
		{"UTF-8 surrogate", scalars, "{\"s\":\"\xed\xa0\x80\"}"},
		{"control char", scalars, "{\"s\":\"a\nb\"}"},
		{"control char after escape", scalars, "{\"s\":\"\\t\x01\"}"},
		{"single quote escape", scalars, `{"s":"\'"}`},
		{"unknown escape", scalars, `{"s":"\x41"}`},
		{"short unicode escape", scalars, `{"s":"\u12"}`},
		{"bad hex", scalars, `{"s":"\u12g4"}`},
		{"surrogate then bad hex", scalars, `{"s":"\ud800\u12g4"}`},
		{"unterminated string", scalars, `{"s":"abc`},
		{"unterminated escape", scalars, `{"s":"abc\`},
		{"unterminated escaped string", scalars, `{"s":"a\nbc`},
		{"nested object", scalars, `{"s":{"s":"x"}}`},
		{"comment", small, `{"a":1 /* c */}`},
		{"NBSP as space", small, "{\u00a0\"a\":1}"},
		{"pointer type mismatch", refs, `{"pi":"1"}`},
		{"pointer overflow", refs, `{"pn":128}`},
		{"pointer to string gets number", refs, `{"ps":1}`},
		{"truncated null", refs, `{"pi":nul}`},
		{"null with tail", refs, `{"pi":nullx}`},
		{"null element", refs, `{"ss":[null]}`},
		{"null element after value", refs, `{"si":[1,null]}`},
		{"slice type mismatch", refs, `{"si":["1"]}`},
		{"slice element overflow", refs, `{"sn":[128]}`},
		{"scalar for slice", refs, `{"ss":"a"}`},
		{"object for slice", refs, `{"ss":{}}`},
		{"nested array", refs, `{"si":[[1]]}`},
		{"array trailing comma", refs, `{"si":[1,]}`},
		{"array leading comma", refs, `{"si":[,1]}`},
		{"array missing comma", refs, `{"si":[1 2]}`},
		{"unclosed array", refs, `{"si":[1`},
		{"unclosed empty array", refs, `{"si":[`},
		{"array closed by brace", refs, `{"si":[1}`},
		{"slice element fraction", refs, `{"si":[1.5]}`},
		{"slice element invalid UTF-8", refs, "{\"ss\":[\"\xff\"]}"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if _, ok := decodeAs(t, reflect.TypeOf(tc.zero), tc.raw); ok {
				t.Errorf("Decode(%q) took the fast path; want it declined", tc.raw)
			}
		})
	}
}

func TestNewDecoderNil(t *testing.T) {
	type inner struct{ X int }
	type Inner struct{ X int }
	type unexportedName int
	cases := []struct {
		name string
		typ  reflect.Type
	}{
		{"nil type", nil},
		{"int", reflect.TypeFor[int]()},
		{"pointer to struct", reflect.TypeFor[*decSmall]()},
		{"map", reflect.TypeFor[map[string]int]()},
		{"slice of structs", reflect.TypeFor[[]decSmall]()},
		{"embedded struct", reflect.TypeFor[struct{ Inner }]()},
		{"embedded pointer", reflect.TypeFor[struct{ *Inner }]()},
		{"embedded unexported struct", reflect.TypeFor[struct{ inner }]()},
		{"embedded unexported non-struct", reflect.TypeFor[struct{ unexportedName }]()},
		{"embedded tagged", reflect.TypeFor[struct {
			Inner `json:"inner"`
		}]()},
		{"json.Unmarshaler field", reflect.TypeFor[struct{ N decJSONValue }]()},
		{"pointer json.Unmarshaler field", reflect.TypeFor[struct{ N decJSONPointer }]()},
		{"TextUnmarshaler field", reflect.TypeFor[struct{ N decTextValue }]()},
		{"pointer TextUnmarshaler field", reflect.TypeFor[struct{ N decTextPointer }]()},
		{"json.Number field", reflect.TypeFor[struct{ N json.Number }]()},
		{"time.Duration is fine but time.Time is not", reflect.TypeFor[struct{ T time.Time }]()},
		{"struct itself json.Unmarshaler", reflect.TypeFor[decSelfJSON]()},
		{"struct itself TextUnmarshaler", reflect.TypeFor[decSelfText]()},
		{"string option", reflect.TypeFor[struct {
			N int `json:"n,string"`
		}]()},
		{"string option on string", reflect.TypeFor[struct {
			S string `json:",omitempty,string"`
		}]()},
		{"same tag twice", reflect.StructOf([]reflect.StructField{
			{Name: "A", Type: reflect.TypeFor[int](), Tag: `json:"x"`},
			{Name: "B", Type: reflect.TypeFor[int](), Tag: `json:"x"`},
		})},
		{"tag equals other Go name", reflect.TypeFor[struct {
			A int `json:"B"`
			B int
		}]()},
		{"invalid tag falls back onto a taken name", reflect.TypeFor[struct {
			A int `json:"a\\b"`
			B int `json:"A"`
		}]()},
		{"pointer to pointer", reflect.TypeFor[struct{ P **int }]()},
		{"named pointer", reflect.TypeFor[struct{ P decIntPointer }]()},
		{"pointer to slice", reflect.TypeFor[struct{ P *[]int }]()},
		{"pointer to struct", reflect.TypeFor[struct{ P *decSmall }]()},
		{"pointer to json.Unmarshaler", reflect.TypeFor[struct{ P *decJSONPointer }]()},
		{"pointer to TextUnmarshaler", reflect.TypeFor[struct{ P *decTextValue }]()},
		{"pointer to json.Number", reflect.TypeFor[struct{ P *json.Number }]()},
		{"pointer with string option", reflect.TypeFor[struct {
			P *int `json:",string"`
		}]()},
		{"slice of pointers", reflect.TypeFor[struct{ S []*int }]()},
		{"slice of slices", reflect.TypeFor[struct{ S [][]int }]()},
		{"slice of structs", reflect.TypeFor[struct{ S []decSmall }]()},
		{"slice of any", reflect.TypeFor[struct{ S []any }]()},
		{"byte slice field", reflect.TypeFor[struct{ B []byte }]()},
		{"slice of named bytes", reflect.TypeFor[struct{ B []decByte }]()},
		{"slice of json.Unmarshaler", reflect.TypeFor[struct{ S []decJSONPointer }]()},
		{"slice of TextUnmarshaler", reflect.TypeFor[struct{ S []decTextPointer }]()},
		{"slice of json.Number", reflect.TypeFor[struct{ S []json.Number }]()},
		{"slice json.Unmarshaler", reflect.TypeFor[struct{ S decSliceJSON }]()},
		{"slice TextUnmarshaler", reflect.TypeFor[struct{ S decSliceText }]()},
		{"array field", reflect.TypeFor[struct{ A [2]int }]()},
		{"map field", reflect.TypeFor[struct{ M map[string]int }]()},
		{"struct field", reflect.TypeFor[struct{ S decSmall }]()},
		{"interface field", reflect.TypeFor[struct{ V any }]()},
		{"complex field", reflect.TypeFor[struct{ C complex128 }]()},
		{"func field", reflect.TypeFor[struct{ F func() }]()},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if d := structjson.NewDecoder(tc.typ); d != nil {
				t.Errorf("NewDecoder(%v) = %v; want nil", tc.typ, d)
			}
		})
	}
}

func TestNewDecoderAccepts(t *testing.T) {
	for _, typ := range []reflect.Type{
		reflect.TypeFor[decScalars](), reflect.TypeFor[decNamed](), reflect.TypeFor[decTags](),
		reflect.TypeFor[decCase](), reflect.TypeFor[decSmall](), reflect.TypeFor[decNone](),
		reflect.TypeFor[decMixed](), reflect.TypeFor[decRefs](), reflect.TypeFor[struct{}](),
		reflect.TypeFor[struct{ D time.Duration }](),
		// encoding/json ignores these fields, whatever their types.
		reflect.TypeFor[struct {
			M map[string]int `json:"-"`
			m map[string]int
			f func()
		}](),
	} {
		if structjson.NewDecoder(typ) == nil {
			t.Errorf("NewDecoder(%v) = nil; want a decoder", typ)
		}
	}
}

type (
	decIntPointer *int
	decByte       byte
	decStrings    []string
)

type decSliceJSON []int

func (*decSliceJSON) UnmarshalJSON([]byte) error { return nil }

type decSliceText []string

func (decSliceText) UnmarshalText([]byte) error { return nil }

type decJSONValue int

func (decJSONValue) UnmarshalJSON([]byte) error { return nil }

type decJSONPointer int

func (*decJSONPointer) UnmarshalJSON([]byte) error { return nil }

type decTextValue string

func (decTextValue) UnmarshalText([]byte) error { return nil }

type decTextPointer string

func (*decTextPointer) UnmarshalText([]byte) error { return nil }

type decSelfJSON struct{ A int }

func (*decSelfJSON) UnmarshalJSON([]byte) error { return nil }

type decSelfText struct{ A int }

func (*decSelfText) UnmarshalText([]byte) error { return nil }

func ptr[T any](v T) *T { return &v }

func TestDecodeNilDecoder(t *testing.T) {
	var d *structjson.Decoder
	var v decSmall
	if d.Decode(`{}`, reflect.ValueOf(&v).UnsafePointer()) {
		t.Error("a nil *Decoder took the fast path")
	}
}

func TestDecodeAllocations(t *testing.T) {
	if decodeUnderRace {
		t.Skip("the race detector allocates")
	}
	cases := []struct {
		typ reflect.Type
		raw string
	}{
		{reflect.TypeFor[decSmall](), `{"a":40,"b":2,"label":"answer"}`},
		{reflect.TypeFor[decScalars](), `{"bool":true,"int":-1,"i8":-128,"u64":18446744073709551615,` +
			`"f32":1.5,"f64":-2.5e-3,"s":"é😀 plain"}`},
	}
	for _, tc := range cases {
		d := structjson.NewDecoder(tc.typ)
		v := reflect.New(tc.typ)
		p := v.UnsafePointer()
		declined := false
		allocs := testing.AllocsPerRun(100, func() {
			v.Elem().SetZero()
			declined = declined || !d.Decode(tc.raw, p)
		})
		if declined {
			t.Errorf("Decode(%s) declined; want the fast path", tc.raw)
		}
		if allocs != 0 {
			t.Errorf("Decode(%s) allocates %v times; want 0", tc.raw, allocs)
		}
	}
}

var _ = strings.Repeat

// TestEscapedStringSizedByItself checks that an escaped string early in a
// large document is built in memory the size of the string, not of the
// rest of the document, which the value would otherwise keep alive.
func TestEscapedStringSizedByItself(t *testing.T) {
	if decodeUnderRace {
		t.Skip("the race detector allocates")
	}
	type args struct {
		Label string `json:"label"`
		Body  string `json:"body"`
	}
	raw := `{"label":"a\nb","body":"` + strings.Repeat("x", 1<<20) + `"}`
	d := structjson.NewDecoder(reflect.TypeFor[args]())
	// The fewest bytes of a few decodes: a pool refilled after a
	// collection, or anything else the process allocates meanwhile, is
	// not the decode's.
	least := uint64(math.MaxUint64)
	for range 5 {
		var v args
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		ok := d.Decode(raw, unsafe.Pointer(&v))
		runtime.ReadMemStats(&after)
		if !ok || v.Label != "a\nb" || len(v.Body) != 1<<20 {
			t.Fatalf("Decode = %v, label %q, body of %d bytes", ok, v.Label, len(v.Body))
		}
		least = min(least, after.TotalAlloc-before.TotalAlloc)
	}
	if least > 1<<10 {
		t.Fatalf("decoding allocated %d bytes; want the few the label needs", least)
	}
}
