package ledger_test

import (
	"encoding/json"
	"fmt"
	"reflect"
	"runtime"
	"sync"
	"testing"
	"time"
	"unsafe"

	"github.com/lodeworks/lode/artifact"
	"github.com/lodeworks/lode/ledger"
)

func TestThreadAppendAndSnapshot(t *testing.T) {
	th := ledger.NewThread(ledger.WithClock(nil))
	if err := th.Append(ledger.RoleUser, artifact.Text{Content: "hi"}); err != nil {
		t.Fatal(err)
	}
	snap := th.Turns()
	if err := th.Append(ledger.RoleAssistant, artifact.Text{Content: "hello"}); err != nil {
		t.Fatal(err)
	}
	if len(snap) != 1 {
		t.Fatalf("snapshot grew to %d turns after a later append", len(snap))
	}
	got := th.Turns()
	want := []ledger.Turn{
		{Role: ledger.RoleUser, Artifacts: []artifact.Artifact{artifact.Text{Content: "hi"}}},
		{Role: ledger.RoleAssistant, Artifacts: []artifact.Artifact{artifact.Text{Content: "hello"}}},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("turns = %#v\nwant %#v", got, want)
	}
}

func TestAppendCopiesArtifacts(t *testing.T) {
	th := ledger.NewThread()
	arts := []artifact.Artifact{artifact.Text{Content: "a"}}
	_ = th.Append(ledger.RoleUser, arts...)
	arts[0] = artifact.Text{Content: "changed"}
	if got := th.Turns()[0].Artifacts[0]; got != (artifact.Text{Content: "a"}) {
		t.Fatalf("ledger changed with the caller's slice: %#v", got)
	}
}

func TestAppendInvalidRole(t *testing.T) {
	th := ledger.NewThread()
	if err := th.Append("robot", artifact.Text{}); err == nil {
		t.Fatal("append with role robot succeeded")
	}
	if n := th.Len(); n != 0 {
		t.Fatalf("failed append left %d turns", n)
	}
}

func TestMetadata(t *testing.T) {
	th := ledger.NewThread(ledger.WithID("t1"), ledger.WithMetadata(map[string]string{"role": "admin"}))
	if th.ID() != "t1" {
		t.Errorf("ID = %q", th.ID())
	}
	if v, ok := th.Metadata("role"); !ok || v != "admin" {
		t.Errorf("role = %q, %v", v, ok)
	}
	if _, ok := th.Metadata("missing"); ok {
		t.Error("missing key found")
	}
	_ = th.SetMetadata("tenant", "acme")
	if m := th.AllMetadata(); !reflect.DeepEqual(m, map[string]string{"role": "admin", "tenant": "acme"}) {
		t.Errorf("metadata = %v", m)
	}
	if a, b := ledger.NewThread().ID(), ledger.NewThread().ID(); a == b || len(a) != 32 {
		t.Errorf("random IDs %q and %q", a, b)
	}
}

func TestConcurrentReadersAndWriter(t *testing.T) {
	th := ledger.NewThread()
	var wg sync.WaitGroup
	for r := 0; r < 4; r++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 200; i++ {
				turns := th.Turns()
				for j, tu := range turns {
					if tu.Artifacts[0] != (artifact.Text{Content: fmt.Sprint(j)}) {
						t.Errorf("turn %d holds %#v", j, tu.Artifacts[0])
						return
					}
				}
				th.Metadata("k")
			}
		}()
	}
	for i := 0; i < 200; i++ {
		_ = th.Append(ledger.RoleUser, artifact.Text{Content: fmt.Sprint(i)})
		_ = th.SetMetadata("k", fmt.Sprint(i))
	}
	wg.Wait()
	if th.Len() != 200 {
		t.Fatalf("len = %d", th.Len())
	}
}

func TestTurnJSON(t *testing.T) {
	when := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	turn := ledger.Turn{Role: ledger.RoleTool, Time: when, Artifacts: []artifact.Artifact{
		artifact.ToolResult{ToolCallID: "1", Name: "x", Content: "ok"},
		artifact.Unknown{Type: "future", Raw: json.RawMessage(`{"kind":"future","x":1}`)},
	}}
	b, err := json.Marshal(turn)
	if err != nil {
		t.Fatal(err)
	}
	var back ledger.Turn
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(back, turn) {
		t.Fatalf("round trip:\n got %#v\nwant %#v", back, turn)
	}
	if err := json.Unmarshal([]byte(`{"role":"user","artifacts":[{"content":"no kind"}]}`), &back); err == nil {
		t.Error("turn with a kindless artifact decoded")
	}
}

// A turn that no store could encode is refused whole, and a pointer to an
// artifact is kept as its value.
func TestAppendRefusesNilArtifacts(t *testing.T) {
	cases := []struct {
		name string
		role ledger.Role
		arts []artifact.Artifact
		err  string
	}{
		{"nil", ledger.RoleTool, []artifact.Artifact{artifact.Text{}, nil}, "ledger: append: artifact 2 of 2 is nil"},
		{"typed nil", ledger.RoleTool, []artifact.Artifact{(*artifact.ToolResult)(nil)}, "ledger: append: artifact 1 of 1 is nil"},
		{"empty role", "", []artifact.Artifact{artifact.Text{}}, `ledger: append: invalid role ""`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			th := ledger.NewThread()
			if err := th.Append(c.role, c.arts...); err == nil || err.Error() != c.err {
				t.Fatalf("err = %v, want %q", err, c.err)
			}
			if th.Len() != 0 {
				t.Fatalf("a refused append left %d turns", th.Len())
			}
		})
	}
	th := ledger.NewThread()
	if err := th.Append(ledger.RoleAssistant, &artifact.ToolCall{ID: "1"}); err != nil {
		t.Fatal(err)
	}
	if got := th.Turns()[0].Artifacts[0]; got != (artifact.ToolCall{ID: "1"}) {
		t.Fatalf("stored %#v, want the ToolCall value", got)
	}
}

// Appending copies the history only when the thread doubles, so a turn
// costs the same on a long thread as on a short one: n appends to a thread
// of n turns allocate at most a few copies of the history.
func TestAppendAmortizedGrowth(t *testing.T) {
	const n = 20000
	seed := make([]ledger.Turn, n)
	for i := range seed {
		seed[i].Role = ledger.RoleUser
	}
	th := ledger.NewThread(ledger.WithID("t"), ledger.WithClock(nil), ledger.WithTurns(seed...))
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for range n {
		if err := th.Append(ledger.RoleUser); err != nil {
			t.Fatal(err)
		}
	}
	runtime.ReadMemStats(&after)
	perTurn := (after.TotalAlloc - before.TotalAlloc) / n
	if limit := 4 * uint64(unsafe.Sizeof(ledger.Turn{})); perTurn > limit {
		t.Fatalf("appending allocated %d bytes per turn on a thread of %d turns; want at most %d", perTurn, n, limit)
	}
	if got := th.Len(); got != 2*n {
		t.Fatalf("Len = %d, want %d", got, 2*n)
	}
}
