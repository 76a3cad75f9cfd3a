package loop

import (
	"context"

	"github.com/lodeworks/lode/artifact"
	"github.com/lodeworks/lode/ledger"
)

// Event is anything the loop or a handler reports while a turn runs.
type Event interface {
	EventName() string
}

// Emitter receives events.
type Emitter interface {
	Emit(ctx context.Context, ev Event)
}

// EmitterFunc adapts a function to an Emitter.
type EmitterFunc func(ctx context.Context, ev Event)

// Emit calls f.
func (f EmitterFunc) Emit(ctx context.Context, ev Event) { f(ctx, ev) }

// TurnCompleteEvent reports a whole turn. The loop emits one for each
// assistant answer; a handler emits one to have its artifacts appended to
// the ledger (x/tool's Handler emits RoleTool turns of ToolResults).
type TurnCompleteEvent struct {
	Role      ledger.Role
	Artifacts []artifact.Artifact
}

// DeltaEvent carries a stream fragment as it arrives from the provider.
type DeltaEvent struct {
	Delta artifact.Delta
}

// ErrorEvent reports the error that ended a turn.
type ErrorEvent struct {
	Err error
}

// EventName returns "turn_complete".
func (TurnCompleteEvent) EventName() string { return "turn_complete" }

// EventName returns "delta".
func (DeltaEvent) EventName() string { return "delta" }

// EventName returns "error".
func (ErrorEvent) EventName() string { return "error" }
