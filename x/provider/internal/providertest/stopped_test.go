package providertest

import (
	"testing"

	"github.com/lodeworks/lode/artifact"
	"github.com/lodeworks/lode/ledger"
	"github.com/lodeworks/lode/x/provider/script"
)

func TestStoppedTurns(t *testing.T) {
	for _, name := range []string{StoppedAnswer, StoppedInput, StoppedResult, TripwireAnywhere} {
		if len(StoppedTurns(name)) == 0 {
			t.Errorf("no history named %q", name)
		}
	}
	if StoppedTurns("none") != nil {
		t.Error("a history for an unknown name")
	}
}

// RunGuarded makes two requests; the second carries every stored turn but
// the last, in its place, with nothing of what was stopped.
func TestRunGuarded(t *testing.T) {
	p := script.Play(script.Text("a "+Forbidden+" answer"), script.Text("ok"))
	RunGuarded(t, p)
	reqs := p.Requests()
	if len(reqs) != 2 {
		t.Fatalf("%d requests, want 2", len(reqs))
	}
	var roles []ledger.Role
	var texts []string
	for _, tu := range reqs[1].Turns {
		roles = append(roles, tu.Role)
		for _, a := range tu.Artifacts {
			switch a := a.(type) {
			case artifact.Text:
				texts = append(texts, a.Content)
			case artifact.Tripwire:
				t.Errorf("a tripwire was sent: %+v", a)
			}
		}
	}
	if len(roles) != 5 || roles[1] != ledger.RoleAssistant || roles[3] != ledger.RoleAssistant || len(texts) != 2 || texts[0] != "hi" || texts[1] != "next" {
		t.Errorf("second request: roles %v, texts %q", roles, texts)
	}
}
