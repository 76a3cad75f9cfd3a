package ledger

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"strconv"
	"strings"

	"github.com/lodeworks/lode/artifact"
)

// The metadata keys a fork links back to its parent with.
const (
	// ForkedFromKey holds the ID of the thread a fork was made from.
	ForkedFromKey = "lode.forked_from"
	// ForkedAtKey holds, in decimal, how many of the parent's turns the
	// fork kept: the fork's first new turn is the parent's turn at that
	// index.
	ForkedAtKey = "lode.forked_at"
)

// ErrForkPoint is what Fork returns, wrapped in a message naming the
// reason, for a cut it refuses: out of range, or inside a turn of work
// (a tool call kept without its result).
var ErrForkPoint = errors.New("ledger: cannot fork there")

// Metadata that other packages keep in a thread and that a fork trims by
// what it keeps. The ledger knows them by their keys (it imports nothing
// under x/); the owning packages' tests pin the keys.
const (
	// activationsKey is x/tool/toolsearch's MetaKey: a JSON array of
	// {"tool", "at"}, where at is the index of the turn that loaded it.
	activationsKey = "lode.tools.activated"
	// childPrefix is x/agent's MetaChildPrefix, followed by a call ID.
	childPrefix = "lode.agent.child."
	// awaitingKey is x/agent's MetaAwaiting: a paused child's calls.
	awaitingKey = "lode.agent.awaiting"
	// stagedPrefix is x/temporal's staged results, by call ID.
	stagedPrefix = "lode.temporal.staged."
)

// ForkOption configures Fork.
type ForkOption func(*forkConfig)

type forkConfig struct{ id string }

// WithForkID names the fork instead of giving it a random ID ("" keeps
// the random one); an ID already taken fails with ErrConflict.
func WithForkID(id string) ForkOption { return func(c *forkConfig) { c.id = id } }

// Fork makes a new thread of the first at turns of the thread id in
// store, and returns it open. The parent is not changed.
//
// The fork keeps those turns as they were (roles, times, artifacts) and
// the parent's metadata, with ForkedFromKey and ForkedAtKey set to the
// parent and at, and without what belongs to the parent's later turns or
// to the parent alone:
//
//   - the lease (LeaseKey), a paused child's awaiting calls and a
//     Temporal turn's staged results;
//   - tool-search activations made at or after the cut, and the links to
//     child threads (x/agent) of calls after the cut; child threads of
//     kept calls stay linked, and are not run again;
//   - spend counters are never copied: they are a Counter's, not the
//     thread's.
//
// Labels (LabelKeyPrefix) are kept: they only narrow what the fork may
// do, and its kept turns are what the model has read.
//
// The cut must be where a turn may start: 0 <= at <= the parent's length,
// every tool call in the kept turns answered in them (so the fork inherits
// no pending approval and runs no kept call again). Any other cut fails
// with ErrForkPoint, naming the turn to cut at instead; a missing parent
// fails with ErrNotFound.
//
// Summaries (artifact.Summary) need no trimming: a summary is a turn
// stored after the turns it stands for, so one that covers turns at or
// after the cut is itself after the cut, and the kept ones are those the
// parent's requests used up to the cut: the fork's history, and so the
// request a history policy builds from it, is the parent's at the cut.
//
// Fork asks a store that is a Forker to make the fork; any other Store
// gets it through its contract (Load, then Create with the kept turns),
// so every Store has it. Either way a crash leaves no fork or a whole one.
// A Forker can share the kept turns with the parent instead of copying
// them; see BENCHMARKS.md for what each store does and what it costs.
func Fork(ctx context.Context, store Store, id string, at int, opts ...ForkOption) (*StoredThread, error) {
	var c forkConfig
	for _, o := range opts {
		o(&c)
	}
	if f, ok := store.(Forker); ok {
		req := ForkRequest{Parent: id, At: at, ID: c.id}
		if req.ID == "" {
			req.ID = NewID()
		}
		t, err := f.Fork(ctx, req)
		if err != nil {
			return nil, fmt.Errorf("ledger: fork %s at %d: %w", id, at, bare{err})
		}
		return t, nil
	}
	parent, err := store.Load(ctx, id)
	if err != nil {
		return nil, fmt.Errorf("ledger: fork %s: %w", id, bare{err})
	}
	turns := parent.Turns()
	meta := parent.AllMetadata()
	parent.Close()
	if at >= 0 && at <= len(turns) {
		turns = turns[:at]
	}
	meta, err = ForkRequest{Parent: id, At: at}.Plan(turns, parent.Len(), meta)
	if err != nil {
		return nil, fmt.Errorf("ledger: fork %s at %d: %w", id, at, err)
	}
	copts := []ThreadOption{WithTurns(turns...), WithMetadata(meta)}
	if c.id != "" {
		copts = append(copts, WithID(c.id))
	}
	t, err := store.Create(ctx, copts...)
	if err != nil {
		return nil, fmt.Errorf("ledger: fork %s at %d: %w", id, at, bare{err})
	}
	return t, nil
}

// Forker is a Store that makes forks itself, so that a fork need not copy
// the turns it keeps: a store whose storage can point at the parent's
// turns (they never change once appended) shares them. Fork uses it when
// the store has one.
//
// What a fork keeps and drops stays the ledger's: the store reads the
// parent and hands it to ForkRequest.Plan, which checks the cut and
// returns the fork's metadata.
type Forker interface {
	// Fork makes the thread req.ID of the first req.At turns of the
	// thread req.Parent and returns it open: it reads the parent's length,
	// its first req.At turns (when req.At is within the length) and its
	// metadata, calls req.Plan with them, and creates the fork with those
	// turns and the metadata Plan returns, or nothing when Plan fails,
	// returning Plan's error as it is. The fork is made whole or not at
	// all, whatever the crash. A missing parent fails with ErrNotFound, a
	// taken req.ID with ErrConflict, an invalid one with ErrInvalidID.
	//
	// Appends to the parent after the fork, and its deletion, must not
	// change the fork: what the fork shares the store keeps for it.
	Fork(ctx context.Context, req ForkRequest) (*StoredThread, error)
}

// ForkRequest is the fork a Forker makes: At turns of Parent, as ID (Fork
// sets it, random unless WithForkID names it).
type ForkRequest struct {
	Parent string
	At     int
	ID     string
}

// Plan checks the cut against the parent as the store read it, kept being
// its first At turns (nil when At is out of range) and length its number
// of turns, and returns the fork's metadata (see Fork): the parent's meta
// trimmed, and linked back to Parent at At. A cut Fork refuses fails
// with ErrForkPoint.
func (r ForkRequest) Plan(kept []Turn, length int, meta map[string]string) (map[string]string, error) {
	if err := forkCut(kept, length, r.At); err != nil {
		return nil, err
	}
	return forkMetadata(meta, kept, r.Parent, r.At)
}

// forkCut checks the cut at at of a thread of length turns, whose first
// at turns are kept.
func forkCut(kept []Turn, length, at int) error {
	if at < 0 || at > length {
		return fmt.Errorf("%w: the thread has %d turns; keep 0 to %d", bare{ErrForkPoint}, length, length)
	}
	if len(kept) != at {
		return fmt.Errorf("%d kept turns for a cut at %d: %w", len(kept), at, bare{ErrCorrupt})
	}
	if open, _ := ScanCalls(kept); len(open) > 0 {
		c := open[0]
		return fmt.Errorf("%w: call %s (%s) of turn %d has no result before turn %d; fork at %d or after its result", bare{ErrForkPoint}, c.Call.ID, c.Call.Name, c.Turn, at, c.Turn)
	}
	return nil
}

// forkMetadata returns the fork's metadata: the parent's meta, trimmed to
// what the kept turns brought, linked back to parent at the cut.
func forkMetadata(meta map[string]string, kept []Turn, parent string, at int) (map[string]string, error) {
	out := maps.Clone(meta)
	if out == nil {
		out = map[string]string{}
	}
	delete(out, LeaseKey)
	delete(out, awaitingKey)
	var calls map[string]bool
	for k := range out {
		switch {
		case strings.HasPrefix(k, stagedPrefix):
			delete(out, k)
		case strings.HasPrefix(k, childPrefix):
			if calls == nil {
				calls = keptCalls(kept)
			}
			if !calls[strings.TrimPrefix(k, childPrefix)] {
				delete(out, k)
			}
		}
	}
	if raw, ok := out[activationsKey]; ok {
		v, err := trimActivations(raw, at)
		if err != nil {
			return nil, err
		}
		if v == "" {
			delete(out, activationsKey)
		} else {
			out[activationsKey] = v
		}
	}
	out[ForkedFromKey] = parent
	out[ForkedAtKey] = strconv.Itoa(at)
	return out, nil
}

// keptCalls returns the IDs of the tool calls the kept turns make.
func keptCalls(kept []Turn) map[string]bool {
	ids := map[string]bool{}
	for _, t := range kept {
		for _, a := range t.Artifacts {
			if c, ok := a.(artifact.ToolCall); ok {
				ids[c.ID] = true
			}
		}
	}
	return ids
}

// trimActivations keeps the activations made before turn at, in their
// order and otherwise as stored; "" when none is left. A record that is
// not what toolsearch writes activates nothing there, so it is dropped.
func trimActivations(raw string, at int) (string, error) {
	var acts []map[string]json.RawMessage
	if err := json.Unmarshal([]byte(raw), &acts); err != nil {
		return "", nil
	}
	kept := acts[:0]
	for _, a := range acts {
		var n int
		if err := json.Unmarshal(a["at"], &n); err == nil && n < at {
			kept = append(kept, a)
		}
	}
	if len(kept) == 0 {
		return "", nil
	}
	b, err := json.Marshal(kept)
	if err != nil {
		return "", fmt.Errorf("encode the activations: %w", err)
	}
	return string(b), nil
}
