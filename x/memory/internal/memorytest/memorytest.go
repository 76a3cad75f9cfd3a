// Package memorytest is the contract every memory.Store passes: scopes
// fail closed, facts of one scope are never seen from another, and a
// query is text, never syntax, whatever it holds. It also generates the
// facts and questions the benchmarks measure recall on.
package memorytest

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/lodeworks/lode/x/memory"
)

// Opener returns a new, empty store for one test; the test closes it.
type Opener func(t testing.TB) memory.Store

// hostile are queries (and fact texts) that try a store's query syntax,
// SQL, wildcards and quoting.
var hostile = []string{
	`%`, `_`, `%%`, `*`, `"`, `'`, `''`, `\`, `\%`,
	`' OR '1'='1`, `" OR ""="`, `') OR 1=1 --`, `'); DROP TABLE memory_facts; --`,
	`zebra OR *`, `zebra*`, `"zebra" OR "locker"`, `NEAR(zebra locker)`, `zebra AND NOT code`,
	`text:zebra`, `{text user}: zebra`, `^zebra`, `zebra:*`, `zebra & !code | locker`, `!!zebra`,
	`(`, `)`, `<->`, `zebra <-> locker`, `%zebra%`, `_ebra`, `z_bra`,
	"\x00", "zebra\x00", "ze\u0301bra", `\u0000`, `$1`, `?`, `:user`, `@tenant`,
	strings.Repeat("zebra ", 2000),
}

// Run runs the contract on the stores open returns.
func Run(t *testing.T, open Opener) {
	t.Run("FailsClosed", func(t *testing.T) { failsClosed(t, open(t)) })
	t.Run("SaveSearchForget", func(t *testing.T) { saveSearchForget(t, open(t)) })
	t.Run("Isolation", func(t *testing.T) { isolation(t, open(t)) })
	t.Run("HostileQueries", func(t *testing.T) { hostileQueries(t, open(t)) })
	t.Run("Limits", func(t *testing.T) { limits(t, open(t)) })
	t.Run("Concurrent", func(t *testing.T) { concurrent(t, open(t)) })
}

// concurrent saves, searches and forgets from several goroutines in two
// scopes at once: every fact lands in its own scope, and no search sees
// the other's.
func concurrent(t *testing.T, s memory.Store) {
	closeStore(t, s)
	ctx := context.Background()
	const workers, each = 4, 10
	scopes := []memory.Scope{{Tenant: "acme", User: "alice"}, {Tenant: "acme", User: "bob"}}
	var wg sync.WaitGroup
	errs := make(chan error, workers*len(scopes))
	for w := range workers {
		for _, sc := range scopes {
			wg.Go(func() {
				for i := range each {
					f, err := s.Save(ctx, sc, fmt.Sprintf("%s note %d from worker %d", sc.User, i, w))
					if err == nil {
						var got []memory.Fact
						got, err = s.Search(ctx, sc, "note worker", memory.MaxLimit)
						for _, g := range got {
							if !strings.HasPrefix(g.Text, sc.User+" ") {
								err = fmt.Errorf("%s found %q", sc.User, g.Text)
							}
						}
					}
					if err == nil && i%2 == 1 {
						err = s.Forget(ctx, sc, f[0].ID)
					}
					if err != nil {
						errs <- err
						return
					}
				}
			})
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	for _, sc := range scopes {
		list, err := s.List(ctx, sc)
		if err != nil || len(list) != workers*each/2 {
			t.Errorf("%s holds %d facts (%v), want %d", sc.User, len(list), err, workers*each/2)
		}
	}
}

func closeStore(t *testing.T, s memory.Store) {
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Error(err)
		}
	})
}

func failsClosed(t *testing.T, s memory.Store) {
	closeStore(t, s)
	ctx := context.Background()
	for _, sc := range []memory.Scope{
		{}, {Tenant: "acme"}, {Tenant: "acme", User: "  "},
		{Tenant: "acme", User: "alice\x00"}, {Tenant: "acme\x00", User: "alice"}, {Tenant: "acme", User: "\xff"},
	} {
		if _, err := s.Save(ctx, sc, "a fact"); !errors.Is(err, memory.ErrNoScope) {
			t.Errorf("Save(%+v) = %v, want ErrNoScope", sc, err)
		}
		if _, err := s.Search(ctx, sc, "fact", 5); !errors.Is(err, memory.ErrNoScope) {
			t.Errorf("Search(%+v) = %v, want ErrNoScope", sc, err)
		}
		if _, err := s.List(ctx, sc); !errors.Is(err, memory.ErrNoScope) {
			t.Errorf("List(%+v) = %v, want ErrNoScope", sc, err)
		}
		if err := s.Forget(ctx, sc, "1"); !errors.Is(err, memory.ErrNoScope) {
			t.Errorf("Forget(%+v) = %v, want ErrNoScope", sc, err)
		}
	}
}

func saveSearchForget(t *testing.T, s memory.Store) {
	closeStore(t, s)
	ctx := context.Background()
	sc := memory.Scope{Tenant: "acme", User: "alice"}
	facts, err := s.Save(ctx, sc,
		"Alice lives in Lisbon.",
		"Alice's favourite food is grilled sardines.",
		"Alice works as a ship's engineer in the port of Lisbon.",
	)
	if err != nil {
		t.Fatal(err)
	}
	if len(facts) != 3 || facts[0].ID == "" || facts[0].ID == facts[1].ID || facts[0].Saved.IsZero() {
		t.Fatalf("Save returned %+v", facts)
	}
	got, err := s.Search(ctx, sc, "What food does Alice like?", 5)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) == 0 || got[0].ID != facts[1].ID {
		t.Fatalf("search for food: %+v, want %q first", got, facts[1].Text)
	}
	for i := 1; i < len(got); i++ {
		if got[i].Score > got[i-1].Score {
			t.Errorf("scores not best first: %+v", got)
		}
	}
	got, _ = s.Search(ctx, sc, "Where does she live? Lisbon", 5)
	if len(got) != 2 || got[0].ID != facts[0].ID {
		t.Errorf("search for Lisbon: %+v, want the two Lisbon facts, %q first", got, facts[0].Text)
	}
	if got, _ := s.Search(ctx, sc, "the of and", 5); len(got) != 0 {
		t.Errorf("stopwords alone found %+v", got)
	}
	if got, _ := s.Search(ctx, sc, "", 5); len(got) != 0 {
		t.Errorf("empty query found %+v", got)
	}

	list, err := s.List(ctx, sc)
	if err != nil || len(list) != 3 || list[0].ID != facts[0].ID || list[2].ID != facts[2].ID {
		t.Fatalf("List = %+v, %v; want the three facts oldest first", list, err)
	}
	if err := s.Forget(ctx, sc, facts[0].ID); err != nil {
		t.Fatal(err)
	}
	if err := s.Forget(ctx, sc, facts[0].ID); !errors.Is(err, memory.ErrNotFound) {
		t.Errorf("second Forget = %v, want ErrNotFound", err)
	}
	for _, id := range []string{"", "0", "999999", "x", "' OR 1=1 --"} {
		if err := s.Forget(ctx, sc, id); !errors.Is(err, memory.ErrNotFound) {
			t.Errorf("Forget(%q) = %v, want ErrNotFound", id, err)
		}
	}
	got, _ = s.Search(ctx, sc, "Lisbon", 5)
	if len(got) != 1 || got[0].ID != facts[2].ID {
		t.Errorf("after Forget, search for Lisbon: %+v", got)
	}
	if list, _ := s.List(ctx, sc); len(list) != 2 {
		t.Errorf("after Forget, List = %+v", list)
	}

	for _, bad := range []string{"", "   ", strings.Repeat("x", memory.MaxFactBytes+1), "\xff\xfe", "a\x00b"} {
		if _, err := s.Save(ctx, sc, "fine", bad); !errors.Is(err, memory.ErrFact) {
			t.Errorf("Save(%.20q) = %v, want ErrFact", bad, err)
		}
	}
	if list, _ := s.List(ctx, sc); len(list) != 2 {
		t.Errorf("a refused Save saved some: %+v", list)
	}
}

func isolation(t *testing.T, s memory.Store) {
	closeStore(t, s)
	ctx := context.Background()
	owner := memory.Scope{Tenant: "acme", User: "alice"}
	secret, err := s.Save(ctx, owner, "Alice's locker code is 4417 zebra.")
	if err != nil {
		t.Fatal(err)
	}
	others := []struct {
		name string
		sc   memory.Scope
	}{
		{"other user", memory.Scope{Tenant: "acme", User: "bob"}},
		{"same user, other tenant", memory.Scope{Tenant: "globex", User: "alice"}},
		{"same user, no tenant", memory.Scope{User: "alice"}},
		{"user wildcard", memory.Scope{Tenant: "acme", User: "%"}},
		{"user prefix wildcard", memory.Scope{Tenant: "acme", User: "ali%"}},
		{"user underscore", memory.Scope{Tenant: "acme", User: "alic_"}},
		{"tenant wildcard", memory.Scope{Tenant: "%", User: "alice"}},
		{"tenant underscore", memory.Scope{Tenant: "acm_", User: "alice"}},
		{"shifted boundary", memory.Scope{Tenant: "acmea", User: "lice"}},
		{"shifted boundary 2", memory.Scope{Tenant: "acm", User: "ealice"}},
		{"case", memory.Scope{Tenant: "ACME", User: "Alice"}},
		{"injection in user", memory.Scope{Tenant: "acme", User: "x' OR '1'='1"}},
		{"injection in tenant", memory.Scope{Tenant: "' OR 1=1 --", User: "alice"}},
		{"separator in tenant", memory.Scope{Tenant: "acme\x1falice", User: "alice"}},
		{"separator in user", memory.Scope{Tenant: "acme", User: "alice\x1f"}},
		{"spaces", memory.Scope{Tenant: "acme ", User: "alice"}},
	}
	queries := append([]string{"locker code", "zebra", "4417", "Alice's locker code is 4417 zebra."}, hostile...)
	for _, o := range others {
		t.Run(o.name, func(t *testing.T) {
			// Facts of its own, so a store cannot pass by finding nothing.
			if _, err := s.Save(ctx, o.sc, "A locker and a zebra of my own."); err != nil {
				t.Fatal(err)
			}
			for _, q := range queries {
				got, err := s.Search(ctx, o.sc, q, memory.MaxLimit)
				if err != nil {
					t.Fatalf("Search(%.30q): %v", q, err)
				}
				for _, f := range got {
					if f.ID == secret[0].ID || strings.Contains(f.Text, "4417") {
						t.Fatalf("Search(%.30q) from %+v found the owner's fact %+v", q, o.sc, f)
					}
				}
			}
			list, err := s.List(ctx, o.sc)
			if err != nil {
				t.Fatal(err)
			}
			for _, f := range list {
				if f.ID == secret[0].ID {
					t.Fatalf("List from %+v holds the owner's fact", o.sc)
				}
			}
			if err := s.Forget(ctx, o.sc, secret[0].ID); !errors.Is(err, memory.ErrNotFound) {
				t.Fatalf("Forget of the owner's fact from %+v = %v, want ErrNotFound", o.sc, err)
			}
		})
	}
	got, err := s.Search(ctx, owner, "locker code", 5)
	if err != nil || len(got) != 1 || got[0].ID != secret[0].ID {
		t.Fatalf("the owner finds %+v, %v; want only its own fact", got, err)
	}
}

func hostileQueries(t *testing.T, s memory.Store) {
	closeStore(t, s)
	ctx := context.Background()
	sc := memory.Scope{Tenant: "acme", User: "alice"}
	if _, err := s.Save(ctx, sc, "The zebra stands by locker 12."); err != nil {
		t.Fatal(err)
	}
	// Facts that hold the same syntax save and are found by their words.
	for _, h := range hostile {
		if memory.CheckFact("kiwi "+h) != nil {
			continue
		}
		if _, err := s.Save(ctx, sc, "kiwi "+h); err != nil {
			t.Fatalf("Save(%.30q): %v", h, err)
		}
	}
	for _, q := range hostile {
		t.Run(q[:min(len(q), 20)], func(t *testing.T) {
			got, err := s.Search(ctx, sc, q, memory.MaxLimit)
			if err != nil {
				t.Fatalf("Search(%.30q): %v", q, err)
			}
			terms := memory.QueryTerms(q)
			if len(terms) == 0 && len(got) != 0 {
				t.Fatalf("Search(%.30q), with no terms, found %d facts: the query was read as syntax", q, len(got))
			}
			for _, f := range got {
				if !sharesTerm(f.Text, terms) {
					t.Fatalf("Search(%.30q) found %q, which shares no term with it", q, f.Text)
				}
			}
		})
	}
	got, err := s.Search(ctx, sc, "kiwi", memory.MaxLimit)
	if err != nil || len(got) == 0 {
		t.Fatalf("search for kiwi: %v, %v", got, err)
	}
}

func sharesTerm(text string, terms []string) bool {
	for _, a := range memory.Terms(text) {
		for _, b := range terms {
			if a == b {
				return true
			}
		}
	}
	return false
}

func limits(t *testing.T, s memory.Store) {
	closeStore(t, s)
	ctx := context.Background()
	sc := memory.Scope{Tenant: "acme", User: "alice"}
	texts := make([]string, memory.MaxLimit+10)
	for i := range texts {
		texts[i] = "Alice owns a red bicycle number " + strings.Repeat("x", i%7+1)
	}
	if _, err := s.Save(ctx, sc, texts...); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ limit, want int }{
		{0, memory.DefaultLimit}, {-1, memory.DefaultLimit}, {1, 1}, {7, 7},
		{memory.MaxLimit, memory.MaxLimit}, {memory.MaxLimit + 5, memory.MaxLimit}, {1 << 30, memory.MaxLimit},
	} {
		got, err := s.Search(ctx, sc, "bicycle", tc.limit)
		if err != nil || len(got) != tc.want {
			t.Errorf("Search(limit %d) = %d facts, %v; want %d", tc.limit, len(got), err, tc.want)
		}
	}
}
