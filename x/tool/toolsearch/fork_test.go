package toolsearch_test

import (
	"context"
	"testing"

	"github.com/lodeworks/lode/artifact"
	"github.com/lodeworks/lode/ledger"
	"github.com/lodeworks/lode/ledger/file"
	"github.com/lodeworks/lode/x/tool/toolsearch"
)

// ledger.Fork knows MetaKey by its value (the ledger imports nothing under
// x/): a fork keeps the activations made before its cut, and no other.
func TestForkKeepsEarlierActivations(t *testing.T) {
	s, err := file.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	st, err := s.Create(ctx, ledger.WithID("p"))
	if err != nil {
		t.Fatal(err)
	}
	for range 4 {
		if err := st.Append(ledger.RoleUser, artifact.Text{Content: "turn"}); err != nil {
			t.Fatal(err)
		}
	}
	if err := st.SetMetadata(toolsearch.MetaKey, `[{"tool":"a","at":1},{"tool":"b","at":2}]`); err != nil {
		t.Fatal(err)
	}
	st.Close()
	for at, want := range map[int]string{1: "", 2: `[{"at":1,"tool":"a"}]`, 3: `[{"at":1,"tool":"a"},{"at":2,"tool":"b"}]`} {
		f, err := ledger.Fork(ctx, s, "p", at)
		if err != nil {
			t.Fatal(err)
		}
		got, _ := f.Metadata(toolsearch.MetaKey)
		f.Close()
		if got != want {
			t.Errorf("fork at %d: activations %q, want %q", at, got, want)
		}
	}
}
