package cli

import (
	"fmt"
	"slices"
	"strings"

	"github.com/lodeworks/lode/artifact"
	"github.com/lodeworks/lode/loop"
	"github.com/lodeworks/lode/x/guard"
)

// GuardsConfig is lode.yaml's guards: the checks every door runs on the
// user's message, each call's arguments, each tool result and the answer
// (x/guard). A tripped guard stops the turn and is stored in the thread.
type GuardsConfig struct {
	// Secrets stops content that holds a secret this configuration
	// names: the model's key, MCP servers' credentials, login tokens.
	Secrets bool `yaml:"secrets"`
	// HiddenText stops messages and tool results that hide text from
	// people (Unicode tag characters, bidirectional overrides).
	HiddenText bool `yaml:"hidden_text"`
	// Injection stops tool results worded like an instruction to the
	// model; a tripwire for careless attacks, not a defence.
	Injection bool `yaml:"injection"`
	// MaxBytes bounds each checkpoint's content: input, call, result,
	// output.
	MaxBytes map[string]int `yaml:"max_bytes"`
	// Rules are guards given as data.
	Rules []guard.Rule `yaml:"rules"`
	// Model asks a model for a verdict, through model:'s provider.
	Model *GuardModel `yaml:"model"`
	// OutputWindow is how far behind the model, in bytes, an answer is
	// shown while output guards check it (loop.WithOutputWindow).
	OutputWindow int `yaml:"output_window"`
}

// GuardModel is guards.model: which model judges, where, told what.
type GuardModel struct {
	// Name is the verdict model's name, on model:'s server.
	Name string `yaml:"name"`
	// At lists the checkpoints; none means all four.
	At          []string `yaml:"at"`
	Instruction string   `yaml:"instruction"`
}

// check reports the first mistake in guards:, naming its line.
func (g *GuardsConfig) check(f *fileLines) error {
	for at, n := range g.MaxBytes {
		if !slices.Contains(guard.Checkpoints, at) {
			return fmt.Errorf("%s: guards.max_bytes: %q is not a checkpoint (input, call, result, output)", f.at("guards.max_bytes"), at)
		}
		if n < 1 {
			return fmt.Errorf("%s: guards.max_bytes.%s must be 1 or more", f.at("guards.max_bytes"), at)
		}
	}
	names := map[string]bool{}
	for i, r := range g.Rules {
		if _, err := r.Guard(); err != nil {
			return fmt.Errorf("%s: guards.rules[%d]: %s", f.at(fmt.Sprintf("guards.rules[%d]", i)), i, trimGuard(err))
		}
		if names[r.Name] {
			return fmt.Errorf("%s: guards.rules[%d]: a second rule named %q; a tripwire names its rule, so names must differ", f.at(fmt.Sprintf("guards.rules[%d]", i)), i, r.Name)
		}
		names[r.Name] = true
	}
	if m := g.Model; m != nil {
		if m.Name == "" {
			return fmt.Errorf("%s: guards.model needs name: the model that judges, on model:'s server", f.at("guards.model"))
		}
		for _, at := range m.At {
			if !slices.Contains(guard.Checkpoints, at) {
				return fmt.Errorf("%s: guards.model.at: %q is not a checkpoint (input, call, result, output)", f.at("guards.model.at"), at)
			}
		}
	}
	if g.OutputWindow < 0 {
		return fmt.Errorf("%s: guards.output_window must not be negative (0 means %d bytes)", f.at("guards.output_window"), loop.DefaultOutputWindow)
	}
	return nil
}

func trimGuard(err error) string { return strings.TrimPrefix(err.Error(), "guard: bad ") }

// configured reports whether guards: asks for anything.
func (g *GuardsConfig) configured() bool {
	return g.Secrets || g.HiddenText || g.Injection || len(g.MaxBytes) > 0 || len(g.Rules) > 0 || g.Model != nil
}

// guardsOf are the guards of guards:. The verdict model is built like
// model:, with its name.
func guardsOf(e env, cfg *Config) ([]loop.Guard, error) {
	g := cfg.Guards
	if !g.configured() {
		return nil, nil
	}
	var gs []loop.Guard
	if g.Secrets {
		gs = append(gs, guard.Secrets(configSecrets(e, cfg)...))
	}
	if g.HiddenText {
		gs = append(gs, guard.HiddenText())
	}
	if g.Injection {
		gs = append(gs, guard.Injection())
	}
	for _, at := range guard.Checkpoints {
		if n, ok := g.MaxBytes[at]; ok {
			gs = append(gs, guard.MaxBytes(at, n))
		}
	}
	for _, r := range g.Rules {
		rg, err := r.Guard()
		if err != nil {
			return nil, err
		}
		gs = append(gs, rg)
	}
	if m := g.Model; m != nil {
		mc := *cfg
		mc.Model.Name = m.Name
		mc.Model.Fallback = nil
		prov, err := newProvider(&mc, e, nil)
		if err != nil {
			return nil, fmt.Errorf("guards.model: %w", err)
		}
		at := m.At
		if len(at) == 0 {
			at = guard.Checkpoints
		}
		gs = append(gs, guard.Model("model", prov, m.Instruction, at...))
	}
	return gs, nil
}

// tripMessage is what a door prints for a turn a guard stopped.
func tripMessage(te *loop.TripError) string {
	var what string
	switch te.At {
	case artifact.AtInput:
		what = "your message was not sent to the model"
	case artifact.AtCall:
		what = fmt.Sprintf("tool call %s did not run", te.ToolCallID)
	case artifact.AtResult:
		what = fmt.Sprintf("the result of tool call %s was withheld from the model", te.ToolCallID)
	case artifact.AtOutput:
		what = "the answer was withheld"
	default:
		what = "the turn stopped"
	}
	return fmt.Sprintf("stopped by guard %q: %s (%s)", te.Guard, te.Reason, what)
}
