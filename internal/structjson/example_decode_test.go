package structjson_test

import (
	"encoding/json"
	"fmt"
	"reflect"
	"unsafe"

	"github.com/lodeworks/lode/internal/structjson"
)

// A caller compiles the decoder once per type and falls back to
// encoding/json whenever Decode declines, zeroing the value first.
func ExampleDecoder_Decode() {
	type readArgs struct {
		Path  string `json:"path"`
		Limit int    `json:"limit"`
	}
	d := structjson.NewDecoder(reflect.TypeFor[readArgs]())
	for _, raw := range []string{
		`{"path":"notes.txt","limit":10}`,
		`{"Path":"notes.txt","limit":10}`, // a case-insensitive key: encoding/json's rule
	} {
		var args readArgs
		if d.Decode(raw, unsafe.Pointer(&args)) {
			fmt.Printf("fast path: %+v\n", args)
			continue
		}
		args = readArgs{}
		if err := json.Unmarshal([]byte(raw), &args); err != nil {
			fmt.Println(err)
			continue
		}
		fmt.Printf("encoding/json: %+v\n", args)
	}
	// Output:
	// fast path: {Path:notes.txt Limit:10}
	// encoding/json: {Path:notes.txt Limit:10}
}
