package eval

import (
	"context"
	"fmt"
	"strings"

	"github.com/lodeworks/lode/artifact"
	"github.com/lodeworks/lode/ledger"
	"github.com/lodeworks/lode/loop"
	"github.com/lodeworks/lode/x/output"
)

// Score is a scorer's grade of one outcome: Value from 0 to 1, whether it
// passes, and why.
type Score struct {
	Name   string  `json:"name"`
	Value  float64 `json:"value"`
	Pass   bool    `json:"pass"`
	Reason string  `json:"reason,omitempty"`
}

// Scorer grades an outcome. A score that does not pass fails the case;
// an error fails it too, saying the scorer could not grade.
type Scorer interface {
	Score(ctx context.Context, o *Outcome) (Score, error)
}

// ScorerFunc adapts a function to a Scorer.
type ScorerFunc func(ctx context.Context, o *Outcome) (Score, error)

// Score calls f.
func (f ScorerFunc) Score(ctx context.Context, o *Outcome) (Score, error) { return f(ctx, o) }

// Verdict is what an LLM judge answers, as a typed answer (x/output).
type Verdict struct {
	Pass   bool    `json:"pass" jsonschema:"description=whether the answer meets the rubric"`
	Score  float64 `json:"score" jsonschema:"minimum=0,maximum=1,description=how well it meets the rubric: 0 not at all, 1 fully"`
	Reason string  `json:"reason" jsonschema:"description=one or two sentences saying why"`
}

// Judge is a Scorer that asks a model whether an outcome meets rubric.
// The model reads the conversation (prompts, tool calls and results, the
// last answer) and answers a Verdict. Give it a Cassette model so that the
// verdict is recorded once (LODE_RECORD=1) and replays offline ever after:
// the request holds the transcript, so a changed transcript misses the
// cassette, saying where, instead of reusing a stale verdict.
func Judge(name, rubric string, model Model) Scorer {
	return judge{name: name, rubric: rubric, model: model}
}

type judge struct {
	name, rubric string
	model        Model
}

// judgeSystem is the judge's instructions; the rubric follows it.
const judgeSystem = "You grade the work of an AI assistant against a rubric. " +
	"Read the conversation and the assistant's final answer, then answer with a verdict: " +
	"pass (true when the rubric is met), score (0 to 1) and a short reason.\n\nRubric:\n"

func (j judge) Score(ctx context.Context, o *Outcome) (Score, error) {
	prov, closeModel, err := j.model.Open(ctx)
	if err != nil {
		return Score{}, fmt.Errorf("eval: judge %s: %w", j.name, err)
	}
	st := ledger.NewThread()
	_ = st.Append(ledger.RoleSystem, artifact.Text{Content: judgeSystem + j.rubric})
	_ = st.Append(ledger.RoleUser, artifact.Text{Content: judgeInput(o)})
	v, err := output.Run[Verdict](ctx, loop.New(loop.WithMaxTurns(3)), st, prov)
	if closeModel != nil {
		if cerr := closeModel(); cerr != nil && err == nil {
			err = cerr
		}
	}
	if err != nil {
		return Score{}, fmt.Errorf("eval: judge %s: %w", j.name, err)
	}
	return Score{Name: j.name, Value: v.Score, Pass: v.Pass, Reason: v.Reason}, nil
}

// judgeInput writes the conversation for the judge: every turn but the
// system prompt, then the final answer.
func judgeInput(o *Outcome) string {
	var b strings.Builder
	b.WriteString("Conversation:\n")
	if o.Thread != nil {
		for _, m := range Transcript(o.Thread) {
			if m.Role == string(ledger.RoleSystem) {
				continue
			}
			fmt.Fprintf(&b, "[%s %s] %s\n", m.Role, m.Kind, m.Text)
		}
	}
	b.WriteString("\nFinal answer:\n")
	if len(o.Answer) > 0 {
		b.Write(o.Answer)
	} else {
		b.WriteString(o.Text)
	}
	return b.String()
}

// Message is one artifact of a transcript, as reports show it.
type Message struct {
	Role string `json:"role"`
	Kind string `json:"kind"`
	Text string `json:"text"`
}

// Transcript lists st's turns as messages: texts, reasoning, tool calls
// (name and arguments) and results; usage and bookkeeping are left out.
func Transcript(st ledger.State) []Message {
	var out []Message
	for _, t := range st.Turns() {
		role := string(t.Role)
		for _, a := range t.Artifacts {
			switch a := a.(type) {
			case artifact.Text:
				out = append(out, Message{role, "text", a.Content})
			case artifact.Reasoning:
				out = append(out, Message{role, "reasoning", a.Content})
			case artifact.ToolCall:
				out = append(out, Message{role, "call", a.Name + " " + a.Arguments})
			case artifact.ToolResult:
				kind := "result"
				if a.IsError {
					kind = "error"
				}
				out = append(out, Message{role, kind, a.Name + ": " + a.Content})
			case artifact.Pending:
				out = append(out, Message{role, "pending", a.Name + " " + a.Arguments + ": " + a.Reason})
			}
		}
	}
	return out
}

func scoreAll(ctx context.Context, o *Outcome, scorers []Scorer) ([]Score, []string) {
	var scores []Score
	var fails []string
	for i, s := range scorers {
		sc, err := s.Score(ctx, o)
		if sc.Name == "" {
			sc.Name = fmt.Sprintf("scorer %d", i+1)
		}
		if err != nil {
			fails = append(fails, fmt.Sprintf("%s: %v", sc.Name, err))
			continue
		}
		scores = append(scores, sc)
		if !sc.Pass {
			msg := fmt.Sprintf("%s: score %.2f, not a pass", sc.Name, sc.Value)
			if sc.Reason != "" {
				msg += ": " + sc.Reason
			}
			fails = append(fails, msg)
		}
	}
	return scores, fails
}
