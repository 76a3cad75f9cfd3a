package eval

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/lodeworks/lode/artifact"
	"github.com/lodeworks/lode/ledger"
	"github.com/lodeworks/lode/loop"
	toolpkg "github.com/lodeworks/lode/tool"
	"github.com/lodeworks/lode/x/policy"
	xtool "github.com/lodeworks/lode/x/tool"
)

// runCase runs c once. skip is set, with the reason in o.Err, when the
// model asked for the case to be skipped.
func runCase(ctx context.Context, s *Suite, c *Case) (o *Outcome, skip bool) {
	now := s.Clock
	if now == nil {
		now = time.Now
	}
	o = &Outcome{Case: c.Name}
	start := now()
	defer func() { o.Duration = now().Sub(start) }()
	if c.Model == nil {
		o.Err = errors.New("eval: the case has no Model")
		return o, false
	}
	st, err := startThread(ctx, c)
	if err != nil {
		o.Err = err
		return o, false
	}
	o.Thread = st
	reg := toolpkg.NewRegistry()
	if c.Tools != nil {
		if err := c.Tools(ctx, reg); err != nil {
			o.Err = fmt.Errorf("eval: tools: %w", err)
			return o, false
		}
	}
	prov, closeModel, err := c.Model.Open(ctx)
	if err != nil {
		o.Err = err
		return o, errors.Is(err, ErrSkip)
	}
	if m, ok := prov.(interface{ Model() string }); ok {
		o.Model = m.Model()
	}

	refusals := &refusalLog{rules: map[string]string{}}
	var hopts []xtool.HandlerOption
	var filter xtool.ToolFilter
	if c.Policy != nil {
		enf := policy.NewEnforcer(reg, c.Policy)
		filter = enf.Filter()
		hopts = append(enf.HandlerOptions(), xtool.WithGate(refusals.gate(enf.Gate)))
	}
	maxTurns := c.MaxTurns
	if maxTurns <= 0 {
		maxTurns = DefaultMaxTurns
	}
	lopts := []loop.Option{
		loop.WithHandlers(xtool.NewHandler(reg, hopts...)),
		loop.WithInvokeOptions(xtool.WithFilteredTools(reg, filter)),
		loop.WithMaxTurns(maxTurns),
	}
	if s.Pricer != nil {
		lopts = append(lopts, loop.WithPricer(s.Pricer))
	}
	if len(c.Guards) > 0 {
		lopts = append(lopts, loop.WithGuards(c.Guards...))
	}
	step := loop.New(lopts...)
	from := len(st.Turns())
	var runErr error
	if c.Output != nil {
		o.Answer, runErr = c.Output.Answer(ctx, step, st, prov)
	} else {
		_, runErr = step.Run(ctx, st, prov)
	}
	if closeModel != nil {
		if err := closeModel(); err != nil && runErr == nil {
			runErr = err
		}
	}
	o.Err = runErr
	collect(o, st.Turns()[from:], refusals)
	return o, false
}

func startThread(ctx context.Context, c *Case) (ledger.State, error) {
	var st ledger.State
	switch {
	case c.Thread != nil && c.From != nil:
		return nil, errors.New("eval: the case sets both Thread and From; give one")
	case c.Thread != nil:
		st = c.Thread()
	case c.From != nil:
		var err error
		if st, err = c.From(ctx); err != nil {
			return nil, err
		}
	}
	if st == nil {
		st = ledger.NewThread()
	}
	if len(c.Roles) > 0 {
		if err := st.SetMetadata(policy.RolesKey, strings.Join(c.Roles, ",")); err != nil {
			return nil, fmt.Errorf("eval: thread: %w", err)
		}
	}
	if c.System != "" {
		if err := st.Append(ledger.RoleSystem, artifact.Text{Content: c.System}); err != nil {
			return nil, fmt.Errorf("eval: thread: %w", err)
		}
	}
	if c.Prompt != "" {
		if err := st.Append(ledger.RoleUser, artifact.Text{Content: c.Prompt}); err != nil {
			return nil, fmt.Errorf("eval: thread: %w", err)
		}
	}
	return st, nil
}

// collect reads the calls, the last answer's text and the usage from the
// turns the run added (a starting thread's turns are not the run's).
func collect(o *Outcome, turns []ledger.Turn, refusals *refusalLog) {
	index := map[string]int{}
	for _, t := range turns {
		for _, a := range t.Artifacts {
			if w, ok := a.(artifact.Tripwire); ok {
				o.Tripwires = append(o.Tripwires, w)
			}
		}
		switch t.Role {
		case ledger.RoleAssistant:
			o.Turns++
			var text strings.Builder
			for _, a := range t.Artifacts {
				switch a := a.(type) {
				case artifact.Text:
					text.WriteString(a.Content)
				case artifact.ToolCall:
					index[a.ID] = len(o.Calls)
					c := Call{ID: a.ID, Name: a.Name, Arguments: a.Arguments}
					c.Rule, c.Refused = refusals.rule(a.ID)
					o.Calls = append(o.Calls, c)
				case artifact.Usage:
					addUsage(&o.Usage, a)
				}
			}
			o.Text = text.String()
		case ledger.RoleTool:
			for _, a := range t.Artifacts {
				if r, ok := a.(artifact.ToolResult); ok {
					if i, ok := index[r.ToolCallID]; ok {
						o.Calls[i].Result, o.Calls[i].IsError = r.Content, r.IsError
					}
				}
			}
		}
	}
}

func addUsage(sum *artifact.Usage, u artifact.Usage) {
	sum.InputTokens += u.InputTokens
	sum.OutputTokens += u.OutputTokens
	sum.CachedInputTokens += u.CachedInputTokens
	sum.CacheWriteTokens += u.CacheWriteTokens
	sum.ReasoningTokens += u.ReasoningTokens
	sum.CostUSD += u.CostUSD
	if u.Model != "" {
		sum.Model = u.Model
	}
	sum.Priced = sum.Priced || u.Priced
}

// refusalLog notes the calls the policy's gate refused, by call ID.
type refusalLog struct {
	mu    sync.Mutex
	rules map[string]string
}

func (l *refusalLog) gate(next xtool.Gate) xtool.Gate {
	return func(ctx context.Context, st ledger.State, t toolpkg.Tool, source string, call artifact.ToolCall) xtool.Verdict {
		v := next(ctx, st, t, source, call)
		if v.Hide || v.Refuse != "" {
			rule := ""
			for _, a := range v.Attrs {
				if string(a.Key) == policy.AttrRule {
					rule = a.Value.AsString()
				}
			}
			l.mu.Lock()
			l.rules[call.ID] = rule
			l.mu.Unlock()
		}
		return v
	}
}

func (l *refusalLog) rule(id string) (string, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	r, ok := l.rules[id]
	return r, ok
}
