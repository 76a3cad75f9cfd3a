package ledger_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"

	"github.com/lodeworks/lode/ledger"
	"github.com/lodeworks/lode/ledger/file"
)

func TestLabels(t *testing.T) {
	for _, tc := range []struct {
		name string
		add  []struct {
			l    ledger.Label
			from string
		}
		want     []ledger.Label
		fromUntr string
	}{
		{name: "none"},
		{name: "one", add: []struct {
			l    ledger.Label
			from string
		}{{ledger.LabelUntrusted, "web__fetch"}}, want: []ledger.Label{ledger.LabelUntrusted}, fromUntr: "web__fetch"},
		{name: "first bringer kept", add: []struct {
			l    ledger.Label
			from string
		}{{ledger.LabelUntrusted, "web__fetch"}, {ledger.LabelPrivate, "read_file"}, {ledger.LabelUntrusted, "mail__read"}},
			want: []ledger.Label{ledger.LabelPrivate, ledger.LabelUntrusted}, fromUntr: "web__fetch"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			th := ledger.NewThread()
			for _, a := range tc.add {
				if err := ledger.AddLabel(th, a.l, a.from); err != nil {
					t.Fatal(err)
				}
			}
			if got := ledger.Labels(th); !slices.Equal(got, tc.want) {
				t.Fatalf("Labels = %v, want %v", got, tc.want)
			}
			from, ok := ledger.HasLabel(th, ledger.LabelUntrusted)
			if ok != (tc.fromUntr != "") || from != tc.fromUntr {
				t.Fatalf("HasLabel(untrusted) = %q, %v; want %q", from, ok, tc.fromUntr)
			}
		})
	}
}

func TestAddLabelRefuses(t *testing.T) {
	if err := ledger.AddLabel(nil, ledger.LabelPrivate, "x"); err == nil {
		t.Fatal("AddLabel(nil) did not fail")
	}
	if err := ledger.AddLabel(ledger.NewThread(), "", "x"); err == nil {
		t.Fatal("AddLabel of an empty label did not fail")
	}
	if _, ok := ledger.HasLabel(nil, ledger.LabelPrivate); ok {
		t.Fatal("a nil thread has a label")
	}
}

// The concurrent calls of one answer each add their label; none is lost,
// on the in-memory thread and on a stored one.
func TestAddLabelConcurrent(t *testing.T) {
	store, err := file.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	stored, err := store.Create(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, st := range []ledger.State{ledger.NewThread(), stored} {
		var wg sync.WaitGroup
		for i := range 32 {
			wg.Go(func() {
				l := ledger.LabelUntrusted
				if i%2 == 1 {
					l = ledger.LabelPrivate
				}
				if err := ledger.AddLabel(st, l, fmt.Sprintf("tool%d", i)); err != nil {
					t.Error(err)
				}
			})
		}
		wg.Wait()
		if got := ledger.Labels(st); !slices.Equal(got, ledger.KnownLabels()) {
			t.Fatalf("%T: Labels = %v, want both", st, got)
		}
	}
}

// Labels are metadata: a reload from the file store and a copy of the
// thread keep them.
func TestLabelsSurviveReloadAndCopy(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	store, err := file.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	th, err := store.Create(ctx, ledger.WithID("t1"))
	if err != nil {
		t.Fatal(err)
	}
	if err := ledger.AddLabel(th, ledger.LabelUntrusted, "web__fetch"); err != nil {
		t.Fatal(err)
	}
	store.Close()

	store, err = file.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	again, err := store.Load(ctx, "t1")
	if err != nil {
		t.Fatal(err)
	}
	if from, ok := ledger.HasLabel(again, ledger.LabelUntrusted); !ok || from != "web__fetch" {
		t.Fatalf("after reload: %q, %v", from, ok)
	}
	copied := ledger.NewThread(ledger.WithMetadata(again.AllMetadata()), ledger.WithTurns(again.Turns()...))
	if got := ledger.Labels(copied); !slices.Equal(got, []ledger.Label{ledger.LabelUntrusted}) {
		t.Fatalf("copy: %v", got)
	}
}
