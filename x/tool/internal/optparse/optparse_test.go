package optparse_test

import (
	"errors"
	"math"
	"testing"

	"github.com/lodeworks/lode/x/tool/internal/optparse"
)

var set = optparse.Set{Pack: "demo", Known: []string{"a", "b", "c"}}

func TestEach(t *testing.T) {
	var seen []string
	err := set.Each(map[string]any{"c": 3, "a": 1, "b": 2}, func(k string, v any) error {
		seen = append(seen, k)
		return nil
	})
	if err != nil || len(seen) != 3 || seen[0] != "a" || seen[1] != "b" || seen[2] != "c" {
		t.Fatalf("Each visited %v, %v; want a b c in order", seen, err)
	}
	// The first problem in key order wins, whether unknown key or bad value.
	stop := errors.New("stop at b")
	for _, tc := range []struct {
		opts map[string]any
		want string
	}{
		{map[string]any{"b": 1, "zz": 1}, "stop at b"},
		{map[string]any{"b": 1, "aa": 1}, `demo: unknown option "aa"; the options are a, b, c`},
		{map[string]any{"B": 1}, `demo: unknown option "B"; the options are a, b, c`},
	} {
		err := set.Each(tc.opts, func(k string, v any) error {
			if k == "b" {
				return stop
			}
			return nil
		})
		if err == nil || err.Error() != tc.want {
			t.Errorf("Each(%v) = %v, want %q", tc.opts, err, tc.want)
		}
	}
	if err := set.Each(nil, func(string, any) error { return stop }); err != nil {
		t.Errorf("Each(nil) = %v", err)
	}
}

func TestReaders(t *testing.T) {
	type reader func(v any) (any, error)
	str := func(v any) (any, error) { return set.String("k", v) }
	path := func(v any) (any, error) { return set.Path("k", v, "a directory path") }
	boolean := func(v any) (any, error) { return set.Bool("k", v) }
	positive := func(v any) (any, error) { return set.PositiveInt("k", v, 1<<40) }
	inRange := func(v any) (any, error) { return set.InRange("k", v, 100) }
	tests := []struct {
		name string
		read reader
		in   any
		want any
		err  string
	}{
		{"string", str, "x_", "x_", ""},
		{"empty string", str, "", "", ""},
		{"string of int", str, 1, nil, "demo: option k must be a string, got int"},
		{"string of nil", str, nil, nil, "demo: option k must be a string, got <nil>"},
		{"path", path, "/tmp", "/tmp", ""},
		{"empty path", path, "", nil, "demo: option k must be a directory path, got "},
		{"path of number", path, 3, nil, "demo: option k must be a directory path, got 3"},
		{"bool", boolean, true, true, ""},
		{"bool of string", boolean, "yes", nil, "demo: option k must be true or false, got yes"},
		{"int", positive, 7, int64(7), ""},
		{"int64", positive, int64(1 << 40), int64(1 << 40), ""},
		{"uint64", positive, uint64(9), int64(9), ""},
		{"whole float", positive, 3.0, int64(3), ""},
		{"fraction", positive, 1.5, nil, "demo: option k must be an integer from 1 to 1099511627776, got 1.5"},
		{"zero", positive, 0, nil, "demo: option k must be an integer from 1 to 1099511627776, got 0"},
		{"negative", positive, -1, nil, "demo: option k must be an integer from 1 to 1099511627776, got -1"},
		{"above", positive, int64(1<<40 + 1), nil, "demo: option k must be an integer from 1 to 1099511627776, got 1099511627777"},
		{"huge uint64", positive, uint64(math.MaxUint64), nil, "demo: option k must be an integer from 1 to 1099511627776, got 18446744073709551615"},
		{"huge float", positive, 1e300, nil, "demo: option k must be an integer from 1 to 1099511627776, got 1e+300"},
		{"NaN", positive, math.NaN(), nil, "demo: option k must be an integer from 1 to 1099511627776, got NaN"},
		{"infinity", positive, math.Inf(1), nil, "demo: option k must be an integer from 1 to 1099511627776, got +Inf"},
		{"string number", positive, "9", nil, "demo: option k must be a positive integer, got string"},
		{"nil number", positive, nil, nil, "demo: option k must be a positive integer, got <nil>"},
		{"in range", inRange, 100, int64(100), ""},
		{"out of range", inRange, 101, nil, "demo: option k must be an integer from 1 to 100, got 101"},
		{"in range of string", inRange, "lots", nil, "demo: option k must be an integer from 1 to 100, got lots"},
		{"in range of int32", inRange, int32(5), nil, "demo: option k must be an integer from 1 to 100, got 5"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := tc.read(tc.in)
			if tc.err != "" {
				if err == nil || err.Error() != tc.err {
					t.Fatalf("error %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("= %v (%T), %v; want %v (%T)", got, got, err, tc.want, tc.want)
			}
		})
	}
}

func TestMessages(t *testing.T) {
	if err := set.Required("root", "the directory the tools are confined to"); err.Error() != "demo: option root is required: the directory the tools are confined to" {
		t.Errorf("Required: %v", err)
	}
	if err := set.Unknown("x"); err.Error() != `demo: unknown option "x"; the options are a, b, c` {
		t.Errorf("Unknown: %v", err)
	}
	// The pack's name is text, not a format.
	odd := optparse.Set{Pack: "100%"}
	if err := odd.Errorf("option %s is bad", "k"); err.Error() != "100%: option k is bad" {
		t.Errorf("Errorf: %v", err)
	}
}
