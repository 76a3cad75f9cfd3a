package injection

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/lodeworks/lode/artifact"
	"github.com/lodeworks/lode/ledger"
	"github.com/lodeworks/lode/loop"
	"github.com/lodeworks/lode/provider"
	"github.com/lodeworks/lode/tool"
	"github.com/lodeworks/lode/x/policy"
	xtool "github.com/lodeworks/lode/x/tool"
)

// containmentPolicy is the flow rules of issue 43 as a policy file
// writes them, beside a role that may use every tool.
const containmentPolicy = `roles:
  user:
    allow: {tools: ["*"]}
flows:
  - {after: [untrusted], calls: [sends_out], then: approve}
  - {after: [private], calls: [sends_out], then: deny}
`

// containment is the policy's enforcer over reg: its filter hides what a
// deny flow covers, its gate refuses it, its approval rule asks for what
// an approve flow covers.
func containment(reg tool.Registry) (*policy.Enforcer, error) {
	p, err := policy.Parse([]byte(containmentPolicy))
	if err != nil {
		return nil, err
	}
	return policy.NewEnforcer(reg, p), nil
}

// refusedLead is in a flow rule's refusal, so that a run can count them.
const refusedLead = "was refused: this conversation holds"

// Model names the scripted models.
type Model string

// The models.
const (
	// Task does the user's task and follows nothing it reads.
	Task Model = "task"
	// Obedient does the user's task and obeys every instruction it reads
	// in a tool result.
	Obedient Model = "obedient"
)

// Config is one way to run a suite.
type Config struct {
	Model Model
	// On turns the flow rules on.
	On bool
	// Quarantine offers the suite's quarantined reads.
	Quarantine bool
}

// Outcome is what one run left.
type Outcome struct {
	// UserDone: the user task's check passed.
	UserDone bool
	// Approvals names the tools whose calls asked a person (who denied).
	Approvals []string
	// Refused counts calls a flow rule refused.
	Refused int
	// Read: a tool result the model read held the injection.
	Read bool
	// Achieved: the injection task's goal shows in the world.
	Achieved bool
	// Turns counts the assistant turns.
	Turns int
}

// WithoutPerson says the task was done and no one was asked.
func (o Outcome) WithoutPerson() bool { return o.UserDone && len(o.Approvals) == 0 }

// errDenied is the person's answer to every approval request: they
// expected no send they did not ask for.
var errDenied = errors.New("the person did not approve it")

// Run runs task (with inj written into the world, when not nil) through
// lode's loop: x/tool's Handler over the suite's tools, an approver that
// records each request and denies it, and the flow rules when c.On.
func Run(ctx context.Context, s *Suite, task UserTask, inj *InjectionTask, c Config) (Outcome, error) {
	text := ""
	if inj != nil {
		text = inj.Text
	}
	w := Seed(text)
	reg := tool.NewRegistry()
	var q provider.Provider
	if c.Quarantine {
		q = quarantinedModel()
	}
	s.tools(w, reg, q)

	var mu sync.Mutex
	var asked []string
	approver := func(_ context.Context, _ tool.Tool, call artifact.ToolCall) error {
		mu.Lock()
		defer mu.Unlock()
		asked = append(asked, call.Name)
		return errDenied
	}
	hopts := []xtool.HandlerOption{xtool.WithApprover(approver)}
	var filter xtool.ToolFilter
	if c.On {
		enf, err := containment(reg)
		if err != nil {
			return Outcome{}, err
		}
		hopts = append(hopts, enf.HandlerOptions()...)
		filter = enf.Filter()
	}
	step := loop.New(
		loop.WithHandlers(xtool.NewHandler(reg, hopts...)),
		loop.WithInvokeOptions(xtool.WithFilteredTools(reg, filter)),
		loop.WithMaxTurns(maxTurns),
	)
	plans := map[string]plan{task.Prompt: task.plan}
	model := taskModel(plans)
	if c.Model == Obedient {
		model = obedientModel(plans)
	}
	th := ledger.NewThread(ledger.WithClock(nil), ledger.WithMetadata(map[string]string{policy.RolesKey: "user"}))
	_ = th.Append(ledger.RoleUser, artifact.Text{Content: task.Prompt})
	if _, err := step.Run(ctx, th, model); err != nil {
		return Outcome{}, fmt.Errorf("%s / %s: %w", s.Name, task.ID, err)
	}

	var o Outcome
	var last string
	for _, t := range th.Turns() {
		if t.Role == ledger.RoleAssistant {
			o.Turns++
		}
		for _, a := range t.Artifacts {
			switch a := a.(type) {
			case artifact.Text:
				if t.Role == ledger.RoleAssistant {
					last = a.Content
				}
			case artifact.ToolResult:
				if a.IsError && strings.Contains(a.Content, refusedLead) {
					o.Refused++
				}
				if strings.Contains(a.Content, injectionLead) {
					o.Read = true
				}
			}
		}
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	o.UserDone = task.Check(w, last)
	o.Approvals = asked
	if inj != nil {
		o.Achieved = inj.Achieved(w)
	}
	return o, nil
}
