package memory

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/lodeworks/lode/artifact"
	"github.com/lodeworks/lode/ledger"
	"github.com/lodeworks/lode/provider"
	"github.com/lodeworks/lode/x/auth"
)

// RecallURI names the Resource a recall turn carries: a user turn that
// holds only such a Resource is the facts Recall added, not something the
// user said.
const RecallURI = "memory:recall"

// recallFrom is who a recall turn's Private label names as its source.
const recallFrom = "memory recall"

// Recall returns an invoke option that adds to a run the facts the
// caller's memory holds about its newest user message. At a run's first
// model call, when the thread's last turn is the user's message, it
// searches store in the thread's Scope (ThreadScope, never the request)
// with that message's text, stores the facts it finds as a user turn
// right after the message (a text Resource named RecallURI) and sends
// that turn too. The facts stay in the ledger where they were added, so
// every later request, in this run and the next, begins with the one
// before it and the provider's prompt cache keeps its prefix; a system
// prompt that changed with each message's facts would lose it every turn.
//
// A thread with facts added is labelled ledger.LabelPrivate, as one that
// read memory_search's answer is. Nothing is added for a caller without a
// user, for one WithRoles refuses, or when nothing matches. WithLimit
// bounds the facts added (DefaultLimit without it). A store that fails
// fails the turn before the model is called; the user's message stays.
//
// Only a turn's request is changed and only a thread ending with a user
// message is written to, so a loop.Step's Request shown before the first
// message adds nothing.
func Recall(store Store, opts ...Option) provider.InvokeOption {
	c := newConfig(opts)
	return provider.OptionFunc(func(ctx context.Context, st ledger.State, req *provider.Request) error {
		if st == nil || store == nil {
			return nil
		}
		turns := st.Turns()
		if len(turns) == 0 || turns[len(turns)-1].Role != ledger.RoleUser || IsRecall(turns[len(turns)-1]) {
			return nil
		}
		id := auth.Of(st)
		sc, err := ScopeOf(id)
		if err != nil || !c.allows(id) {
			return nil
		}
		query := newestMessage(turns)
		if len(query) > MaxFactBytes {
			query = query[:MaxFactBytes]
		}
		facts, err := store.Search(ctx, sc, query, Limit(c.limit))
		if err != nil {
			return fmt.Errorf("memory: recall: %w", err)
		}
		if len(facts) == 0 {
			return nil
		}
		turn := RecallTurn(facts)
		// The label first: a thread that holds the facts is never without it.
		if err := ledger.AddLabel(st, ledger.LabelPrivate, recallFrom); err != nil {
			return fmt.Errorf("memory: recall: %w", err)
		}
		if err := st.Append(turn.Role, turn.Artifacts...); err != nil {
			return fmt.Errorf("memory: recall: %w", err)
		}
		req.Turns = append(slices.Clip(req.Turns), turn)
		return nil
	})
}

// RecallTurn is the user turn Recall stores for facts: one text Resource
// named RecallURI listing them, which every adapter sends as text in the
// user's message (Anthropic as a plain-text document).
func RecallTurn(facts []Fact) ledger.Turn {
	var b strings.Builder
	b.WriteString("Facts remembered about the user from earlier conversations (from memory, not written by the user in this message):")
	for _, f := range facts {
		b.WriteString("\n- ")
		b.WriteString(strings.ReplaceAll(f.Text, "\n", " "))
	}
	return ledger.Turn{Role: ledger.RoleUser, Artifacts: []artifact.Artifact{
		artifact.Resource{URI: RecallURI, MIMEType: "text/plain", Text: b.String()},
	}}
}

// IsRecall reports whether t is a turn Recall stored: a user turn holding
// only a Resource named RecallURI. Doors that show a thread to a person
// leave it out of the user's messages.
func IsRecall(t ledger.Turn) bool {
	if t.Role != ledger.RoleUser || len(t.Artifacts) == 0 {
		return false
	}
	for _, a := range t.Artifacts {
		r, ok := artifact.Normalize(a).(artifact.Resource)
		if !ok || r.URI != RecallURI {
			return false
		}
	}
	return true
}

// newestMessage is the text of the user turns that end turns.
func newestMessage(turns []ledger.Turn) string {
	i := len(turns)
	for i > 0 && turns[i-1].Role == ledger.RoleUser && !IsRecall(turns[i-1]) {
		i--
	}
	var parts []string
	for _, t := range turns[i:] {
		for _, a := range t.Artifacts {
			if x, ok := a.(artifact.Text); ok && x.Content != "" {
				parts = append(parts, x.Content)
			}
		}
	}
	return strings.Join(parts, "\n")
}
