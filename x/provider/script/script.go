package script

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"slices"
	"sync"
	"unicode/utf8"

	"github.com/lodeworks/lode/artifact"
	"github.com/lodeworks/lode/provider"
)

// ErrExhausted is returned by an invocation after the script has run out.
var ErrExhausted = errors.New("script: no replies left")

// Step is one scripted invocation.
type Step struct {
	arts  []artifact.Artifact
	fn    func(req *provider.Request) ([]artifact.Artifact, error)
	err   error
	after int  // deltas streamed before err
	hang  bool // stream, then wait for cancellation
}

// Reply streams arts as the assistant's answer: each Text, Reasoning and
// ToolCall as deltas first, then every artifact whole.
func Reply(arts ...artifact.Artifact) Step { return Step{arts: arts} }

// Text is Reply with a single Text.
func Text(s string) Step { return Reply(artifact.Text{Content: s}) }

// Call is Reply with one tool call; args is the raw JSON the model "wrote".
func Call(id, name, args string) Step {
	return Reply(artifact.ToolCall{ID: id, Name: name, Arguments: args})
}

// Fail makes the invocation fail with err before streaming anything.
func Fail(err error) Step { return Step{err: err} }

// FailAfter streams the deltas of arts, stops after n of them and fails
// with err: a provider breaking mid-stream.
func FailAfter(n int, err error, arts ...artifact.Artifact) Step {
	return Step{arts: arts, err: err, after: n}
}

// Hang streams the deltas of arts and then blocks until the invocation's
// context ends, yielding its error: a model that never finishes.
func Hang(arts ...artifact.Artifact) Step { return Step{arts: arts, hang: true} }

// Func computes the reply from the request, for scripts that react to what
// tools returned.
func Func(fn func(req *provider.Request) ([]artifact.Artifact, error)) Step {
	return Step{fn: fn}
}

// Provider plays a script. It is safe for concurrent use; steps are taken
// in order by whichever invocation comes first.
type Provider struct {
	chunk int
	model string
	mu    sync.Mutex
	steps []Step
	next  int
	reqs  []provider.Request
}

// Option configures a Provider.
type Option func(*Provider)

// DefaultChunkSize is the largest delta, in bytes, unless WithChunkSize
// says otherwise.
const DefaultChunkSize = 16

// WithChunkSize sets the largest delta in bytes; n < 1 keeps
// DefaultChunkSize. Text is never split inside a UTF-8 sequence.
func WithChunkSize(n int) Option { return func(p *Provider) { p.chunk = n } }

// WithModel names the model the Provider says it is (Model), so that a
// loop with a Pricer can price a script's usage.
func WithModel(name string) Option { return func(p *Provider) { p.model = name } }

// Model returns the name given with WithModel, or "".
func (p *Provider) Model() string { return p.model }

// New returns a Provider that plays steps in order.
func New(steps []Step, opts ...Option) *Provider {
	p := &Provider{steps: steps}
	for _, o := range opts {
		o(p)
	}
	if p.chunk < 1 {
		p.chunk = DefaultChunkSize
	}
	return p
}

// Play is New with the steps as arguments.
func Play(steps ...Step) *Provider { return New(steps) }

// Requests returns copies of the requests received so far, in order.
func (p *Provider) Requests() []provider.Request {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.reqs)
}

// Remaining reports how many steps have not been played.
func (p *Provider) Remaining() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.steps) - p.next
}

// Invoke plays the next step.
func (p *Provider) Invoke(ctx context.Context, req *provider.Request) iter.Seq2[artifact.Artifact, error] {
	return func(yield func(artifact.Artifact, error) bool) {
		p.mu.Lock()
		rec := *req
		rec.Turns = slices.Clone(req.Turns)
		rec.Tools = slices.Clone(req.Tools)
		p.reqs = append(p.reqs, rec)
		if p.next >= len(p.steps) {
			p.mu.Unlock()
			yield(nil, ErrExhausted)
			return
		}
		st := p.steps[p.next]
		p.next++
		p.mu.Unlock()

		arts := st.arts
		if st.fn != nil {
			var err error
			if arts, err = st.fn(&rec); err != nil {
				yield(nil, err)
				return
			}
		}
		if st.err != nil && st.after == 0 && !st.hang && len(arts) == 0 {
			yield(nil, st.err)
			return
		}
		sent, call := 0, 0
		for _, a := range arts {
			ds := p.deltas(a, call)
			if _, ok := a.(artifact.ToolCall); ok {
				call++
			}
			for _, d := range ds {
				if err := ctx.Err(); err != nil {
					yield(nil, err)
					return
				}
				if st.err != nil && sent == st.after {
					yield(nil, st.err)
					return
				}
				if !yield(d, nil) {
					return
				}
				sent++
			}
		}
		if st.err != nil {
			yield(nil, st.err)
			return
		}
		if st.hang {
			<-ctx.Done()
			yield(nil, ctx.Err())
			return
		}
		for _, a := range arts {
			if err := ctx.Err(); err != nil {
				yield(nil, err)
				return
			}
			if !yield(a, nil) {
				return
			}
		}
	}
}

func (p *Provider) deltas(a artifact.Artifact, index int) []artifact.Artifact {
	switch a := a.(type) {
	case artifact.Text:
		return chunks(a.Content, p.chunk, func(s string) artifact.Artifact { return artifact.TextDelta{Content: s} })
	case artifact.Reasoning:
		return chunks(a.Content, p.chunk, func(s string) artifact.Artifact { return artifact.ReasoningDelta{Content: s} })
	case artifact.ToolCall:
		out := []artifact.Artifact{artifact.ToolCallDelta{Index: index, ID: a.ID, Name: a.Name}}
		return append(out, chunks(a.Arguments, p.chunk, func(s string) artifact.Artifact {
			return artifact.ToolCallDelta{Index: index, Arguments: s}
		})...)
	}
	return nil
}

func chunks(s string, n int, mk func(string) artifact.Artifact) []artifact.Artifact {
	if s == "" {
		return nil
	}
	out := make([]artifact.Artifact, 0, (len(s)+n-1)/n)
	for len(s) > 0 {
		end := min(n, len(s))
		for end < len(s) && !utf8.RuneStart(s[end]) {
			end++
		}
		out = append(out, mk(s[:end]))
		s = s[end:]
	}
	return out
}

// String describes the provider's progress, for test failure messages.
func (p *Provider) String() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return fmt.Sprintf("script.Provider{played %d of %d}", p.next, len(p.steps))
}
