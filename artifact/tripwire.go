package artifact

// KindTripwire is the kind of a Tripwire.
const KindTripwire = "tripwire"

// The checkpoints a Tripwire's At names.
const (
	AtInput  = "input"  // the user's message, before the model saw it
	AtCall   = "call"   // a tool call's arguments, before it ran
	AtResult = "result" // a tool's result, before the model read it
	AtOutput = "output" // the model's answer, before a person saw it
)

// Tripwire records, in the turn where it happened, that a guard stopped a
// turn. What the guard stopped is not in the ledger: a stopped input is
// left out of every later request, a stopped result's content is replaced
// by an error result, and a stopped answer is stored as this record alone.
// Providers never send it to the model.
type Tripwire struct {
	// Guard names the guard that tripped.
	Guard string `json:"guard"`
	// At is where: AtInput, AtCall, AtResult or AtOutput.
	At string `json:"at"`
	// Reason says why, in words fit for the person whose turn it stopped.
	Reason string `json:"reason"`
	// ToolCallID is the call a call or result guard stopped.
	ToolCallID string `json:"tool_call_id,omitempty"`
}

// Kind returns "tripwire".
func (Tripwire) Kind() string { return KindTripwire }
