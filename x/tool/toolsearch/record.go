package toolsearch

import (
	"encoding/json"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/lodeworks/lode/artifact"
	"github.com/lodeworks/lode/ledger"
)

// MetaKey is the thread metadata key that holds a thread's activations:
// a JSON array of {"tool": name, "at": turn}, where turn is the number of
// turns the thread had when the tool was loaded (so the search's result is
// turn at or later), oldest first. Every store keeps metadata, so a
// reloaded, recovered or replayed thread offers what it offered before.
const MetaKey = "lode.tools.activated"

// Activation is one tool loaded on a thread.
type Activation struct {
	Tool string `json:"tool"`
	At   int    `json:"at"`
}

// parsed caches the last record decoded: a thread's record is the same
// string turn after turn, so most turns decode nothing.
type parsed struct {
	raw  string
	acts []Activation
}

// decoder decodes records, remembering the last one.
type decoder struct{ last atomic.Pointer[parsed] }

// decode reads the record under MetaKey. A record that is not what this
// package writes counts as none: it activates nothing, so a damaged record
// can only hide tools, never offer one.
func (d *decoder) decode(st ledger.State) []Activation {
	if st == nil {
		return nil
	}
	raw, ok := st.Metadata(MetaKey)
	if !ok || raw == "" {
		return nil
	}
	if p := d.last.Load(); p != nil && p.raw == raw {
		return p.acts
	}
	var acts []Activation
	if err := json.Unmarshal([]byte(raw), &acts); err != nil {
		acts = nil
	}
	d.last.Store(&parsed{raw: raw, acts: acts})
	return acts
}

func encode(acts []Activation) (string, error) {
	b, err := json.Marshal(acts)
	if err != nil {
		return "", fmt.Errorf("toolsearch: encode activations: %w", err)
	}
	return string(b), nil
}

// live returns the activations of acts still in force on a thread whose
// history is turns: those not expired (after expiry model turns, when
// expiry > 0) and not covered by a compaction summary (covered is the
// last turn any summary of the thread covers, -1 for none; dropCompacted
// false ignores it). Each expiry check reads at most the turns up to the
// expiry-th model turn after the load.
func live(acts []Activation, turns []ledger.Turn, expiry int, covered int) []Activation {
	out := acts[:0:0]
	for _, a := range acts {
		if covered >= a.At {
			continue
		}
		if expiry > 0 && answersSince(turns, a.At, expiry) >= expiry {
			continue
		}
		out = append(out, a)
	}
	return out
}

// answersSince counts the assistant turns from turn at on, up to limit.
func answersSince(turns []ledger.Turn, at, limit int) int {
	n := 0
	for i := max(at, 0); i < len(turns) && n < limit; i++ {
		if turns[i].Role == ledger.RoleAssistant {
			n++
		}
	}
	return n
}

// summaries remembers, per thread, how far its history has been read for
// compaction summaries and the last turn they cover, so that each turn
// reads only the turns appended since the last. It holds at most
// maxScans threads and starts again when full: a thread it forgot is
// read once more from its start.
type summaries struct {
	mu    sync.Mutex
	scans map[string]scan
}

const maxScans = 4096

type scan struct {
	first   *ledger.Turn // the history read: its first turn
	n       int          // how many turns were read
	covered int
}

// covered returns the last turn a summary in turns covers, -1 for none.
func (m *summaries) covered(id string, turns []ledger.Turn) int {
	if len(turns) == 0 {
		return -1
	}
	m.mu.Lock()
	sc, ok := m.scans[id]
	m.mu.Unlock()
	if !ok || sc.first != &turns[0] || sc.n > len(turns) {
		sc = scan{first: &turns[0], covered: -1}
	}
	for i := sc.n; i < len(turns); i++ {
		if turns[i].Role != ledger.RoleSystem {
			continue
		}
		for _, a := range turns[i].Artifacts {
			if s, ok := a.(artifact.Summary); ok && s.Last < i && s.Last > sc.covered {
				sc.covered = s.Last
			}
		}
	}
	sc.n = len(turns)
	m.mu.Lock()
	if m.scans == nil || len(m.scans) >= maxScans {
		m.scans = make(map[string]scan)
	}
	m.scans[id] = sc
	m.mu.Unlock()
	return sc.covered
}

// merge adds names activated at turn at to acts: a name already active
// moves to at, so that its expiry starts again.
func merge(acts []Activation, at int, names []string) []Activation {
	out := slices.DeleteFunc(slices.Clone(acts), func(a Activation) bool { return slices.Contains(names, a.Tool) })
	for _, n := range names {
		out = append(out, Activation{Tool: n, At: at})
	}
	return out
}

// Rewind drops from meta, a thread's metadata, the activations of every
// turn from turn n on, for a door that keeps only a thread's first n
// turns (a regenerated answer, an edited message): a search those turns
// made is gone from the thread, so what it loaded must not be offered to
// the turns that replace them. An activation at n or later was made by a
// search whose result is turn n or later (see MetaKey). A record with
// nothing left is removed; a damaged one is left as it is, since it
// activates nothing. Rewind reads only meta, so it also serves a door
// that builds the shorter thread anew.
func Rewind(meta map[string]string, n int) {
	raw, ok := meta[MetaKey]
	if !ok || raw == "" {
		return
	}
	var acts []Activation
	if err := json.Unmarshal([]byte(raw), &acts); err != nil {
		return
	}
	kept := slices.DeleteFunc(acts, func(a Activation) bool { return a.At >= n })
	out, err := encode(kept)
	if len(kept) == 0 || err != nil {
		// Removing the record can only hide a tool, never offer one.
		delete(meta, MetaKey)
		return
	}
	meta[MetaKey] = out
}
