package toolsearch

import (
	"encoding/json"
	"fmt"
	"slices"
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
// expiry > 0) and, when dropCompacted, not covered by a compaction
// summary stored after them. The scan reads only the turns since the
// oldest activation, so its cost follows what was loaded, not how long
// the thread is.
func live(acts []Activation, turns []ledger.Turn, expiry int, dropCompacted bool) []Activation {
	if len(acts) == 0 || (expiry <= 0 && !dropCompacted) {
		return acts
	}
	from := len(turns)
	for _, a := range acts {
		from = min(from, max(a.At, 0))
	}
	// assistants[i] counts the assistant turns in turns[from:from+i].
	var (
		assistants = make([]int32, len(turns)-from+1)
		covered    = -1 // the last turn any summary after from covers
	)
	for i := from; i < len(turns); i++ {
		t := &turns[i]
		n := assistants[i-from]
		switch t.Role {
		case ledger.RoleAssistant:
			n++
		case ledger.RoleSystem:
			if dropCompacted {
				for _, a := range t.Artifacts {
					if s, ok := a.(artifact.Summary); ok && s.Last < i && s.Last > covered {
						covered = s.Last
					}
				}
			}
		}
		assistants[i-from+1] = n
	}
	out := acts[:0:0]
	total := assistants[len(assistants)-1]
	for _, a := range acts {
		at := min(max(a.At, from), len(turns))
		if expiry > 0 && int(total-assistants[at-from]) >= expiry {
			continue
		}
		if dropCompacted && covered >= a.At {
			continue
		}
		out = append(out, a)
	}
	return out
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
