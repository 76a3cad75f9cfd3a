package eval

import (
	"context"
	"errors"
	"fmt"
	"iter"

	"github.com/lodeworks/lode/ledger"
)

// Start makes the thread a case starts from, a new one for each run; an
// error fails the case with it. FromFork and FromState make one.
type Start func(ctx context.Context) (ledger.State, error)

// FromFork starts a case from a fork point of a thread recorded in store:
// the thread's first at turns, cut as ledger.Fork cuts them (the same
// refusals, matching ledger.ErrForkPoint: a cut past the end, or between
// a tool call and its result, naming the turn to cut at instead), with
// the metadata a fork keeps. It is the counterfactual: what the agent
// does from there with another answer, another prompt or another model.
//
// The fork is made in memory: store is only read (Load), never written,
// so a case may start from a production ledger. A missing thread fails
// the case with ledger.ErrNotFound.
func FromFork(store ledger.Store, id string, at int) Start {
	return func(ctx context.Context) (ledger.State, error) {
		return forkInMemory(ctx, store.Load, id, at)
	}
}

// FromState is FromFork on a thread in hand (a ledger.Thread, a thread a
// test recorded): each run starts from a copy of its first at turns, and
// st is not changed.
func FromState(st ledger.State, at int) Start {
	return func(ctx context.Context) (ledger.State, error) {
		load := func(context.Context, string) (*ledger.StoredThread, error) {
			snap := ledger.Snapshot{Version: int64(len(st.Turns())), Turns: st.Turns()}
			if m, ok := st.(interface{ AllMetadata() map[string]string }); ok {
				snap.Metadata = m.AllMetadata()
			}
			return ledger.NewStoredThread(st.ID(), snap, readOnly{}, nil), nil
		}
		return forkInMemory(ctx, load, st.ID(), at)
	}
}

// forkInMemory runs ledger.Fork on a store that reads the parent with load
// and keeps the fork in memory, so the cut and what the fork keeps are
// ledger.Fork's own.
func forkInMemory(ctx context.Context, load func(context.Context, string) (*ledger.StoredThread, error), id string, at int) (ledger.State, error) {
	s := &memoryFork{load: load}
	f, err := ledger.Fork(ctx, s, id, at)
	if err != nil {
		return nil, fmt.Errorf("eval: from: %w", err)
	}
	f.Close()
	return s.made, nil
}

// errReadOnly is what a memoryFork answers to anything but what Fork
// asks of it.
var errReadOnly = errors.New("eval: the recorded thread is only read")

// memoryFork is the ledger.Store ledger.Fork runs on for a case: Load
// reads the recorded thread, Create makes the fork as a ledger.Thread in
// memory.
type memoryFork struct {
	load func(context.Context, string) (*ledger.StoredThread, error)
	made *ledger.Thread
}

func (s *memoryFork) Load(ctx context.Context, id string) (*ledger.StoredThread, error) {
	return s.load(ctx, id)
}

func (s *memoryFork) Create(_ context.Context, opts ...ledger.ThreadOption) (*ledger.StoredThread, error) {
	s.made = ledger.NewThread(opts...)
	snap := ledger.Snapshot{Version: int64(s.made.Len()), Turns: s.made.Turns(), Metadata: s.made.AllMetadata()}
	return ledger.NewStoredThread(s.made.ID(), snap, readOnly{}, nil), nil
}

func (s *memoryFork) List(context.Context) iter.Seq2[ledger.ThreadInfo, error] {
	return func(func(ledger.ThreadInfo, error) bool) {}
}

func (s *memoryFork) Delete(context.Context, string) error { return errReadOnly }

func (s *memoryFork) Close() error { return nil }

// readOnly is the journal of a thread Fork reads or returns here: never
// written.
type readOnly struct{}

func (readOnly) Commit(context.Context, ledger.Record) error { return errReadOnly }
func (readOnly) Read(context.Context) (ledger.Snapshot, error) {
	return ledger.Snapshot{}, errReadOnly
}
func (readOnly) Close() error { return nil }
