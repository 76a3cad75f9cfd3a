package web

import (
	"encoding/json"
	"strconv"

	"github.com/lodeworks/lode/artifact"
	"github.com/lodeworks/lode/ledger"
	"github.com/lodeworks/lode/x/memory"
)

// uiMessage is the AI SDK's UIMessage, as far as lode reads and writes it.
type uiMessage struct {
	ID    string   `json:"id"`
	Role  string   `json:"role"`
	Parts []uiPart `json:"parts"`
	// Metadata is an assistant message's uiMetadata in what lode sends;
	// a client's is whatever it holds, and is not read.
	Metadata any `json:"metadata,omitempty"`
}

// uiMetadata is the metadata lode gives an assistant message: what its
// model calls used and cost, when any reported usage.
type uiMetadata struct {
	Usage *uiUsage `json:"usage,omitempty"`
	// Branch says which of the versions of the message this is, when
	// the conversation's branches hold several.
	Branch *uiBranch `json:"branch,omitempty"`
}

// uiUsage adds up the usage of the model calls behind one message: its
// answers' and the calls made for its turns (a history summary,
// loop.UsageEvent). The stream sends it whole each time it grows, so that
// the SDK's client, which merges metadata key by key, holds the total.
type uiUsage struct {
	InputTokens       int64   `json:"inputTokens"`
	CachedInputTokens int64   `json:"cachedInputTokens"`
	OutputTokens      int64   `json:"outputTokens"`
	ReasoningTokens   int64   `json:"reasoningTokens"`
	CostUSD           float64 `json:"costUSD"`
	// Unpriced names the first model of the message without a price:
	// CostUSD is then only the rest's.
	Unpriced string `json:"unpriced,omitempty"`
}

// add counts u and reports whether it counted: a usage of no tokens and
// no cost, as some providers send when they measure nothing, is not.
func (m *uiUsage) add(u artifact.Usage) bool {
	if u.InputTokens == 0 && u.OutputTokens == 0 && u.CachedInputTokens == 0 && u.CacheWriteTokens == 0 &&
		u.ReasoningTokens == 0 && u.CostUSD == 0 {
		return false
	}
	m.InputTokens += u.InputTokens
	m.CachedInputTokens += u.CachedInputTokens
	m.OutputTokens += u.OutputTokens
	m.ReasoningTokens += u.ReasoningTokens
	m.CostUSD += u.CostUSD
	if !u.Priced && m.Unpriced == "" {
		m.Unpriced = u.Model
		if m.Unpriced == "" {
			m.Unpriced = "the model"
		}
	}
	return true
}

// plus adds o to m.
func (m *uiUsage) plus(o uiUsage) {
	m.InputTokens += o.InputTokens
	m.CachedInputTokens += o.CachedInputTokens
	m.OutputTokens += o.OutputTokens
	m.ReasoningTokens += o.ReasoningTokens
	m.CostUSD += o.CostUSD
	if m.Unpriced == "" {
		m.Unpriced = o.Unpriced
	}
}

// usageKey is the thread metadata key under which the usage of the calls
// made for message id's turns outside the thread (loop.UsageEvent) is
// kept, as JSON: the stored turns hold only the answers' own.
func usageKey(id string) string { return "lode.usage." + id }

// withOutside adds to msgs the usage kept in meta for calls made outside
// the thread.
func withOutside(msgs []uiMessage, meta map[string]string) {
	for i := range msgs {
		raw, ok := meta[usageKey(msgs[i].ID)]
		if !ok || msgs[i].Role != "assistant" {
			continue
		}
		var o uiUsage
		if json.Unmarshal([]byte(raw), &o) != nil {
			continue
		}
		u := &uiUsage{}
		if cur := usageOf(msgs[i]); cur != nil {
			*u = *cur
		}
		u.plus(o)
		msgs[i].Metadata = &uiMetadata{Usage: u}
	}
}

// usageOf is the usage lode gave m, or nil.
func usageOf(m uiMessage) *uiUsage {
	if md, ok := m.Metadata.(*uiMetadata); ok && md != nil {
		return md.Usage
	}
	return nil
}

// metadataPart is the message-metadata stream part carrying u.
func metadataPart(u *uiUsage) map[string]any {
	return map[string]any{"type": "message-metadata", "messageMetadata": uiMetadata{Usage: u}}
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
	// Approval is a tool part's, from the approval-requested state on:
	// the SDK's client sets Approved and Reason when a person answers
	// (addToolApprovalResponse) and sends the message back.
	Approval *uiApproval `json:"approval,omitempty"`
	// ID and Data are a data part's ("data-approval").
	ID   string `json:"id,omitempty"`
	Data any    `json:"data,omitempty"`
}

// uiApproval is a tool part's approval. Its id is the tool call's ID:
// lode names each approval request after the call it asks about.
type uiApproval struct {
	ID       string `json:"id"`
	Approved *bool  `json:"approved,omitempty"`
	Reason   string `json:"reason,omitempty"`
}

// messageID is the ID of the UI message that starts at the thread's
// turn i: replays and streams name messages alike, so that a stream that
// continues a message (a decision, a resume) updates it in the client
// instead of adding one.
func messageID(i int) string { return "turn-" + strconv.Itoa(i) }

// toUIMessages renders stored turns as the messages a browser shows: each
// user turn is a message, and the assistant and tool turns between two
// user turns make one assistant message, a step per model turn. A call
// that waits is in state approval-requested, a decided one that has not
// run approval-responded, a denied one output-denied. A tripwire is a
// data-tripwire part where it was stored: the step of an answer a guard
// stopped (at input or output, a step with no text), or after the tool
// parts of the calls a call or result guard stopped, which are in state
// output-error with the error the model was given.
func toUIMessages(turns []ledger.Turn) []uiMessage {
	msgs := []uiMessage{}
	var cur *uiMessage
	var used *uiUsage         // cur's usage
	calls := map[string]int{} // tool call ID -> part index in cur
	for i, t := range turns {
		switch t.Role {
		case ledger.RoleUser:
			if memory.IsRecall(t) {
				// Facts memory added after the user's message, which the
				// user did not write: the answer's message starts here,
				// where its stream said it would (the thread's length when
				// the run began).
				if cur == nil {
					msgs = append(msgs, uiMessage{ID: messageID(i), Role: "assistant"})
					cur = &msgs[len(msgs)-1]
					used = &uiUsage{}
					clear(calls)
				}
				continue
			}
			m := uiMessage{ID: messageID(i), Role: "user"}
			for _, a := range t.Artifacts {
				if x, ok := a.(artifact.Text); ok {
					m.Parts = append(m.Parts, uiPart{Type: "text", Text: x.Content, State: "done"})
				}
			}
			msgs = append(msgs, m)
			cur = nil
		case ledger.RoleAssistant:
			if cur == nil {
				msgs = append(msgs, uiMessage{ID: messageID(i), Role: "assistant"})
				cur = &msgs[len(msgs)-1]
				used = &uiUsage{}
				clear(calls)
			}
			cur.Parts = append(cur.Parts, uiPart{Type: "step-start"})
			for _, a := range t.Artifacts {
				switch x := a.(type) {
				case artifact.Text:
					cur.Parts = append(cur.Parts, uiPart{Type: "text", Text: x.Content, State: "done"})
				case artifact.Reasoning:
					cur.Parts = append(cur.Parts, uiPart{Type: "reasoning", Text: x.Content, State: "done"})
				case artifact.Usage:
					if used.add(x) {
						cur.Metadata = &uiMetadata{Usage: used}
					}
				case artifact.Tripwire:
					// An input guard's (the model never saw the message) or
					// an output guard's (the answer is not kept).
					cur.Parts = append(cur.Parts, tripwireUIPart(x))
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
				var id string
				switch x := a.(type) {
				case artifact.ToolResult:
					id = x.ToolCallID
				case artifact.Pending:
					id = x.ToolCallID
				case artifact.Decision:
					id = x.ToolCallID
				case artifact.Tripwire:
					// A call or result guard's, after the stopped call's
					// error result: it ends the message whose calls it
					// stopped.
					cur.Parts = append(cur.Parts, tripwireUIPart(x))
					continue
				default:
					continue
				}
				j, ok := calls[id]
				if !ok {
					continue
				}
				p := &cur.Parts[j]
				switch x := a.(type) {
				case artifact.Pending:
					if p.State == "input-available" || p.State == "approval-responded" {
						p.State, p.Approval = "approval-requested", &uiApproval{ID: id}
					}
				case artifact.Decision:
					if p.State == "approval-requested" {
						approved := x.Approved
						p.State, p.Approval = "approval-responded", &uiApproval{ID: id, Approved: &approved, Reason: x.Reason}
					}
				case artifact.ToolResult:
					denied := p.Approval != nil && p.Approval.Approved != nil && !*p.Approval.Approved
					switch {
					case denied:
						p.State = "output-denied"
					case x.IsError:
						p.State, p.ErrorText = "output-error", x.Content
					case p.State == "input-available" || p.State == "approval-responded":
						p.State, p.Output = "output-available", x.Content
					}
				}
			}
		}
	}
	return msgs
}

// messageChunks are the stream parts that build m's parts in the SDK's
// client, for a stream that replays a stored message (a resume) or
// reopens one (a continued message), its usage included. They hold
// neither start nor finish.
func messageChunks(m uiMessage) []any {
	var out []any
	if u := usageOf(m); u != nil {
		out = append(out, metadataPart(u))
	}
	inStep := false
	for i, p := range m.Parts {
		switch {
		case p.Type == "step-start":
			if inStep {
				out = append(out, map[string]string{"type": "finish-step"})
			}
			out = append(out, map[string]string{"type": "start-step"})
			inStep = true
		case p.Type == "text" || p.Type == "reasoning":
			id := "stored-" + strconv.Itoa(i)
			out = append(out,
				map[string]string{"type": p.Type + "-start", "id": id},
				map[string]string{"type": p.Type + "-delta", "id": id, "delta": p.Text},
				map[string]string{"type": p.Type + "-end", "id": id})
		case len(p.Type) > 5 && p.Type[:5] == "tool-":
			name := p.Type[5:]
			if raw, bad := p.Input.(string); bad {
				out = append(out, map[string]any{"type": "tool-input-error", "toolCallId": p.ToolCallID, "toolName": name, "input": raw,
					"errorText": "the model's arguments are not valid JSON"})
				if p.ErrorText != "the model's arguments are not valid JSON" {
					out = append(out, map[string]string{"type": "tool-output-error", "toolCallId": p.ToolCallID, "errorText": p.ErrorText})
				}
				continue
			}
			out = append(out, map[string]any{"type": "tool-input-available", "toolCallId": p.ToolCallID, "toolName": name, "input": p.Input})
			switch p.State {
			case "output-available":
				out = append(out, map[string]any{"type": "tool-output-available", "toolCallId": p.ToolCallID, "output": p.Output})
			case "output-error":
				out = append(out, map[string]string{"type": "tool-output-error", "toolCallId": p.ToolCallID, "errorText": p.ErrorText})
			case "output-denied":
				out = append(out, approvalRequest(p.ToolCallID, ""), map[string]string{"type": "tool-output-denied", "toolCallId": p.ToolCallID})
			case "approval-requested", "approval-responded":
				out = append(out, approvalRequest(p.ToolCallID, ""))
			}
		case len(p.Type) > 5 && p.Type[:5] == "data-":
			out = append(out, map[string]any{"type": p.Type, "id": p.ID, "data": p.Data})
		}
	}
	if inStep {
		out = append(out, map[string]string{"type": "finish-step"})
	}
	return out
}

// approvalRequest is the SDK's tool-approval-request part for call id.
func approvalRequest(id, reason string) map[string]string {
	p := map[string]string{"type": "tool-approval-request", "approvalId": id, "toolCallId": id}
	if reason != "" {
		p["reason"] = reason
	}
	return p
}
