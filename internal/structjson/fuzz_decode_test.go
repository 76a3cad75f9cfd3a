package structjson_test

import (
	"reflect"
	"testing"

	"github.com/lodeworks/lode/internal/structjson"
)

// FuzzDecode holds the decoder to its contract: whenever it takes the fast
// path, json.Unmarshal succeeds on the same input and makes the same value.
// It may decline anything.
func FuzzDecode(f *testing.F) {
	types := []reflect.Type{
		reflect.TypeFor[decScalars](), reflect.TypeFor[decNamed](), reflect.TypeFor[decTags](),
		reflect.TypeFor[decCase](), reflect.TypeFor[decSmall](), reflect.TypeFor[decMixed](),
		reflect.TypeFor[decRefs](),
	}
	decoders := make([]*structjson.Decoder, len(types))
	for i, typ := range types {
		if decoders[i] = structjson.NewDecoder(typ); decoders[i] == nil {
			f.Fatalf("NewDecoder(%v) = nil", typ)
		}
	}

	values := []string{
		`0`, `-0`, `1`, `-1`, `40`, `01`, `00`, `-01`, `+1`, `-`, `1.0`, `1.5`, `-0.0`, `1e2`, `1E+2`,
		`1e-2`, `0.1`, `1e400`, `-1e400`, `1e-400`, `1e39`, `3.4028235e38`, `3.4028236e38`, `1.`, `.5`,
		`1e`, `1e+`, `0x10`, `Infinity`, `NaN`,
		`127`, `128`, `-128`, `-129`, `255`, `256`, `32767`, `32768`, `-32768`, `-32769`, `65535`, `65536`,
		`2147483647`, `2147483648`, `-2147483648`, `-2147483649`, `4294967295`, `4294967296`,
		`9223372036854775807`, `9223372036854775808`, `-9223372036854775808`, `-9223372036854775809`,
		`18446744073709551615`, `18446744073709551616`, `99999999999999999999`,
		`true`, `false`, `tru`, `truex`, `null`, `nul`, `{}`, `[]`, `{"a":1}`, `[1]`,
		`""`, `"x"`, `"answer"`, `"\u00e9"`, `"\u00E9"`, `"\ud83d\ude00"`, `"\ud800"`, `"\udc00"`,
		`"\ud800\u0041"`, `"\ud800\ud83d\ude00"`, `"\ud800\u12g4"`, `"\u0000"`, `"\u12"`,
		`"a\"b\\c\/d\be\ff\ng\rh\ti"`, `"\'"`, `"\x41"`, `"line\nnext"`, `"é"`, `"😀"`,
		"\"a\xffb\"", "\"\xed\xa0\x80\"", "\"\xc3\"", "\"a\nb\"", "\"\x01\"", "\"\x7f\"", "\"\uFFFD\"",
		`"abc`, `"abc\`, `"1"`, `"true"`,
		`[1,2]`, `[-1,127,128]`, `[0,65535,65536]`, `["a","b\nc",""]`, `[ ]`, `[1,]`, `[,1]`, `[1 2]`,
		`[null]`, `[1,null]`, `[[1]]`, `[{}]`, `[true,false]`, `[1.5,-0,1e2,1e400]`, `["\ud800"]`, `[1`,
		`[`, `[1}`, "[\"\xff\"]",
	}
	keys := []string{
		`a`, `A`, `b`, `label`, `Label`, `bool`, `int`, `i8`, `i16`, `i32`, `i64`, `u`, `u8`, `u16`,
		`u32`, `u64`, `uptr`, `f32`, `f64`, `s`, `S`, `i`, `f`, `-`, `Skipped`, `Dash`, `Quote`, `na'me`,
		`Empty`, `ünï`, `with space`, `z`, `Zero`, `Ünicode`, `strings`, `hidden`, `private`, `Name`,
		`name`, `pi`, `ps`, `pb`, `pf`, `pn`, `ss`, `si`, `su`, `sf`, `sb`, `sn`, `tags`, `path`, `content`, `line`, `limit`, `offset`, `ratio`, `force`, `mode`, `\u0061`, `a\"`,
	}
	for _, k := range keys {
		for _, v := range values {
			f.Add(`{"` + k + `":` + v + `}`)
		}
	}
	for _, s := range []string{
		``, ` `, `{`, `}`, `{}`, ` {} `, "\t\r\n{\n}\r\n\t", `{}x`, `{} {}`, `{}]`, `[]`, `null`, `"x"`,
		`{"a":1,}`, `{"a" 1}`, `{"a":}`, `{a:1}`, `{"a":1`, `{"a":1}x`, `{"a":1 /* c */}`,
		`{"a":40,"b":2,"label":"answer"}`,
		` {\n "a" : 1 ,\n "b"\t:\r2 , "label" : "x" }`,
		`{"a":1,"a":2}`, `{"a":1,"A":2}`, `{"A":1,"a":2,"Name":"n"}`, `{"label":"x","label":"y"}`,
		`{"a":{"b":1}}`, `{"label":["x"]}`, `{"a":null,"b":1}`,
		`{"bool":true,"int":-1,"i8":-128,"i16":32767,"i32":-2147483648,"i64":9223372036854775807,` +
			`"u":1,"u8":255,"u16":65535,"u32":4294967295,"u64":18446744073709551615,"uptr":7,` +
			`"f32":1.5,"f64":-2.5e-3,"s":"é😀"}`,
		`{"b":true,"i":-5,"u":600,"f":2.5,"s":"x"}`,
		`{"-":1,"Quote":"q","Empty":true,"ünï":"u","with space":2,"z":3,"Ünicode":4,"strings":"s"}`,
		`{"path":"/tmp/a.txt","content":"line one\nline two\n\ttabbed \"quoted\"","line":12,` +
			`"limit":100,"offset":-3,"ratio":0.25,"force":true,"mode":"append"}`,
		"{\u00a0\"a\":1}",
		`{"pi":1,"pi":null}`, `{"pi":null,"pi":2}`, `{"ss":["a","b"],"ss":["c"]}`, `{"si":[1],"si":[]}`,
		`{"ss":["a"],"ss":[null]}`, `{"ss":["a"],"ss":null}`, `{"si":[1,2],"si":[3,"x"]}`,
		`{"pi":-3,"ps":"x\ny","pb":false,"pf":0.5,"pn":-128,"ss":["a"],"si":[1],"su":[2],"sf":[0.5],` +
			`"sb":[true],"sn":[-1],"tags":["t"]}`,
	} {
		f.Add(s)
	}

	f.Fuzz(func(t *testing.T, raw string) {
		for i, typ := range types {
			v := reflect.New(typ)
			if !decoders[i].Decode(raw, v.UnsafePointer()) {
				continue
			}
			sameAsJSON(t, typ, raw, v.Elem().Interface())
		}
	})
}
