package a2a_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lodeworks/lode/loop"
	"github.com/lodeworks/lode/tool"
	lodea2a "github.com/lodeworks/lode/x/a2a"
)

// adkAgent builds and starts testdata/adkagent, an adk-go v2 agent served
// with adk-go's adka2a, and returns its base URL. It is a module of its
// own (adk-go needs an older OpenTelemetry than lode's), built here with
// the go command; LODE_TEST_A2A=off skips it.
func adkAgent(t *testing.T, streaming bool) string {
	t.Helper()
	if os.Getenv("LODE_TEST_A2A") == "off" {
		t.Skip("LODE_TEST_A2A=off")
	}
	dir, err := filepath.Abs("testdata/adkagent")
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(t.TempDir(), "adkagent")
	build := exec.Command("go", "build", "-o", bin, ".")
	build.Dir = dir
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build testdata/adkagent (adk-go v2; scripts/setup-a2a.sh downloads its modules): %v\n%s", err, out)
	}
	cmd := exec.Command(bin)
	cmd.Env = append(os.Environ(), "ADK_STREAMING="+map[bool]string{true: "on", false: "off"}[streaming])
	url, _ := startAgentProcess(t, cmd, "adkagent")
	return url
}

// lode calls an adk-go v2 agent served with adka2a: its skills are tools,
// a call is answered by the agent's model, and the model's failure is a
// failed task.
func TestADKAgent(t *testing.T) {
	for _, streaming := range []bool{true, false} {
		name := map[bool]string{true: "streaming", false: "blocking"}[streaming]
		t.Run(name, func(t *testing.T) {
			url := adkAgent(t, streaming)
			reg, r := mount(t, url, lodea2a.WithReadOnly())
			tools := reg.Tools()
			if len(tools) == 0 || !strings.HasPrefix(tools[0].Name, "weather_agent__") {
				t.Fatalf("tools %v", tools)
			}
			b, _ := reg.Lookup(tools[0].Name)
			obs := make(usageObserver, 4)
			st, err := run(t, reg, nil, tools[0].Name, `{"task":"Is it sunny in Lyon?"}`, nil, loop.WithObserver(obs))
			if err != nil {
				t.Fatal(err)
			}
			if res := resultOf(t, st); res.IsError || res.Content != "ADK says: Is it sunny in Lyon?" {
				t.Fatalf("result %+v", res)
			}
			// Streamed, adka2a reports each model call's usage; the
			// whole task it answers without, so nothing is charged.
			if streaming {
				if u := <-obs; u.Usage.InputTokens != 11 || u.Usage.OutputTokens != 7 || u.For != "a2a weather_agent" {
					t.Errorf("usage %+v", u)
				}
			}
			v, err := r.Call(context.Background(), b.Original, map[string]any{"task": "fail now"})
			if err != nil {
				t.Fatal(err)
			}
			if res := v.(tool.Result); !res.IsError || !strings.HasPrefix(res.Content, "The agent weather_agent failed: ") {
				t.Fatalf("failure %+v", res)
			}
		})
	}
}
