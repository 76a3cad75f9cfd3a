package a2a_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lodeworks/lode/x/provider/script"
)

// adkCaller builds x/a2a/adk's caller, an ADK agent whose root agent is
// a remote A2A agent: a module of its own, whose OpenTelemetry versions
// lode's graph cannot select.
func adkCaller(t *testing.T) string {
	t.Helper()
	if os.Getenv("LODE_TEST_ADK") == "off" {
		t.Skip("LODE_TEST_ADK=off: skipping the tests in which an ADK agent calls lode")
	}
	bin := filepath.Join(t.TempDir(), "caller")
	cmd := exec.CommandContext(t.Context(), "go", "build", "-o", bin, "./caller")
	cmd.Dir = "adk"
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("building x/a2a/adk's caller (google.golang.org/adk/v2, from the Go module proxy): %v\n%s\nset LODE_TEST_ADK=off to skip these tests", err, out)
	}
	return bin
}

type adkReply struct {
	Text  string `json:"text"`
	Error string `json:"error"`
}

func runADK(t *testing.T, bin, url string, messages ...string) []adkReply {
	t.Helper()
	cmd := exec.CommandContext(t.Context(), bin, append([]string{url}, messages...)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("the ADK caller failed: %v\n%s", err, stderr.String())
	}
	var replies []adkReply
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		var r adkReply
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatalf("%v: %s", err, sc.Bytes())
		}
		replies = append(replies, r)
	}
	if len(replies) != len(messages) {
		t.Fatalf("%d replies to %d messages: %s", len(replies), len(messages), out)
	}
	return replies
}

func TestADKAgentCallsLode(t *testing.T) {
	bin := adkCaller(t)
	t.Run("conversation", func(t *testing.T) {
		prov := script.Play(script.Call("c1", "lookup", `{"id":7}`), script.Text("Ticket 7 is about a printer."), script.Text("Yes, the same ticket."))
		ag := startAgent(t, prov, agentOpts{})
		r := runADK(t, bin, ag.url, "what is ticket 7?", "and again?")
		if r[0].Error != "" || !strings.Contains(r[0].Text, "Ticket 7 is about a printer.") {
			t.Errorf("first reply %+v", r[0])
		}
		if r[1].Error != "" || !strings.Contains(r[1].Text, "Yes, the same ticket.") {
			t.Errorf("second reply %+v", r[1])
		}
		// The second message went on in the same context: the model saw
		// the first exchange.
		if reqs := prov.Requests(); len(reqs) != 3 || len(reqs[2].Turns) != 5 {
			t.Errorf("the model was asked %d times; the last saw %d turns, want 5", len(reqs), len(reqs[len(reqs)-1].Turns))
		}
	})
	t.Run("approval", func(t *testing.T) {
		prov := script.Play(script.Call("c1", "delete_ticket", `{"id":7}`), script.Text("Deleted ticket 7."))
		ag := startAgent(t, prov, agentOpts{})
		r := runADK(t, bin, ag.url, "delete ticket 7", "approve")
		if !strings.Contains(r[0].Text, "wait for approval") || !strings.Contains(r[0].Text, "delete_ticket") {
			t.Errorf("first reply %+v: want the call waiting for approval", r[0])
		}
		if r[1].Error != "" || !strings.Contains(r[1].Text, "Deleted ticket 7.") {
			t.Errorf("after approving: %+v", r[1])
		}
		if n := ag.deletes.Load(); n != 1 {
			t.Errorf("delete_ticket ran %d times, want 1", n)
		}
	})
}
