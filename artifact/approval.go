package artifact

// The kinds of the approval records.
const (
	KindPending  = "pending"
	KindDecision = "decision"
)

// Pending records, in a tool turn, that a tool call waits for a person to
// approve it. It is the only place a pending approval lives: a thread whose
// last answer has a Pending without a Decision cannot take another turn
// until it is resumed. Providers do not send it to the model.
type Pending struct {
	ToolCallID string `json:"tool_call_id"`
	Name       string `json:"name"`
	// Arguments are the call's arguments as the model sent them.
	Arguments string `json:"arguments"`
	// Reason says why the call needs approval.
	Reason string `json:"reason,omitempty"`
}

// Decision records what a person decided about a Pending call. Appending
// it is the claim that makes an approved call run once: the turn holding
// it is committed before the call runs. Providers do not send it to the
// model; a denied call's error result is what the model reads.
type Decision struct {
	ToolCallID string `json:"tool_call_id"`
	// Name is the tool, filled in from the pending call.
	Name     string `json:"name,omitempty"`
	Approved bool   `json:"approved"`
	// Arguments, when set on an approved call, replace the model's; they
	// are validated against the tool's schema again.
	Arguments string `json:"arguments,omitempty"`
	// Reason is why: for a denial, it is shown to the model.
	Reason string `json:"reason,omitempty"`
	// By names who decided, for the record.
	By string `json:"by,omitempty"`
}

// Kind returns "pending".
func (Pending) Kind() string { return KindPending }

// Kind returns "decision".
func (Decision) Kind() string { return KindDecision }
