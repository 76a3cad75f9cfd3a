package pgtest

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestFindBin(t *testing.T) {
	empty := t.TempDir()
	t.Setenv("PATH", empty)
	_, err := findBin(filepath.Join(empty, "*", "bin"))
	if err == nil || !strings.Contains(err.Error(), "apt-get install -y postgresql") || !strings.Contains(err.Error(), Env+"=off") {
		t.Fatalf("no binaries: %v", err)
	}

	// Debian's layout: the newest version wins.
	root := t.TempDir()
	for _, v := range []string{"9", "15", "13"} {
		bin := filepath.Join(root, v, "bin")
		if err := os.MkdirAll(bin, 0o755); err != nil {
			t.Fatal(err)
		}
		for _, name := range []string{"initdb", "postgres"} {
			if err := os.WriteFile(filepath.Join(bin, name), nil, 0o755); err != nil {
				t.Fatal(err)
			}
		}
	}
	got, err := findBin(filepath.Join(root, "*", "bin"))
	if err != nil || got != filepath.Join(root, "15", "bin") {
		t.Fatalf("found %q, %v", got, err)
	}

	// $PATH first.
	t.Setenv("PATH", filepath.Join(root, "9", "bin"))
	if got, err := findBin(filepath.Join(empty, "*")); err != nil || got != filepath.Join(root, "9", "bin") {
		t.Fatalf("found %q, %v", got, err)
	}
}

func TestSharedSkipsWhenOff(t *testing.T) {
	t.Setenv(Env, "off")
	ran := false
	t.Run("needs postgres", func(t *testing.T) {
		defer func() { ran = true }()
		Shared(t)
		t.Fatal("Shared returned with " + Env + "=off")
	})
	if !ran || shared != nil {
		t.Fatal("a server was started")
	}
}
