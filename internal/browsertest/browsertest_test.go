package browsertest

import "testing"

func TestRequireSkipsWhenOff(t *testing.T) {
	t.Setenv("LODE_TEST_BROWSER", "off")
	var reached bool
	ok := t.Run("browser", func(t *testing.T) {
		Require(t, "nothing")
		reached = true
	})
	if !ok || reached {
		t.Errorf("Require did not skip: passed %v, went on %v", ok, reached)
	}
}

func TestRequireSkipsWithoutChromium(t *testing.T) {
	t.Setenv("LODE_TEST_BROWSER", "")
	t.Setenv("CI", "")
	t.Setenv("PATH", t.TempDir())
	var reached bool
	ok := t.Run("browser", func(t *testing.T) {
		Require(t, "nothing")
		reached = true
	})
	if !ok || reached {
		t.Errorf("Require did not skip: passed %v, went on %v", ok, reached)
	}
}
