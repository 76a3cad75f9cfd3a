package structjson

import (
	"encoding/json"
	"reflect"
	"strings"
	"unicode"
)

// numberType is json.Number, a string kind that encoding/json reads and
// writes as a number literal: both codecs leave it to encoding/json.
var numberType = reflect.TypeFor[json.Number]()

// jsonField is a struct field as encoding/json sees it.
type jsonField struct {
	reflect.StructField
	name                string // the JSON name
	omitEmpty, omitZero bool
}

// jsonFields returns the fields of the struct type t that encoding/json
// reads and writes, in declaration order, or false when it would decide by
// rules this package leaves to it: an embedded field, whose fields are
// promoted by depth and tags; the ",string" option, which quotes values;
// two fields under one name, of which it picks a dominant one or none.
func jsonFields(t reflect.Type) ([]jsonField, bool) {
	var fields []jsonField
	seen := make(map[string]bool, t.NumField())
	for i := range t.NumField() {
		sf := t.Field(i)
		if sf.Anonymous {
			return nil, false
		}
		if !sf.IsExported() {
			continue
		}
		tag := sf.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, opts, _ := strings.Cut(tag, ",")
		if !validName(name) {
			name = sf.Name
		}
		f := jsonField{StructField: sf, name: name}
		for opts != "" {
			var opt string
			opt, opts, _ = strings.Cut(opts, ",")
			switch opt {
			case "omitempty":
				f.omitEmpty = true
			case "omitzero":
				f.omitZero = true
			case "string":
				return nil, false
			}
		}
		if seen[name] {
			return nil, false
		}
		seen[name] = true
		fields = append(fields, f)
	}
	return fields, true
}

// validName reports whether encoding/json takes a tag's name as the key;
// otherwise the key is the Go field name.
func validName(s string) bool {
	if s == "" {
		return false
	}
	for _, c := range s {
		switch {
		case strings.ContainsRune("!#$%&()*+-./:;<=>?@[]^_{|}~ ", c):
			// punctuation other than quote and backslash is allowed
		case !unicode.IsLetter(c) && !unicode.IsDigit(c):
			return false
		}
	}
	return true
}
