package cli

import (
	"context"
	"net/http/httptest"
	"os/user"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/lodeworks/lode/ledger"
	"github.com/lodeworks/lode/ledger/file"
	"github.com/lodeworks/lode/x/auth"
)

// threadOf is the thread ID a run or chat with a store printed.
func threadOf(t *testing.T, stderr string) string {
	t.Helper()
	m := regexp.MustCompile(`\(thread (\S+) in `).FindStringSubmatch(stderr)
	if m == nil {
		t.Fatalf("no thread named in:\n%s", stderr)
	}
	return m[1]
}

// answers is a fake server that answers every request with a text.
func answers(t *testing.T, n int) (*fakeOpenAI, string) {
	t.Helper()
	fake := &fakeOpenAI{}
	for range n {
		fake.replies = append(fake.replies, textReply("ok."))
	}
	srv := httptest.NewServer(fake)
	t.Cleanup(srv.Close)
	return fake, srv.URL + "/v1"
}

func (f *fakeOpenAI) count() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.requests)
}

// The policy's tenants: limits bind lode run and lode chat by --tenant: a
// named tenant's, and "*" for a tenant without an entry; a run of another
// tenant, or of none, is not bound, and what a tenant spends is counted on
// its day's counter.
func TestTenantLimitsBindRunAndChat(t *testing.T) {
	const policy = "policy:\n  roles:\n    viewer:\n      allow: {packs: [calculator]}\n  tenants:\n%s"
	cases := []struct {
		name, tenants, tenant string
		refused               string // "" when the run goes through
	}{
		{"a named tenant", "    acme: {usd_per_day: 0.04}\n", "acme", "the run was stopped by the policy: tenant acme has spent $0.0000 of its $0.0400 per day"},
		{"any tenant", "    \"*\": {usd_per_day: 0.04}\n", "globex", "the run was stopped by the policy: tenant globex has spent $0.0000 of its $0.0400 per day"},
		{"another tenant's limit", "    acme: {usd_per_day: 0.04}\n", "globex", ""},
		{"no tenant", "    \"*\": {usd_per_day: 0.04}\n", "", ""},
		{"inside the limit", "    acme: {usd_per_day: 5}\n", "acme", ""},
	}
	for _, c := range cases {
		for _, cmd := range []string{"run", "chat"} {
			t.Run(c.name+"/"+cmd, func(t *testing.T) {
				fake, url := costServer(t)
				dir := writeConfig(t, pricedTiny+strings.ReplaceAll(policy, "%s", c.tenants))
				store := filepath.Join(dir, "threads")
				args := []string{cmd, "--model", "tiny", "--role", "viewer", "--store", store}
				if c.tenant != "" {
					args = append(args, "--tenant", c.tenant)
				}
				stdin := ""
				if cmd == "run" {
					args = append(args, "what is 1+1?")
				} else {
					stdin = "what is 1+1?\n"
				}
				r := lode(t, dir, map[string]string{"OPENAI_BASE_URL": url}, stdin, args...)
				switch {
				case c.refused == "" && (r.code != 0 || strings.Contains(r.stderr, "stopped by the policy")):
					t.Fatalf("exit %d: %s", r.code, r.stderr)
				case c.refused != "" && !strings.Contains(r.stderr, c.refused):
					t.Fatalf("exit %d, stderr lacks %q:\n%s", r.code, c.refused, r.stderr)
				case c.refused != "" && cmd == "run" && r.code != exitError:
					t.Fatalf("exit %d, want 1", r.code)
				}
				want := 2
				if c.refused != "" {
					want = 0
				}
				if n := fake.count(); n != want {
					t.Errorf("%d requests, want %d", n, want)
				}
				if c.name != "inside the limit" {
					return
				}
				s, err := file.Open(store)
				if err != nil {
					t.Fatal(err)
				}
				defer s.Close()
				day := time.Now().UTC().Format(time.DateOnly)
				spent, _, err := s.AddCounter(context.Background(), "lode.spend:"+day+":tenant:acme", 0, ledger.NoLimit)
				if err != nil || spent <= 0 {
					t.Errorf("the tenant's day counter holds %d (%v): the run's spend was not counted against it", spent, err)
				}
			})
		}
	}
}

// A new thread carries the caller's user, tenant and roles; a stored
// thread keeps its tenant: another --tenant is refused by run, chat and
// resume, and without --tenant the thread's own goes on.
func TestThreadKeepsItsTenant(t *testing.T) {
	fake, url := answers(t, 4)
	dir := writeConfig(t, "model:\n  name: m\n")
	store := filepath.Join(dir, "threads")
	vars := map[string]string{"OPENAI_BASE_URL": url}
	r := lode(t, dir, vars, "", "run", "--store", store, "--tenant", "acme", "hi")
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	id := threadOf(t, r.stderr)
	st := storedThread(t, store, id)
	got := auth.Of(st)
	me, err := user.Current()
	if err != nil {
		t.Fatal(err)
	}
	if got.Tenant != "acme" || got.User != me.Username || len(got.Roles) != 0 {
		t.Errorf("the thread's identity is %+v, want user %s, tenant acme", got, me.Username)
	}

	want := "lode: thread " + id + " belongs to tenant acme, not globex: a thread cannot change tenant (leave --tenant out, or give --tenant acme)\n"
	for _, args := range [][]string{
		{"run", "--store", store, "--thread", id, "--tenant", "globex", "again"},
		{"chat", "--store", store, "--thread", id, "--tenant", "globex"},
		{"resume", "--store", store, "--tenant", "globex", id, "approve:call_1"},
	} {
		r := lode(t, dir, vars, "hi\n", args...)
		if r.code != exitError || r.stderr != want {
			t.Errorf("%s: exit %d, stderr %q, want %q", args[0], r.code, r.stderr, want)
		}
	}
	if n := fake.count(); n != 1 {
		t.Fatalf("%d requests: a refused command asked the model", n)
	}
	for _, args := range [][]string{
		{"run", "--store", store, "--thread", id, "again"},
		{"run", "--store", store, "--thread", id, "--tenant", "acme", "and again"},
	} {
		if r := lode(t, dir, vars, "", args...); r.code != 0 {
			t.Fatalf("%q: exit %d: %s", args, r.code, r.stderr)
		}
	}
	if got := auth.Of(storedThread(t, store, id)); got.Tenant != "acme" {
		t.Errorf("the thread's tenant is now %q", got.Tenant)
	}

	// A thread of no tenant is not given one.
	r = lode(t, dir, vars, "", "run", "--store", store, "hi")
	other := threadOf(t, r.stderr)
	r = lode(t, dir, vars, "", "run", "--store", store, "--thread", other, "--tenant", "acme", "again")
	if r.code != exitError || !strings.Contains(r.stderr, "has no tenant, and --tenant acme would give it one") {
		t.Errorf("exit %d, stderr %q", r.code, r.stderr)
	}
}
