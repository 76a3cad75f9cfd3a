package web

import (
	"strconv"

	"github.com/lodeworks/lode/artifact"
	"github.com/lodeworks/lode/ledger"
)

// uiMessage is the AI SDK's UIMessage, as far as lode reads and writes it.
type uiMessage struct {
	ID    string   `json:"id"`
	Role  string   `json:"role"`
	Parts []uiPart `json:"parts"`
}

// uiPart is one part of a UIMessage: text, reasoning, step-start, or a
// tool part ("tool-" + name) with its state, or a data part.
type uiPart struct {
	Type       string `json:"type"`
	Text       string `json:"text,omitempty"`
	State      string `json:"state,omitempty"`
	ToolCallID string `json:"toolCallId,omitempty"`
	Input      any    `json:"input,omitempty"`
	Output     any    `json:"output,omitempty"`
	ErrorText  string `json:"errorText,omitempty"`
	// ID and Data are a data part's ("data-approval").
	ID   string `json:"id,omitempty"`
	Data any    `json:"data,omitempty"`
}

// toUIMessages renders stored turns as the messages a browser shows: each
// user turn is a message, and the assistant and tool turns between two
// user turns make one assistant message, a step per model turn.
func toUIMessages(turns []ledger.Turn) []uiMessage {
	msgs := []uiMessage{}
	var cur *uiMessage
	calls := map[string]int{} // tool call ID -> part index in cur
	for i, t := range turns {
		switch t.Role {
		case ledger.RoleUser:
			m := uiMessage{ID: "turn-" + strconv.Itoa(i), Role: "user"}
			for _, a := range t.Artifacts {
				if x, ok := a.(artifact.Text); ok {
					m.Parts = append(m.Parts, uiPart{Type: "text", Text: x.Content, State: "done"})
				}
			}
			msgs = append(msgs, m)
			cur = nil
		case ledger.RoleAssistant:
			if cur == nil {
				msgs = append(msgs, uiMessage{ID: "turn-" + strconv.Itoa(i), Role: "assistant"})
				cur = &msgs[len(msgs)-1]
				clear(calls)
			}
			cur.Parts = append(cur.Parts, uiPart{Type: "step-start"})
			for _, a := range t.Artifacts {
				switch x := a.(type) {
				case artifact.Text:
					cur.Parts = append(cur.Parts, uiPart{Type: "text", Text: x.Content, State: "done"})
				case artifact.Reasoning:
					cur.Parts = append(cur.Parts, uiPart{Type: "reasoning", Text: x.Content, State: "done"})
				case artifact.Finish:
					if x.Reason == StoppedReason {
						cur.Parts = append(cur.Parts, uiPart{Type: "data-stopped", ID: "stopped-" + strconv.Itoa(i), Data: map[string]string{"reason": x.Reason}})
					}
				case artifact.ToolCall:
					p := uiPart{Type: "tool-" + x.Name, ToolCallID: x.ID, State: "input-available"}
					if in, ok := toolInput(x.Arguments); ok {
						p.Input = in
					} else {
						p.Input, p.State, p.ErrorText = x.Arguments, "output-error", "the model's arguments are not valid JSON"
					}
					calls[x.ID] = len(cur.Parts)
					cur.Parts = append(cur.Parts, p)
				}
			}
		case ledger.RoleTool:
			if cur == nil {
				continue
			}
			for _, a := range t.Artifacts {
				r, ok := a.(artifact.ToolResult)
				if !ok {
					continue
				}
				j, ok := calls[r.ToolCallID]
				if !ok {
					continue
				}
				p := &cur.Parts[j]
				if r.IsError {
					p.State, p.ErrorText = "output-error", r.Content
				} else if p.State == "input-available" {
					p.State, p.Output = "output-available", r.Content
				}
			}
		}
	}
	return msgs
}
