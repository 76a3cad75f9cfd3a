package fallback

import (
	"github.com/lodeworks/lode/artifact"
)

// Status is where an attempt stands in an AttemptEvent.
type Status string

// The statuses of an attempt.
const (
	// StatusStarted: the request is being sent.
	StatusStarted Status = "started"
	// StatusAnswered: the attempt's answer was streamed to the end.
	StatusAnswered Status = "answered"
	// StatusFailed: the attempt failed; FellBack says whether another
	// provider was tried for it.
	StatusFailed Status = "failed"
	// StatusLost: a hedged attempt that the other one beat to its first
	// artifact; it was cancelled and drained.
	StatusLost Status = "lost"
	// StatusStopped: the caller stopped reading, or its context ended,
	// while the attempt was still running.
	StatusStopped Status = "stopped"
)

// AttemptEvent tells a loop's observers (provider.Notify) about one attempt:
// once when it starts and once when it ends. It is never stored.
type AttemptEvent struct {
	// Attempt counts the attempts of one invocation from 0; Provider is
	// the index, in New's list, of the provider it went to, and Model that
	// provider's Model() where it has one.
	Attempt, Provider int
	Model             string
	// Hedge is set for an attempt started by the hedge delay while another
	// was in flight.
	Hedge  bool
	Status Status
	// Err, for StatusFailed, is the attempt's error and Class its class;
	// FellBack says whether it moved on to another provider.
	Err      error
	Class    Class
	FellBack bool
	// Usage is what the attempt reported, summed, once it ended; nil when
	// it reported none.
	Usage *artifact.Usage
}

// EventName returns "fallback_attempt".
func (AttemptEvent) EventName() string { return "fallback_attempt" }

// UIData names the event and its data for a conduit that shows events of
// packages it does not know (x/conduit/web's DataEvent).
func (e AttemptEvent) UIData() (string, any) {
	d := map[string]any{
		"attempt": e.Attempt, "provider": e.Provider, "model": e.Model,
		"hedge": e.Hedge, "status": string(e.Status), "fellBack": e.FellBack,
	}
	if e.Err != nil {
		d["class"] = e.Class.String()
	}
	if e.Usage != nil {
		d["inputTokens"], d["outputTokens"] = e.Usage.InputTokens, e.Usage.OutputTokens
	}
	return "fallback", d
}
