package ledgertest

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/lodeworks/lode/ledger"
)

// Damage breaks what a store keeps of thread id the way a fault of its
// medium would (a garbled file, a lost row), so that Load must refuse it.
type Damage func(t testing.TB, id string)

// RunDamaged checks that damage is reported, never hidden: Load of a
// damaged thread fails with ledger.ErrCorrupt naming it, and List yields
// its ID, in its place, with such an error, and goes on with the healthy
// threads around it. newStorage returns an Opener over fresh, empty
// storage and the Damage for that storage; it is called once.
func RunDamaged(t *testing.T, newStorage func(t testing.TB) (Opener, Damage)) {
	open, damage := newStorage(t)
	ctx := context.Background()
	s := open(t)
	for i, id := range []string{"a", "b", "c"} {
		st := Create(t, s, ledger.WithID(id))
		for range i + 1 {
			Append(t, st, ledger.RoleUser, Text(id))
		}
	}
	damage(t, "b")

	fresh := open(t)
	_, err := fresh.Load(ctx, "b")
	wantErr(t, "load b", err, ledger.ErrCorrupt, "b")
	for _, id := range []string{"a", "c"} {
		Load(t, fresh, id)
	}
	var listed []string
	for info, err := range fresh.List(ctx) {
		if info.ID == "b" {
			wantErr(t, "list b", err, ledger.ErrCorrupt, "b")
			listed = append(listed, "b!")
			continue
		}
		if err != nil {
			t.Fatalf("list %s: %v", info.ID, err)
		}
		listed = append(listed, fmt.Sprintf("%s=%d", info.ID, info.Turns))
	}
	if got := strings.Join(listed, ","); got != "a=1,b!,c=3" {
		t.Fatalf("listed %s, want a=1,b!,c=3", got)
	}
	// Breaking at the damaged thread stops the listing there.
	n := 0
	for info := range fresh.List(ctx) {
		n++
		if info.ID == "b" {
			break
		}
	}
	if n != 2 {
		t.Fatalf("List yielded %d threads up to the break at b, want 2", n)
	}
}
