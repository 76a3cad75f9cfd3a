package ledger

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/lodeworks/lode/artifact"
)

// Role says who produced a turn.
type Role string

// The roles of a conversation.
const (
	RoleSystem    Role = "system"
	RoleUser      Role = "user"
	RoleAssistant Role = "assistant"
	RoleTool      Role = "tool"
)

// Valid reports whether r is one of the four roles.
func (r Role) Valid() bool {
	switch r {
	case RoleSystem, RoleUser, RoleAssistant, RoleTool:
		return true
	}
	return false
}

// Turn is one entry of a conversation: who spoke and what they produced.
// Turns handed out by a State are shared; treat them as read-only.
type Turn struct {
	Role      Role
	Artifacts []artifact.Artifact
	// Time is when the turn was appended; zero when unknown.
	Time time.Time
}

type turnJSON struct {
	Role      Role          `json:"role"`
	Artifacts artifact.List `json:"artifacts"`
	Time      time.Time     `json:"time,omitzero"`
}

// MarshalJSON encodes the turn with each artifact tagged by kind.
func (t Turn) MarshalJSON() ([]byte, error) {
	return json.Marshal(turnJSON{Role: t.Role, Artifacts: t.Artifacts, Time: t.Time})
}

// UnmarshalJSON decodes a turn written by MarshalJSON; artifacts of unknown
// kinds are kept as artifact.Unknown.
func (t *Turn) UnmarshalJSON(data []byte) error {
	var j turnJSON
	if err := json.Unmarshal(data, &j); err != nil {
		return fmt.Errorf("ledger: turn: %w", err)
	}
	*t = Turn{Role: j.Role, Artifacts: j.Artifacts, Time: j.Time}
	return nil
}

// State is a conversation thread: its history and its metadata.
type State interface {
	// ID identifies the thread.
	ID() string
	// Turns returns the history in order. The slice is a snapshot: later
	// appends do not change it. Callers must not modify it.
	Turns() []Turn
	// Append adds one turn. A durable State persists it before returning.
	Append(role Role, artifacts ...artifact.Artifact) error
	// Metadata returns the value stored under key.
	Metadata(key string) (string, bool)
	// SetMetadata stores value under key.
	SetMetadata(key, value string) error
}

// Thread is the in-memory State.
type Thread struct {
	id    string
	now   func() time.Time
	mu    sync.RWMutex
	turns []Turn
	meta  map[string]string
	open  openCalls // under mu
}

// ThreadOption configures a Thread.
type ThreadOption func(*Thread)

// WithID sets the thread's ID instead of a random one.
func WithID(id string) ThreadOption { return func(t *Thread) { t.id = id } }

// WithMetadata seeds the thread's metadata (copied).
func WithMetadata(m map[string]string) ThreadOption {
	return func(t *Thread) { t.meta = maps.Clone(m) }
}

// WithTurns seeds the thread's history, as when it is loaded from a store.
func WithTurns(turns ...Turn) ThreadOption {
	return func(t *Thread) { t.turns = append([]Turn(nil), turns...) }
}

// WithClock sets the clock that stamps appended turns; nil leaves turns
// unstamped, which keeps a thread deterministic in tests.
func WithClock(now func() time.Time) ThreadOption { return func(t *Thread) { t.now = now } }

// NewThread returns an empty in-memory thread with a random ID.
func NewThread(opts ...ThreadOption) *Thread {
	t := &Thread{now: time.Now}
	for _, o := range opts {
		o(t)
	}
	if t.id == "" {
		t.id = NewID()
	}
	t.open = trackAll(t.turns)
	return t
}

// NewID returns a random 128-bit identifier in hex.
func NewID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// ID returns the thread's identifier.
func (t *Thread) ID() string { return t.id }

// Turns returns the history; see State.
func (t *Thread) Turns() []Turn {
	t.mu.RLock()
	defer t.mu.RUnlock()
	return t.turns[:len(t.turns):len(t.turns)]
}

// Len returns the number of turns.
func (t *Thread) Len() int {
	t.mu.RLock()
	defer t.mu.RUnlock()
	return len(t.turns)
}

// Append adds a turn. It fails, adding nothing, for a role that is not one
// of the four and for a nil artifact, which no store could encode. A
// pointer to an artifact is stored as the value it points to (see
// artifact.Normalize).
func (t *Thread) Append(role Role, artifacts ...artifact.Artifact) error {
	if !role.Valid() {
		return fmt.Errorf("ledger: append: invalid role %q", role)
	}
	arts, err := ownArtifacts(artifacts)
	if err != nil {
		return fmt.Errorf("ledger: append: %w", err)
	}
	turn := Turn{Role: role, Artifacts: arts}
	if t.now != nil {
		turn.Time = t.now()
	}
	t.mu.Lock()
	t.open.add(len(t.turns), turn)
	if len(t.turns) == cap(t.turns) {
		// Doubling copies each turn about once in its life, where append's
		// gentler growth on long slices copies it several times.
		t.turns = slices.Grow(t.turns, max(len(t.turns), 8))
	}
	t.turns = append(t.turns, turn)
	t.mu.Unlock()
	return nil
}

// OpenCalls returns the tool calls still waiting for a result; see
// CallTracker.
func (t *Thread) OpenCalls() []OpenCall {
	t.mu.RLock()
	defer t.mu.RUnlock()
	return t.open.clone()
}

// LateResults returns the results stored after a later non-tool turn than
// their call; see LateTracker.
func (t *Thread) LateResults() []LateResult {
	t.mu.RLock()
	defer t.mu.RUnlock()
	return t.open.lateClone()
}

// ownArtifacts copies a turn's artifacts as every State stores them:
// pointers as the values they point to, nil refused.
func ownArtifacts(artifacts []artifact.Artifact) ([]artifact.Artifact, error) {
	arts := slices.Clip(slices.Clone(artifacts))
	for i, a := range arts {
		if arts[i] = artifact.Normalize(a); arts[i] == nil {
			return nil, fmt.Errorf("artifact %d of %d is nil", i+1, len(arts))
		}
	}
	return arts, nil
}

// Metadata returns the value stored under key.
func (t *Thread) Metadata(key string) (string, bool) {
	t.mu.RLock()
	defer t.mu.RUnlock()
	v, ok := t.meta[key]
	return v, ok
}

// SetMetadata stores value under key.
func (t *Thread) SetMetadata(key, value string) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.meta == nil {
		t.meta = make(map[string]string)
	}
	t.meta[key] = value
	return nil
}

// AllMetadata returns a copy of the thread's metadata.
func (t *Thread) AllMetadata() map[string]string {
	t.mu.RLock()
	defer t.mu.RUnlock()
	return maps.Clone(t.meta)
}
