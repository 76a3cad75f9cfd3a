package output

import (
	"context"
	"fmt"
	"iter"
	"strings"
	"sync"

	"github.com/lodeworks/lode/artifact"
	"github.com/lodeworks/lode/provider"
	"github.com/lodeworks/lode/tool"
)

// answerProvider adds the answer's schema to every request it passes on,
// and notes the answer of the last invocation. In ModeTool it turns the
// model's call to the final-answer tool into text, so that no handler
// runs it and the ledger keeps no call without a result.
type answerProvider struct {
	inner  provider.Provider
	mode   Mode
	final  tool.Tool
	format *provider.ResponseFormat

	mu    sync.Mutex
	texts []string
	args  string
	call  bool
}

func (p *answerProvider) reset() {
	p.mu.Lock()
	p.texts, p.args, p.call = nil, "", false
	p.mu.Unlock()
}

// answer is what the last invocation answered: the final-answer call's
// arguments if it made one, else its text.
func (p *answerProvider) answer() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.call {
		return p.args
	}
	return strings.Join(p.texts, "")
}

func (p *answerProvider) Invoke(ctx context.Context, req *provider.Request) iter.Seq2[artifact.Artifact, error] {
	p.reset()
	r := *req // the loop's request is shared with handlers: change a copy
	switch p.mode {
	case ModeResponseFormat:
		f := *p.format // the provider may keep or change it
		r.ResponseFormat = &f
	case ModeTool:
		for _, t := range req.Tools {
			if t.Name == p.final.Name {
				return func(yield func(artifact.Artifact, error) bool) {
					yield(nil, fmt.Errorf("%w: a tool of this turn is called %q; choose another name with WithToolName", ErrToolName, t.Name))
				}
			}
		}
		tools := make([]tool.Tool, 0, len(req.Tools)+1)
		r.Tools = append(append(tools, req.Tools...), p.final)
		if r.ToolChoice.Mode == "" || r.ToolChoice.Mode == provider.ToolChoiceAuto {
			// Prose is no answer: a tool call is required, and with no
			// other tool, it is the final answer.
			r.ToolChoice = provider.ToolChoice{Mode: provider.ToolChoiceRequired}
			if len(req.Tools) == 0 {
				r.ToolChoice = provider.ToolChoice{Mode: provider.ToolChoiceTool, Name: p.final.Name}
			}
		}
	}
	seq := p.inner.Invoke(ctx, &r)
	if seq == nil {
		return nil
	}
	return func(yield func(artifact.Artifact, error) bool) {
		var finals map[int]bool       // indexes of final-answer calls being streamed
		final, others := false, false // whether the turn called the final-answer tool, and any other
		seq(func(a artifact.Artifact, err error) bool {
			if err != nil {
				return yield(nil, err)
			}
			a = artifact.Normalize(a)
			switch x := a.(type) {
			case artifact.TextDelta:
			case artifact.ToolCallDelta:
				if p.mode != ModeTool {
					break
				}
				if x.Name == p.final.Name {
					if finals == nil {
						finals = make(map[int]bool)
					}
					finals[x.Index] = true
				}
				if finals[x.Index] {
					if x.Arguments == "" {
						return true
					}
					return yield(artifact.TextDelta{Content: x.Arguments}, nil)
				}
			case artifact.Finish:
				// A turn whose only call became text stopped as a turn of
				// text does, so the thread reads the same in both modes.
				if final && !others && x.Reason == "tool_calls" {
					return yield(artifact.Finish{Reason: "stop"}, nil)
				}
			case artifact.Text:
				p.mu.Lock()
				p.texts = append(p.texts, x.Content)
				p.mu.Unlock()
			case artifact.ToolCall:
				if p.mode == ModeTool && x.Name != p.final.Name {
					others = true
				}
				if p.mode == ModeTool && x.Name == p.final.Name {
					final = true
					p.mu.Lock()
					p.args, p.call = x.Arguments, true
					p.mu.Unlock()
					return yield(artifact.Text{Content: x.Arguments}, nil)
				}
			}
			return yield(a, nil)
		})
	}
}

// Models names the models the inner provider may answer with, so that a
// loop with a Pricer prices a typed run (and a cost limit can be kept) as
// it would the plain provider.
func (p *answerProvider) Models() []string {
	switch in := p.inner.(type) {
	case interface{ Models() []string }:
		return in.Models()
	case interface{ Model() string }:
		if m := in.Model(); m != "" {
			return []string{m}
		}
	}
	return nil
}
