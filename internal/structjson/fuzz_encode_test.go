package structjson

import (
	"math"
	"reflect"
	"strconv"
	"testing"
)

// fuzzIn is one fuzz input, spread into the fields of each fuzz type.
type fuzzIn struct {
	s, t string
	i    int64
	u    uint64
	f, g float64
	b    bool
}

type fuzzKinds struct {
	B   bool
	I   int
	I8  int8
	I16 int16
	I32 int32
	I64 int64
	U   uint
	U8  uint8
	U16 uint16
	U32 uint32
	U64 uint64
	UP  uintptr
	F32 float32
	F64 float64
	S   string
	NB  namedBool
	NI  namedInt
	NU  namedUint8
	NF  namedFloat32
	NS  namedString
}

type fuzzOmit struct {
	B   bool         `json:"b,omitempty"`
	I8  int8         `json:"i8,omitempty"`
	I64 int64        `json:"i64,omitempty"`
	U16 uint16       `json:"u16,omitempty"`
	UP  uintptr      `json:"up,omitempty"`
	F32 float32      `json:"f32,omitempty"`
	F64 float64      `json:"f64,omitempty"`
	S   string       `json:"s,omitempty"`
	NS  namedString  `json:"ns,omitempty"`
	NF  namedFloat32 `json:"nf,omitempty"`
	SS  []string     `json:"ss,omitempty"`
	PI  *int64       `json:"pi,omitempty"`
	PS  *string      `json:"ps,omitempty"`
}

type fuzzFloats struct {
	A float64
	B float64
	C float64
	D float32
	E float32
	F float32
	G namedFloat32
}

// fuzzCase builds a value of one fuzz type from the input and reports
// whether a NaN or an infinity went into it, the one thing the encoder
// may decline.
type fuzzCase func(in fuzzIn) (v any, nonFinite bool)

func nonFinite(fs ...float64) bool {
	for _, f := range fs {
		if math.IsNaN(f) || math.IsInf(f, 0) {
			return true
		}
	}
	return false
}

var fuzzCases = map[string]fuzzCase{
	"kinds": func(in fuzzIn) (any, bool) {
		v := fuzzKinds{in.b, int(in.i), int8(in.i), int16(in.i), int32(in.u), in.i,
			uint(in.u), uint8(in.u), uint16(in.i), uint32(in.u), in.u, uintptr(in.u),
			float32(in.g), in.f, in.s, namedBool(!in.b), namedInt(in.i), namedUint8(in.i),
			namedFloat32(in.f), namedString(in.t)}
		return v, nonFinite(float64(v.F32), v.F64, float64(v.NF))
	},
	"tags": func(in fuzzIn) (any, bool) {
		n := int(in.i)
		return tagged{n, n + 1, n + 2, n + 3, n + 4, n + 5, n + 6, n + 7, n + 8, n + 9, n + 10,
			n + 11, n + 12, n + 13, n + 14, namedInt(in.u), namedString(in.s)}, false
	},
	"omitempty": func(in fuzzIn) (any, bool) {
		v := fuzzOmit{in.b, int8(in.i), in.i, uint16(in.u), uintptr(in.u), float32(in.g), in.f,
			in.s, namedString(in.t), namedFloat32(in.g), nil, nil, nil}
		if in.b {
			v.SS = []string{in.t, in.s}[:in.u%3]
			v.PI = &in.i
		} else {
			v.PS = &in.s
		}
		return v, nonFinite(float64(v.F32), v.F64, float64(v.NF))
	},
	"pointer": func(in fuzzIn) (any, bool) {
		if !in.b {
			return (*fuzzKinds)(nil), false
		}
		v := &fuzzKinds{S: in.s, F64: in.f, F32: float32(in.f), I64: in.i, U64: in.u}
		return v, nonFinite(in.f, float64(v.F32))
	},
	"nested": func(in fuzzIn) (any, bool) {
		v := nested{In: inner{int(in.i), in.t}}
		if in.b {
			v.Tags = []string{in.s, in.t, ""}[:in.u%4]
			v.N = ptr(int(in.u))
			v.S = &in.s
			v.F = ptr(float32(in.f))
			v.B = ptr(namedBool(in.i%2 == 0))
			return v, nonFinite(float64(*v.F))
		}
		return v, false
	},
	"floats": func(in fuzzIn) (any, bool) {
		v := fuzzFloats{in.f, -in.g, in.f * in.g, float32(in.f), float32(in.g),
			float32(in.f) * float32(in.g), namedFloat32(in.f / in.g)}
		return v, nonFinite(v.A, v.B, v.C, float64(v.D), float64(v.E), float64(v.F), float64(v.G))
	},
}

// FuzzEncode holds Append side by side with encoding/json on types that
// cover every kind and tag rule the encoder takes.
func FuzzEncode(f *testing.F) {
	strs := []string{
		"", "answer", "<>&", `"quoted" \back\slash\`, "a\u2028b\u2029c",
		"\xff\xfe invalid \xc3", "\xe2\x80", "emoji 👍🏽 and é", "\ufffd",
		"\x00\x01\x02\x03\x04\x05\x06\x07\b\t\n\x0b\f\r\x0e\x0f\x10\x11\x12\x13\x14\x15\x16\x17\x18\x19\x1a\x1b\x1c\x1d\x1e\x1f\x7f",
	}
	floats := []float64{
		0, math.Copysign(0, -1), 0.1, 1e-6, 1e-7, 1e20, 1e21, -1e21, 5e-324,
		math.SmallestNonzeroFloat32, math.MaxFloat32, math.MaxFloat64, 1.5, -123.456,
		math.Nextafter(1e-6, 0), math.Nextafter(1e21, 0), math.NaN(), math.Inf(1),
	}
	ints := []int64{0, 1, -1, math.MaxInt8, math.MinInt8, math.MaxInt32, math.MinInt32, math.MaxInt64, math.MinInt64}
	uints := []uint64{0, 1, math.MaxUint8, math.MaxUint16, math.MaxUint32, math.MaxUint64}
	for k, s := range strs {
		f.Add(s, strs[(k+1)%len(strs)], ints[k%len(ints)], uints[k%len(uints)], floats[k%len(floats)], floats[(k+7)%len(floats)], k%2 == 0)
	}
	for k, fl := range floats {
		f.Add(strs[k%len(strs)], "t", ints[k%len(ints)], uints[k%len(uints)], fl, floats[len(floats)-1-k], k%2 == 1)
	}
	for k, i := range ints {
		f.Add("s", strs[k%len(strs)], i, uints[k%len(uints)], 1.0, 2.0, true)
	}
	encs := make(map[string]*Encoder, len(fuzzCases))
	for name, build := range fuzzCases {
		v, _ := build(fuzzIn{})
		if encs[name] = NewEncoder(reflect.TypeOf(v)); encs[name] == nil {
			f.Fatalf("NewEncoder(%T) = nil", v)
		}
	}
	f.Fuzz(func(t *testing.T, s, s2 string, i int64, u uint64, fl, g float64, b bool) {
		in := fuzzIn{s, s2, i, u, fl, g, b}
		for name, build := range fuzzCases {
			v, bad := build(in)
			want, err := stdEncode(v)
			if (err != nil) != bad {
				t.Fatalf("%s: the case is wrong about %#v: encoding/json says %v", name, v, err)
			}
			got, ok := encs[name].Append(nil, reflect.ValueOf(v))
			switch {
			case ok && err != nil:
				t.Errorf("%s: Append(%#v) = %s, true; encoding/json fails with %v", name, v, got, err)
			case ok && string(got) != want:
				t.Errorf("%s: Append(%#v)\n got %s\nwant %s", name, v, got, want)
			case !ok && !bad:
				t.Errorf("%s: Append declined %#v, which holds no NaN or infinity", name, v)
			}
		}
	})
}

// FuzzEncodeTags holds the encoder's reading of json tags, names and
// options, against encoding/json on struct types built at run time.
func FuzzEncodeTags(f *testing.F) {
	for _, tag := range []string{
		"", "-", "-,", "a", "a,omitempty", ",omitempty", "a b", "a\"b", `a\b`, "naïve",
		"!#$%&()*+-./:;<=>?@[]^_{|}~", "é,omitempty,", "\u2028", "\xff", "x,omitzero", "x,string", "B", "A",
	} {
		f.Add(`json:`+strconv.Quote(tag), `json:"b,omitempty"`, int64(0), "")
		f.Add(`json:"a"`, `json:`+strconv.Quote(tag), int64(1), "s")
	}
	f.Fuzz(func(t *testing.T, tagA, tagB string, n int64, s string) {
		typ := reflect.StructOf([]reflect.StructField{
			{Name: "A", Type: reflect.TypeFor[int64](), Tag: reflect.StructTag(tagA)},
			{Name: "B", Type: reflect.TypeFor[string](), Tag: reflect.StructTag(tagB)},
		})
		e := NewEncoder(typ)
		if e == nil {
			return
		}
		v := reflect.New(typ).Elem()
		v.Field(0).SetInt(n)
		v.Field(1).SetString(s)
		want, err := stdEncode(v.Interface())
		if err != nil {
			t.Fatalf("encoding/json fails on %#v: %v", v, err)
		}
		got, ok := e.Append(nil, v)
		if !ok || string(got) != want {
			t.Errorf("tags %q, %q: Append(%#v) = %s, %v; want %s, true", tagA, tagB, v, got, ok, want)
		}
	})
}
