package ledgertest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"

	"github.com/lodeworks/lode/ledger"
)

// The checks below hold whether a store copies a fork's turns or shares
// them with the parent (ledger.Forker): what a store shares it must keep
// for the fork through appends, deletes and forks of forks.

// SameJSON fails t unless got and want encode to the same JSON, turn by
// turn: what a request built from them would carry, byte for byte.
func SameJSON(t testing.TB, what string, got, want []ledger.Turn) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d turns, want %d", what, len(got), len(want))
	}
	for i := range got {
		g, err := got[i].MarshalJSON()
		if err != nil {
			t.Fatalf("%s: turn %d: %v", what, i, err)
		}
		w, err := want[i].MarshalJSON()
		if err != nil {
			t.Fatalf("%s: turn %d: %v", what, i, err)
		}
		if string(g) != string(w) {
			t.Fatalf("%s: turn %d differs:\n got %s\nwant %s", what, i, g, w)
		}
	}
}

// numbered returns n turns, alternately user and assistant, named by tag.
func numbered(tag string, from, n int) []ledger.Turn {
	turns := make([]ledger.Turn, n)
	for i := range turns {
		role := ledger.RoleUser
		if (from+i)%2 == 1 {
			role = ledger.RoleAssistant
		}
		turns[i] = ledger.Turn{Role: role, Artifacts: benchTurn(from + i)}
		turns[i].Artifacts = append(turns[i].Artifacts, Text(tag))
	}
	return turns
}

// A fork reloaded by another instance carries the parent's turns up to the
// cut byte for byte, as the parent reloaded does: the request a history
// policy builds from either is the same.
func testForkReloads(t *testing.T, open Opener) {
	s := open(t)
	_, cut := forkParent(t, s, "parent")
	f := forkOK(t, s, "parent", cut)
	o := open(t)
	want := Load(t, o, "parent").Turns()[:cut]
	SameJSON(t, "the fork as made", f.Turns(), want)
	SameJSON(t, "the fork reloaded", Load(t, o, f.ID()).Turns(), want)
	if err := f.Reload(context.Background()); err != nil {
		t.Fatal(err)
	}
	SameJSON(t, "the fork after Reload", f.Turns(), want)
}

// What is appended or set on the parent after a fork is not the fork's,
// and what is appended or set on the fork is not the parent's.
func testForkGrowsApart(t *testing.T, open Opener) {
	ctx := context.Background()
	s := open(t)
	p := Create(t, s, ledger.WithID("p"), ledger.WithTurns(numbered("p", 0, 6)...))
	f := forkOK(t, s, "p", 4, ledger.WithForkID("f"))
	whole := forkOK(t, s, "p", 6, ledger.WithForkID("whole"))
	base := p.Turns()
	Append(t, p, ledger.RoleUser, Text("parent 6"))
	Append(t, Load(t, open(t), "p"), ledger.RoleAssistant, Text("parent 7"))
	Append(t, f, ledger.RoleUser, Text("fork 4"))
	Append(t, whole, ledger.RoleUser, Text("whole 6"))
	if err := p.Reload(ctx); err != nil {
		t.Fatal(err)
	}
	if err := p.SetMetadata("who", "parent"); err != nil {
		t.Fatal(err)
	}
	if err := f.SetMetadata("who", "fork"); err != nil {
		t.Fatal(err)
	}
	o := open(t)
	wantP := append(slices.Clone(base), p.Turns()[6:]...)
	SameJSON(t, "the parent", Load(t, o, "p").Turns(), wantP)
	SameJSON(t, "the fork", Load(t, o, "f").Turns(), append(slices.Clone(base[:4]), f.Turns()[4]))
	SameJSON(t, "the whole fork", Load(t, o, "whole").Turns(), append(slices.Clone(base), whole.Turns()[6]))
	if v, _ := Load(t, o, "p").Metadata("who"); v != "parent" {
		t.Fatalf("the parent's metadata: who=%q", v)
	}
	if v, _ := Load(t, o, "f").Metadata("who"); v != "fork" {
		t.Fatalf("the fork's metadata: who=%q", v)
	}
	if _, ok := Load(t, o, "whole").Metadata("who"); ok {
		t.Fatal("a metadata value set after the fork reached it")
	}
}

// A fork of a fork of a fork, each with turns of its own, and a fork cut
// inside each link of the chain, load their turns; each link grows alone.
func testForkChain(t *testing.T, open Opener) {
	s := open(t)
	const depth = 5
	prev := Create(t, s, ledger.WithID("c0"), ledger.WithTurns(numbered("c0", 0, 4)...))
	want := map[string][]ledger.Turn{"c0": prev.Turns()}
	for d := 1; d <= depth; d++ {
		id := fmt.Sprintf("c%d", d)
		f := forkOK(t, s, prev.ID(), prev.Len(), ledger.WithForkID(id))
		for _, turn := range numbered(id, f.Len(), 2) {
			Append(t, f, turn.Role, turn.Artifacts...)
		}
		want[id] = f.Turns()
		// A cut inside each earlier link.
		for back := 0; back < d; back++ {
			at := 4 + 2*back - 1
			if at%2 == 1 {
				at-- // between a user and an assistant turn either way
			}
			mid := fmt.Sprintf("c%d.at%d", d, at)
			want[mid] = forkOK(t, s, id, at, ledger.WithForkID(mid)).Turns()
			SameJSON(t, mid+" as made", want[mid], want[id][:at])
		}
		prev = f
	}
	// Growing a middle link changes none of its descendants.
	Append(t, Load(t, s, "c2"), ledger.RoleUser, Text("c2 grows"))
	want["c2"] = Load(t, s, "c2").Turns()
	o := open(t)
	for id, w := range want {
		SameJSON(t, id+" reloaded", Load(t, o, id).Turns(), w)
	}
	n := 0
	for info, err := range o.List(context.Background()) {
		if err != nil {
			t.Fatalf("list: %v", err)
		}
		if w, ok := want[info.ID]; !ok || info.Turns != len(w) {
			t.Fatalf("listed %s with %d turns", info.ID, info.Turns)
		}
		n++
	}
	if n != len(want) {
		t.Fatalf("listed %d threads, want %d", n, len(want))
	}
}

// Deleting a thread that has forks leaves every fork whole, open ones
// included (they still take appends), down a chain; the parent's ID is
// free again, and a thread made under it is not the forks' parent.
func testForkDeleteParent(t *testing.T, open Opener) {
	ctx := context.Background()
	s := open(t)
	p := Create(t, s, ledger.WithID("p"), ledger.WithTurns(numbered("p", 0, 8)...))
	want := map[string][]ledger.Turn{}
	a := forkOK(t, s, "p", 8, ledger.WithForkID("a"))
	Append(t, a, ledger.RoleUser, Text("a 8"))
	Append(t, a, ledger.RoleAssistant, Text("a 9"))
	b := forkOK(t, s, "p", 4, ledger.WithForkID("b"))
	aa := forkOK(t, s, "a", 9, ledger.WithForkID("aa"))
	ab := forkOK(t, s, "a", 2, ledger.WithForkID("ab"))
	Append(t, p, ledger.RoleUser, Text("p 8"))
	want["a"], want["b"], want["aa"], want["ab"] = a.Turns(), b.Turns(), aa.Turns(), ab.Turns()
	check := func(when string) {
		t.Helper()
		o := open(t)
		for id, w := range want {
			SameJSON(t, when+": "+id, Load(t, o, id).Turns(), w)
		}
		for info, err := range o.List(ctx) {
			if err != nil {
				t.Fatalf("%s: list: %v", when, err)
			}
			if w, ok := want[info.ID]; !ok || info.Turns != len(w) {
				t.Fatalf("%s: listed %s with %d turns", when, info.ID, info.Turns)
			}
		}
	}
	if err := s.Delete(ctx, "p"); err != nil {
		t.Fatal(err)
	}
	check("after deleting the parent")
	// The forks open before the delete still take appends.
	Append(t, b, ledger.RoleUser, Text("b 4"))
	Append(t, aa, ledger.RoleAssistant, Text("aa 9"))
	want["b"], want["aa"] = b.Turns(), aa.Turns()
	check("after appends to the open forks")
	// Deleting a fork that has forks of its own.
	if err := open(t).Delete(ctx, "a"); err != nil {
		t.Fatal(err)
	}
	delete(want, "a")
	check("after deleting a fork with forks")
	want["p"] = Create(t, s, ledger.WithID("p"), ledger.WithTurns(numbered("new p", 0, 1)...)).Turns()
	check("after making p again")
	wantErr(t, "reload of the deleted parent", p.Reload(ctx), ledger.ErrNotFound)
	// A fork of a fork of a deleted thread.
	want["aaa"] = forkOK(t, s, "aa", 10, ledger.WithForkID("aaa")).Turns()
	SameJSON(t, "aaa", want["aaa"], want["aa"][:10])
	for _, id := range []string{"aa", "ab", "b"} {
		if err := s.Delete(ctx, id); err != nil {
			t.Fatal(err)
		}
		delete(want, id)
		check("after deleting " + id)
	}
}

// Forks made while other writers append to the parent each hold the
// parent's turns up to their cut, and none of what was appended after.
func testForkWhileAppending(t *testing.T, open Opener) {
	ctx := context.Background()
	const start, appends, forks = 4, 20, 10
	Create(t, open(t), ledger.WithID("p"), ledger.WithTurns(numbered("p", 0, start)...))
	writer := Load(t, open(t), "p")
	forker, reader := open(t), open(t)
	var wg sync.WaitGroup
	errs := make(chan error, appends+2*forks)
	wg.Add(2)
	go func() {
		defer wg.Done()
		for _, turn := range numbered("grows", start, appends) {
			if err := writer.Append(turn.Role, turn.Artifacts...); err != nil {
				errs <- fmt.Errorf("append: %w", err)
				return
			}
		}
	}()
	made := make([]*ledger.StoredThread, 0, 2*forks)
	go func() {
		defer wg.Done()
		for i := range forks {
			// At a cut fixed before the appends, and at the length the
			// parent had a moment ago, which it may have passed since.
			for j, at := range []int{start, -1} {
				if at < 0 {
					st, err := reader.Load(ctx, "p")
					if err != nil {
						errs <- err
						return
					}
					at = st.Len() &^ 1 // after an assistant turn
					st.Close()
				}
				f, err := ledger.Fork(ctx, forker, "p", at, ledger.WithForkID(fmt.Sprintf("f%d.%d", i, j)))
				if err != nil {
					errs <- fmt.Errorf("fork at %d: %w", at, err)
					return
				}
				made = append(made, f)
			}
		}
	}()
	wg.Wait()
	close(errs)
	var all []error
	for err := range errs {
		all = append(all, err)
	}
	if err := errors.Join(all...); err != nil {
		t.Fatal(err)
	}
	parent := Load(t, open(t), "p").Turns()
	if len(parent) != start+appends {
		t.Fatalf("the parent has %d turns, want %d", len(parent), start+appends)
	}
	o := open(t)
	for _, f := range made {
		f.Close()
		at := f.Len()
		SameJSON(t, f.ID()+" as made", f.Turns(), parent[:at])
		SameJSON(t, f.ID()+" reloaded", Load(t, o, f.ID()).Turns(), parent[:at])
	}
}

// Forks of forks made while another instance deletes the forks they are
// cut from: each fork either fails with ErrNotFound (its parent went
// first) or is made whole, and stays whole once its parent is gone.
func testForkWhileDeleting(t *testing.T, open Opener) {
	ctx := context.Background()
	const rounds = 10
	parent := Create(t, open(t), ledger.WithID("p"), ledger.WithTurns(numbered("p", 0, 6)...)).Turns()
	forker, deleter := open(t), open(t)
	made := make(chan string, rounds)
	var wg sync.WaitGroup
	var forkErr, deleteErr error
	var kept []*ledger.StoredThread
	wg.Add(2)
	go func() {
		defer wg.Done()
		defer close(made)
		for i := range rounds {
			id := fmt.Sprintf("f%d", i)
			f, err := ledger.Fork(ctx, forker, "p", 6, ledger.WithForkID(id))
			if err != nil {
				forkErr = err
				return
			}
			f.Close()
			made <- id
			// Races the delete of id.
			ff, err := ledger.Fork(ctx, forker, id, 4, ledger.WithForkID(id+".f"))
			if errors.Is(err, ledger.ErrNotFound) {
				continue
			}
			if err != nil {
				forkErr = err
				return
			}
			kept = append(kept, ff)
		}
	}()
	go func() {
		defer wg.Done()
		for id := range made {
			if err := deleter.Delete(ctx, id); err != nil && deleteErr == nil {
				deleteErr = err
			}
		}
	}()
	wg.Wait()
	if err := errors.Join(forkErr, deleteErr); err != nil {
		t.Fatal(err)
	}
	o := open(t)
	for _, ff := range kept {
		ff.Close()
		SameJSON(t, ff.ID()+" as made", ff.Turns(), parent[:4])
		SameJSON(t, ff.ID()+" reloaded", Load(t, o, ff.ID()).Turns(), parent[:4])
	}
	n := 0
	for info, err := range o.List(ctx) {
		if err != nil {
			t.Fatalf("list: %v", err)
		}
		n++
		if info.ID != "p" && info.Turns != 4 {
			t.Fatalf("listed %s with %d turns", info.ID, info.Turns)
		}
	}
	if n != 1+len(kept) {
		t.Fatalf("listed %d threads, want the parent and %d forks", n, len(kept))
	}
	t.Logf("%d of %d forks of forks were made before the delete", len(kept), rounds)
}
