package ledger_test

import (
	"context"
	"errors"
	"maps"
	"strings"
	"testing"

	"github.com/lodeworks/lode/artifact"
	"github.com/lodeworks/lode/ledger"
	"github.com/lodeworks/lode/ledger/file"
)

// forker is a Store that makes forks itself, as a sharing store does:
// it records the request and makes the fork from what Plan returns.
type forker struct {
	ledger.Store
	reqs []ledger.ForkRequest
}

func (f *forker) Fork(ctx context.Context, req ledger.ForkRequest) (*ledger.StoredThread, error) {
	f.reqs = append(f.reqs, req)
	p, err := f.Load(ctx, req.Parent)
	if err != nil {
		return nil, err
	}
	defer p.Close()
	var kept []ledger.Turn
	if req.At >= 0 && req.At <= p.Len() {
		kept = p.Turns()[:req.At]
	}
	meta, err := req.Plan(kept, p.Len(), p.AllMetadata())
	if err != nil {
		return nil, err
	}
	return f.Create(ctx, ledger.WithID(req.ID), ledger.WithTurns(kept...), ledger.WithMetadata(meta))
}

// Fork hands a Forker the parent, the cut and the fork's ID, random when
// not named, and passes its refusals on as they are.
func TestForkUsesAForker(t *testing.T) {
	ctx := context.Background()
	fs, err := file.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer fs.Close()
	s := &forker{Store: fs}
	p, err := s.Create(ctx, ledger.WithID("p"), ledger.WithMetadata(map[string]string{ledger.LeaseKey: "x", "tenant": "acme"}))
	if err != nil {
		t.Fatal(err)
	}
	p.Append(ledger.RoleUser, artifact.Text{Content: "q"})
	p.Append(ledger.RoleAssistant, artifact.ToolCall{ID: "c", Name: "look", Arguments: "{}"})
	f, err := ledger.Fork(ctx, s, "p", 1, ledger.WithForkID("f"))
	if err != nil {
		t.Fatal(err)
	}
	if want := map[string]string{"tenant": "acme", ledger.ForkedFromKey: "p", ledger.ForkedAtKey: "1"}; !maps.Equal(f.AllMetadata(), want) || f.Len() != 1 {
		t.Fatalf("fork: %d turns, %v", f.Len(), f.AllMetadata())
	}
	g, err := ledger.Fork(ctx, s, "p", 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(s.reqs) != 2 || s.reqs[0] != (ledger.ForkRequest{Parent: "p", At: 1, ID: "f"}) || s.reqs[1].ID != g.ID() || ledger.CheckID(g.ID()) != nil {
		t.Fatalf("requests %+v, second fork %q", s.reqs, g.ID())
	}
	_, err = ledger.Fork(ctx, s, "p", 2)
	if !errors.Is(err, ledger.ErrForkPoint) || !strings.Contains(err.Error(), "call c (look) of turn 1 has no result") {
		t.Fatalf("fork inside a call: %v", err)
	}
}

// Plan refuses what Fork refuses, whoever calls it, and a store that
// hands it other than the first At turns.
func TestForkRequestPlan(t *testing.T) {
	turns := []ledger.Turn{
		{Role: ledger.RoleUser, Artifacts: []artifact.Artifact{artifact.Text{Content: "q"}}},
		{Role: ledger.RoleAssistant, Artifacts: []artifact.Artifact{artifact.Text{Content: "a"}}},
	}
	for _, c := range []struct {
		name   string
		at     int
		kept   []ledger.Turn
		target error
		msg    string
	}{
		{"before the start", -1, nil, ledger.ErrForkPoint, "the thread has 2 turns; keep 0 to 2"},
		{"past the end", 3, nil, ledger.ErrForkPoint, "the thread has 2 turns; keep 0 to 2"},
		{"too few kept", 2, turns[:1], ledger.ErrCorrupt, "1 kept turns for a cut at 2"},
		{"too many kept", 0, turns, ledger.ErrCorrupt, "2 kept turns for a cut at 0"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := ledger.ForkRequest{Parent: "p", At: c.at, ID: "f"}.Plan(c.kept, len(turns), nil)
			if !errors.Is(err, c.target) || !strings.Contains(err.Error(), c.msg) {
				t.Fatalf("err = %v, want %v saying %q", err, c.target, c.msg)
			}
		})
	}
	meta, err := ledger.ForkRequest{Parent: "p", At: 2, ID: "f"}.Plan(turns, 2, nil)
	if err != nil || !maps.Equal(meta, map[string]string{ledger.ForkedFromKey: "p", ledger.ForkedAtKey: "2"}) {
		t.Fatalf("plan: %v, %v", meta, err)
	}
}
