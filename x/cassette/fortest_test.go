package cassette_test

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lodeworks/lode/x/cassette"
)

// fakeT records what ForTest reports.
type fakeT struct {
	fatals, errs []string
	cleanups     []func()
}

func (*fakeT) Helper() {}
func (f *fakeT) Fatalf(format string, args ...any) {
	f.fatals = append(f.fatals, fmt.Sprintf(format, args...))
}
func (f *fakeT) Errorf(format string, args ...any) {
	f.errs = append(f.errs, fmt.Sprintf(format, args...))
}
func (f *fakeT) Cleanup(fn func()) { f.cleanups = append(f.cleanups, fn) }
func (f *fakeT) finish() {
	for i := len(f.cleanups) - 1; i >= 0; i-- {
		f.cleanups[i]()
	}
}

func TestForTestFailsLoudly(t *testing.T) {
	dir := t.TempDir()
	blocker := filepath.Join(dir, "file")
	if err := os.WriteFile(blocker, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, env, path string
		fatal, err      string
	}{
		{"missing cassette", "", filepath.Join(dir, "none.yaml"),
			"cassette: no such cassette: " + filepath.Join(dir, "none.yaml") + " does not exist: record it with LODE_RECORD=1 (or lode run --record)", ""},
		{"missing cassette, recording off", "0", filepath.Join(dir, "none.yaml"),
			"cassette: no such cassette: " + filepath.Join(dir, "none.yaml") + " does not exist: record it with LODE_RECORD=1 (or lode run --record)", ""},
		{"not a boolean", "maybe", filepath.Join(dir, "none.yaml"),
			`cassette: LODE_RECORD="maybe": want 1 to record or 0 to replay`, ""},
		{"unwritable", "1", filepath.Join(blocker, "c.yaml"),
			"", "cassette: writing " + filepath.Join(blocker, "c.yaml") + ": mkdir " + blocker + ": not a directory"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv(cassette.EnvRecord, tt.env)
			ft := &fakeT{}
			client := cassette.ForTest(ft, tt.path)
			ft.finish()
			if tt.fatal != "" {
				if client != nil || len(ft.fatals) != 1 || ft.fatals[0] != tt.fatal {
					t.Errorf("fatals = %q, want %q", ft.fatals, tt.fatal)
				}
				return
			}
			if len(ft.fatals) != 0 || len(ft.errs) != 1 || ft.errs[0] != tt.err {
				t.Errorf("fatals = %q, errors = %q, want the error %q", ft.fatals, ft.errs, tt.err)
			}
		})
	}
}

func TestForTestRecordsThenReplays(t *testing.T) {
	srv := eventServer(t, "data: {\"a\":1}\n\n")
	path := filepath.Join(t.TempDir(), "sub", "c.yaml")
	get := func(client *http.Client) string {
		resp, err := client.Get(srv.URL + "/x")
		if err != nil {
			t.Fatal(err)
		}
		return strings.Join(reads(t, resp), "")
	}

	t.Setenv(cassette.EnvRecord, "1")
	ft := &fakeT{}
	live := get(cassette.ForTest(ft, path))
	ft.finish()
	if len(ft.fatals)+len(ft.errs) != 0 {
		t.Fatalf("recording: %q %q", ft.fatals, ft.errs)
	}
	srv.Close()

	t.Setenv(cassette.EnvRecord, "")
	ft = &fakeT{}
	if got := get(cassette.ForTest(ft, path)); got != live {
		t.Errorf("replayed %q, recorded %q", got, live)
	}
	ft.finish()
	if len(ft.fatals)+len(ft.errs) != 0 {
		t.Fatalf("replaying: %q %q", ft.fatals, ft.errs)
	}
}
