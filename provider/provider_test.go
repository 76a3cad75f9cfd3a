package provider_test

import (
	"context"
	"errors"
	"testing"

	"github.com/lodeworks/lode/artifact"
	"github.com/lodeworks/lode/ledger"
	"github.com/lodeworks/lode/provider"
	"github.com/lodeworks/lode/tool"
)

func turn(role ledger.Role, text string) ledger.Turn {
	return ledger.Turn{Role: role, Artifacts: []artifact.Artifact{artifact.Text{Content: text}}}
}

func TestKnobs(t *testing.T) {
	req := &provider.Request{}
	err := provider.Resolve(context.Background(), ledger.NewThread(), req,
		provider.WithTemperature(0),
		provider.WithTopP(0.5),
		provider.WithMaxTokens(100),
		provider.WithParallelToolCalls(false),
		provider.WithToolChoice(provider.ToolChoice{Mode: provider.ToolChoiceTool, Name: "x"}),
		provider.WithStop("END"),
		provider.WithTools([]tool.Tool{{Name: "a"}}),
		nil,
	)
	if err != nil {
		t.Fatal(err)
	}
	if req.Temperature == nil || *req.Temperature != 0 {
		t.Error("temperature 0 was not kept as a real value")
	}
	if *req.TopP != 0.5 || req.MaxTokens != 100 || *req.ParallelToolCalls || req.ToolChoice.Name != "x" || req.Stop[0] != "END" || req.Tools[0].Name != "a" {
		t.Errorf("request = %+v", req)
	}
}

func TestResolveStopsAtFirstError(t *testing.T) {
	boom := errors.New("boom")
	ran := false
	err := provider.Resolve(context.Background(), ledger.NewThread(), &provider.Request{},
		provider.OptionFunc(func(context.Context, ledger.State, *provider.Request) error { return boom }),
		provider.OptionFunc(func(context.Context, ledger.State, *provider.Request) error { ran = true; return nil }),
	)
	if !errors.Is(err, boom) || ran {
		t.Fatalf("err = %v, later option ran = %v", err, ran)
	}
}

func TestSystemPromptPlacement(t *testing.T) {
	history := []ledger.Turn{turn(ledger.RoleSystem, "base"), turn(ledger.RoleUser, "hi")}
	req := &provider.Request{Turns: history}
	if err := provider.WithSystemPrompt("extra").ApplyInvoke(context.Background(), nil, req); err != nil {
		t.Fatal(err)
	}
	got := []string{}
	for _, tu := range req.Turns {
		got = append(got, string(tu.Role)+":"+tu.Artifacts[0].(artifact.Text).Content)
	}
	if want := "system:base system:extra user:hi"; joined(got) != want {
		t.Fatalf("turns = %s, want %s", joined(got), want)
	}
	if len(history) != 2 || history[1].Role != ledger.RoleUser {
		t.Fatal("the option modified the shared history")
	}
}

func TestExtensions(t *testing.T) {
	type key struct{}
	req := &provider.Request{}
	if _, ok := req.Extension(key{}); ok {
		t.Fatal("extension on an empty request")
	}
	req.SetExtension(key{}, 3)
	if v, ok := req.Extension(key{}); !ok || v != 3 {
		t.Fatalf("extension = %v, %v", v, ok)
	}
}

func joined(s []string) string {
	out := ""
	for i, x := range s {
		if i > 0 {
			out += " "
		}
		out += x
	}
	return out
}

func TestEmptySystemPromptAddsNothing(t *testing.T) {
	history := []ledger.Turn{turn(ledger.RoleUser, "hi")}
	req := &provider.Request{Turns: history}
	if err := provider.WithSystemPrompt("").ApplyInvoke(context.Background(), nil, req); err != nil {
		t.Fatal(err)
	}
	if len(req.Turns) != 1 || req.Turns[0].Role != ledger.RoleUser {
		t.Fatalf("turns = %+v", req.Turns)
	}
}

// What an option shares with its caller cannot be written through by an
// adapter that appends to the request.
func TestOptionSlicesAreClipped(t *testing.T) {
	tools := make([]tool.Tool, 1, 4)
	stops := make([]string, 1, 4)
	req := &provider.Request{}
	if err := provider.Resolve(context.Background(), nil, req, provider.WithTools(tools), provider.WithStop(stops...)); err != nil {
		t.Fatal(err)
	}
	_ = append(req.Tools, tool.Tool{Name: "intruder"})
	_ = append(req.Stop, "intruder")
	if tools[:2][1].Name != "" || stops[:2][1] != "" {
		t.Fatal("an append to the request wrote into the caller's slice")
	}
}

func TestWithResponseFormat(t *testing.T) {
	f := provider.ResponseFormat{Type: provider.ResponseFormatJSONSchema, Name: "n", Schema: []byte(`{"type":"object"}`)}
	req := &provider.Request{}
	if err := provider.Resolve(context.Background(), ledger.NewThread(), req, provider.WithResponseFormat(f)); err != nil {
		t.Fatal(err)
	}
	if req.ResponseFormat == nil || req.ResponseFormat.Name != "n" || string(req.ResponseFormat.Schema) != `{"type":"object"}` {
		t.Fatalf("response format %+v", req.ResponseFormat)
	}
	// Each resolution gets its own value: changing one request's format
	// leaves the next alone.
	req2 := &provider.Request{}
	opt := provider.WithResponseFormat(f)
	_ = provider.Resolve(context.Background(), ledger.NewThread(), req2, opt)
	req2.ResponseFormat.Name = "changed"
	req3 := &provider.Request{}
	_ = provider.Resolve(context.Background(), ledger.NewThread(), req3, opt)
	if req3.ResponseFormat.Name != "n" {
		t.Fatalf("a request's change reached the option: %q", req3.ResponseFormat.Name)
	}
}
