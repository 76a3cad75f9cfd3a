package policy_test

import (
	"bytes"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lodeworks/lode/x/policy"
)

// write replaces the file and moves its modification time on, so that a
// change is seen even on a file system with coarse timestamps.
func write(t *testing.T, path, doc string, tick int) {
	t.Helper()
	if err := os.WriteFile(path, []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	at := time.Date(2026, 1, 1, 0, 0, tick, 0, time.UTC)
	if err := os.Chtimes(path, at, at); err != nil {
		t.Fatal(err)
	}
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func TestFileReload(t *testing.T) {
	path := filepath.Join(t.TempDir(), "policy.yaml")
	write(t, path, "roles:\n  viewer:\n    allow:\n      tools: [a]\n", 1)
	var logs syncBuffer
	f, err := policy.Open(path, policy.WithCheckInterval(-1), policy.WithLogger(slog.New(slog.NewTextHandler(&logs, nil))))
	if err != nil {
		t.Fatal(err)
	}
	allowed := func(name string) bool {
		return f.Policy().Decide([]string{"viewer"}, policy.Tool{Name: name}).Allowed
	}
	if !allowed("a") || allowed("b") {
		t.Fatal("first version not in force")
	}

	write(t, path, "roles:\n  viewer:\n    allow:\n      tools: [b]\n", 2)
	if allowed("a") || !allowed("b") {
		t.Fatal("changed file not in force on the next use")
	}

	before := f.Policy()
	write(t, path, "roles:\n  viewer:\n    allow:\n      tools: [\"no/slash\"]\n", 3)
	if got := f.Policy(); got != before {
		t.Fatal("a bad file replaced the policy")
	}
	if !strings.Contains(logs.String(), "changed policy refused") || !strings.Contains(logs.String(), "no/slash") {
		t.Errorf("refusal not logged: %s", logs.String())
	}

	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	if got := f.Policy(); got != before {
		t.Fatal("a removed file replaced the policy")
	}

	write(t, path, "roles:\n  viewer:\n    allow:\n      tools: [c]\n", 4)
	if !allowed("c") {
		t.Fatal("a good file after a bad one is not in force")
	}
}

func TestFileChecksAtMostOncePerInterval(t *testing.T) {
	path := filepath.Join(t.TempDir(), "policy.yaml")
	write(t, path, "roles:\n  viewer:\n    allow:\n      tools: [a]\n", 1)
	f, err := policy.Open(path, policy.WithCheckInterval(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	write(t, path, "roles:\n  viewer:\n    allow:\n      tools: [b]\n", 2)
	if !f.Policy().Decide([]string{"viewer"}, policy.Tool{Name: "a"}).Allowed {
		t.Fatal("the file was looked at again within the interval")
	}
}

func TestOpenRefuses(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.yaml")
	write(t, bad, "roles: 3\n", 1)
	lode := filepath.Join(dir, "lode.yaml")
	write(t, lode, "model: {name: m}\npolicy:\n  roles:\n    viewer:\n      allow:\n        tools: [x]\n", 1)
	twoDocs := filepath.Join(dir, "two.yaml")
	write(t, twoDocs, "policy:\n  roles:\n    viewer:\n      allow: {tools: [x]}\n---\npolicy:\n  roles:\n    viewer:\n      deny: {tools: [x]}\n", 1)
	twoKeys := filepath.Join(dir, "twokeys.yaml")
	write(t, twoKeys, "policy:\n  roles:\n    viewer:\n      allow: {tools: [x]}\nmodel: {name: m}\npolicy:\n  roles:\n    viewer:\n      deny: {tools: [x]}\n", 1)
	tagged := filepath.Join(dir, "tagged.yaml")
	write(t, tagged, "policy:\n  roles:\n    viewer:\n      deny: !maybe {tools: [x]}\n", 1)
	for _, tc := range []struct {
		name string
		path string
		opts []policy.FileOption
		want string
	}{
		{"missing file", filepath.Join(dir, "none.yaml"), nil, "no such file"},
		{"bad document", bad, nil, "invalid document"},
		{"missing key", lode, []policy.FileOption{policy.WithKey("rules")}, `key not found in file: "rules"`},
		{"validate refuses", lode, []policy.FileOption{policy.WithKey("policy"), policy.WithValidate(func(p *policy.Policy) error {
			return p.Check(policy.Inventory{})
		})}, `line 6: role viewer, allow tools "x": no mounted tool matches`},
		{"two documents in lode.yaml", twoDocs, []policy.FileOption{policy.WithKey("policy")}, "line 6: a second YAML document"},
		{"two policy keys in lode.yaml", twoKeys, []policy.FileOption{policy.WithKey("policy")}, `line 6: the key "policy" is already given at line 1`},
		{"a tag in lode.yaml's policy", tagged, []policy.FileOption{policy.WithKey("policy")}, "line 4: the YAML tag !maybe"},
		{"two documents", twoDocs, nil, "a second YAML document"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, err := policy.Open(tc.path, tc.opts...)
			if f != nil || err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Open = %v, %v; want an error with %q", f, err, tc.want)
			}
		})
	}
	f, err := policy.Open(lode, policy.WithKey("policy"))
	if err != nil {
		t.Fatal(err)
	}
	if d := f.Policy().Decide([]string{"viewer"}, policy.Tool{Name: "x"}); !d.Allowed || d.Rule != `viewer allow tools "x" (line 6)` {
		t.Errorf("policy: key of lode.yaml: %+v", d)
	}
	// The rest of lode.yaml is not the policy's: a merge key or a tag there
	// is lode.yaml's business.
	other := filepath.Join(dir, "other.yaml")
	write(t, other, "base: &b {name: m}\nmodel:\n  <<: *b\n  stream: !!bool true\npolicy:\n  roles:\n    viewer:\n      allow: {tools: [x]}\n", 1)
	if _, err := policy.Open(other, policy.WithKey("policy")); err != nil {
		t.Errorf("a merge key and a tag outside policy: refused: %v", err)
	}
}

// TestFileConcurrentUse reads the policy from many goroutines while the
// file changes; under -race it shows the swap is atomic.
func TestFileConcurrentUse(t *testing.T) {
	path := filepath.Join(t.TempDir(), "policy.yaml")
	write(t, path, "roles:\n  viewer:\n    allow:\n      tools: [a]\n", 1)
	f, err := policy.Open(path, policy.WithCheckInterval(-1))
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	var nils atomic.Int32
	for range 4 {
		wg.Go(func() {
			for range 200 {
				if f.Policy() == nil {
					nils.Add(1)
				}
			}
		})
	}
	for i := range 20 {
		write(t, path, "roles:\n  viewer:\n    allow:\n      tools: [a"+strings.Repeat("a", i)+"]\n", 2+i)
	}
	wg.Wait()
	if n := nils.Load(); n != 0 {
		t.Errorf("%d reads saw no policy", n)
	}
}
