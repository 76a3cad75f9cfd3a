package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lodeworks/lode/tool"
	"github.com/lodeworks/lode/x/catalog"
	"github.com/lodeworks/lode/x/eval"
	"github.com/lodeworks/lode/x/provider/openai"
)

// The public recordings the openai adapter's replay tests use: real
// chat-completions sessions that the charm.land/fantasy module publishes
// as go-vcr cassettes. They are fetched at test time through the Go
// module proxy into the module cache, at this pinned version; nothing of
// them is committed.
const (
	recordingsModule  = "charm.land/fantasy"
	recordingsVersion = "v0.41.2"
)

// recordingsDir fetches the recordings, or skips as the adapters' tests
// do: LODE_TEST_REPLAY=off skips, and so does a failed fetch outside CI
// (in CI it fails).
func recordingsDir(t *testing.T) string {
	t.Helper()
	if os.Getenv("LODE_TEST_REPLAY") == "off" {
		t.Skip("LODE_TEST_REPLAY=off: skipping the evals on recorded chat-completions sessions")
	}
	cmd := exec.Command("go", "mod", "download", "-json", recordingsModule+"@"+recordingsVersion)
	cmd.Dir = os.TempDir()
	cmd.Env = append(os.Environ(), "GOFLAGS=-mod=mod", "GOWORK=off")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	var info struct{ Dir, Error string }
	_ = json.Unmarshal(out, &info)
	if info.Dir == "" {
		msg := "cannot fetch the recordings (go mod download " + recordingsModule + "@" + recordingsVersion + "): " +
			strings.TrimSpace(info.Error+" "+stderr.String()) + "; set LODE_TEST_REPLAY=off to skip"
		if err != nil {
			msg += " (" + err.Error() + ")"
		}
		if os.Getenv("CI") != "" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	return filepath.Join(info.Dir, "providertests", "testdata", "TestOpenAICommon")
}

type location struct {
	Location string `json:"location" jsonschema:"description=the city"`
}

type operands struct {
	A int `json:"a" jsonschema:"description=first number"`
	B int `json:"b" jsonschema:"description=second number"`
}

// recordedTools are the tools the recorded sessions offered, as Go
// functions.
func recordedTools(ctx context.Context, reg tool.Registry) error {
	if err := tool.RegisterFunc(reg, "weather", "Get weather information for a location",
		func(_ context.Context, in location) (string, error) { return "40 C", nil }); err != nil {
		return err
	}
	if err := tool.RegisterFunc(reg, "add", "Add two numbers",
		func(_ context.Context, in operands) (int, error) { return in.A + in.B, nil }); err != nil {
		return err
	}
	return tool.RegisterFunc(reg, "multiply", "Multiply two numbers",
		func(_ context.Context, in operands) (int, error) { return in.A * in.B, nil })
}

// recordedSuite is one suite over the recordings of model (a folder of
// the recordings, such as "openai-gpt-4o").
func recordedSuite(dir, folder, model string) eval.Suite {
	m := func(file string, stream bool) eval.Model {
		return eval.Recorded(filepath.Join(dir, folder, file+".yaml"), eval.OpenAI(model, openai.WithStreaming(stream)))
	}
	var cases []eval.Case
	for _, stream := range []bool{false, true} {
		suffix := ""
		if stream {
			suffix = "_streaming"
		}
		cases = append(cases,
			eval.Case{Name: "simple" + suffix, System: "You are a helpful assistant", Prompt: "Say hi in Portuguese",
				Model:  m("simple"+suffix, stream),
				Expect: []eval.Expectation{eval.TextMatches(`(?i)^(ol[áa]|oi)!?$`), eval.MaxTurns(1), eval.CallsInOrder()}},
			eval.Case{Name: "weather" + suffix, System: "You are a helpful assistant", Prompt: "What's the weather in Florence,Italy?",
				Model: m("tool"+suffix, stream), Tools: recordedTools,
				Expect: []eval.Expectation{
					// gpt-4o-mini wrote "Florence,Italy" once, without the space.
					eval.CallsInOrder(eval.CallTo("weather").WithResult("40 C").WithSchema(
						`{"type":"object","required":["location"],"properties":{"location":{"type":"string","pattern":"^Florence, ?Italy$"}}}`)),
					eval.TextContains("40"), eval.MaxTurns(2)}},
			eval.Case{Name: "add-and-multiply" + suffix,
				System: "You are a helpful assistant. CRITICAL: Always use both add and multiply at the same time ALWAYS.",
				Prompt: "Add and multiply the number 2 and 3", Model: m("multi_tool"+suffix, stream), Tools: recordedTools,
				Expect: []eval.Expectation{
					eval.CallsAnyOrder(
						eval.CallTo("multiply").WithArgs(`{"a":2,"b":3}`).WithResult("6"),
						eval.CallTo("add").WithArgs(`{"a":2,"b":3}`).WithResult("5")),
					eval.TextContains("5"), eval.TextContains("6"), eval.MaxTurns(2)}},
		)
	}
	return eval.Suite{Name: "recorded-" + folder, Cases: cases, Pricer: catalog.Default()}
}

// TestRecordedModelsSideBySide runs the same suite on the recordings of
// two models (and a third) and prints the side-by-side table.
func TestRecordedModelsSideBySide(t *testing.T) {
	dir := recordingsDir(t)
	var runs []eval.Labelled
	for _, m := range []struct{ folder, model string }{
		{"openai-gpt-4o", "gpt-4o"}, {"openai-gpt-4o-mini", "gpt-4o-mini"}, {"openai-gpt-5", "gpt-5"},
	} {
		s := recordedSuite(dir, m.folder, m.model)
		s.ReportDir = filepath.Join(os.TempDir(), "lode-eval", s.Name)
		var r *eval.Report
		t.Run(m.model, func(t *testing.T) { r = eval.Run(t, s) })
		for _, c := range r.Cases {
			if c.Status != eval.Passed || c.Tokens() == 0 || c.CostUSD == 0 {
				t.Errorf("%s %s: %s, %d tokens, $%f", m.model, c.Name, c.Status, c.Tokens(), c.CostUSD)
			}
		}
		runs = append(runs, eval.Labelled{Label: m.model, Report: r})
	}
	var table strings.Builder
	if err := eval.Compare(&table, runs...); err != nil {
		t.Fatal(err)
	}
	t.Log("\n" + table.String())
	lines := strings.Split(strings.TrimSpace(table.String()), "\n")
	if len(lines) != 8 || strings.Join(strings.Fields(lines[0]), " ") != "CASE gpt-4o gpt-4o-mini gpt-5" ||
		strings.Join(strings.Fields(lines[7]), " ") != "passed 6/6 6/6 6/6" {
		t.Errorf("side-by-side table:\n%s", table.String())
	}
}
