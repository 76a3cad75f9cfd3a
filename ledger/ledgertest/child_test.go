package ledgertest

import (
	"errors"
	"fmt"
	"runtime"
	"slices"
	"testing"
)

const childTestEnv = "LODE_LEDGERTEST_CHILD_TEST"

type childTestConfig struct{ Mode string }

func TestChildConfig(t *testing.T) {
	for _, c := range []struct {
		name, env string
		want      bool
	}{
		{"unset", "", false},
		{"another test's", `{"Test":"TestOther","Config":{"Mode":"x"}}`, false},
		{"not JSON", `{"Test":`, false},
		{"a bare config", `{"Mode":"x"}`, false},
		{"this test's", `{"Test":"TestMine","Config":{"Mode":"x"}}`, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Setenv(childTestEnv, c.env)
			var got childTestConfig
			if ok := ChildConfig(childTestEnv, "TestMine", &got); ok != c.want || (ok && got.Mode != "x") {
				t.Fatalf("ChildConfig = %v with %+v, want %v", ok, got, c.want)
			}
		})
	}
}

// fatalTB records the failure a helper reports instead of failing the
// test that runs it.
type fatalTB struct {
	testing.TB
	msg string
}

func (f *fatalTB) Helper() {}
func (f *fatalTB) Fatalf(format string, args ...any) {
	f.msg = fmt.Sprintf(format, args...)
	runtime.Goexit()
}
func (f *fatalTB) Fatal(args ...any) {
	f.msg = fmt.Sprint(args...)
	runtime.Goexit()
}

// failure runs fn against a fatalTB and returns what it failed with.
func failure(t *testing.T, fn func(tb testing.TB)) string {
	f := &fatalTB{TB: t}
	done := make(chan struct{})
	go func() {
		defer close(done)
		fn(f)
	}()
	<-done
	return f.msg
}

func TestChild(t *testing.T) {
	var cfg childTestConfig
	if ChildConfig(childTestEnv, "TestChild", &cfg) {
		RunChild("child test", func(say func(string)) error {
			switch cfg.Mode {
			case "fail":
				return errors.New("boom")
			case "exit":
				say("1")
				return nil
			}
			for _, l := range []string{"1", "2", "3"} {
				say(l)
			}
			select {}
		})
	}

	t.Run("killed", func(t *testing.T) {
		c := StartChild(t, "TestChild", childTestEnv, childTestConfig{Mode: "block"})
		c.Await(t, func(line string) bool { return line == "1" })
		// The lines after the one awaited were written before the kill,
		// or never; either way in order.
		if rest := c.Kill(t); !slices.Equal(rest, []string{"2", "3"}[:len(rest)]) {
			t.Fatalf("Kill returned %q, want a prefix of [2 3]", rest)
		}
	})
	t.Run("all lines reach the parent", func(t *testing.T) {
		c := StartChild(t, "TestChild", childTestEnv, childTestConfig{Mode: "block"})
		var got []string
		c.Await(t, func(line string) bool { got = append(got, line); return line == "3" })
		if rest := c.Kill(t); !slices.Equal(got, []string{"1", "2", "3"}) || len(rest) != 0 {
			t.Fatalf("read %q, then %q", got, rest)
		}
	})
	for _, c := range []struct {
		mode, want string
	}{
		{"fail", "the child stopped (exit status 3) before it got there: child test: boom\n"},
		{"exit", "the child stopped (<nil>) before it got there: "},
	} {
		t.Run("stops with "+c.mode, func(t *testing.T) {
			ch := StartChild(t, "TestChild", childTestEnv, childTestConfig{Mode: c.mode})
			msg := failure(t, func(tb testing.TB) {
				ch.Await(tb, func(line string) bool { return line == "never" })
			})
			if msg != c.want {
				t.Fatalf("Await failed with %q, want %q", msg, c.want)
			}
		})
	}
	t.Run("not killed", func(t *testing.T) {
		ch := StartChild(t, "TestChild", childTestEnv, childTestConfig{Mode: "exit"})
		// The child has exited by the time its pipe ends, so the kill is
		// not what ended it.
		var lines []string
		for l := range ch.lines {
			lines = append(lines, l)
		}
		msg := failure(t, func(tb testing.TB) { ch.Kill(tb) })
		if want := "the child was not killed (<nil>): "; !slices.Equal(lines, []string{"1"}) || msg != want {
			t.Fatalf("read %q; Kill failed with %q", lines, msg)
		}
	})
}
