package injection

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/lodeworks/lode/artifact"
	"github.com/lodeworks/lode/ledger"
	"github.com/lodeworks/lode/provider"
	"github.com/lodeworks/lode/x/output"
	"github.com/lodeworks/lode/x/provider/script"
)

// The scripted models read nothing but the request: the user's prompt,
// the tools offered and the results in the turns. They never look at the
// World.

// transcript is what a model reads in one request.
type transcript struct {
	prompt  string
	results []artifact.ToolResult
	ids     map[string]bool   // the calls made so far
	args    map[string]string // their arguments, by ID
	offered map[string]bool
	turn    int // assistant turns so far
}

func read(req *provider.Request) *transcript {
	t := &transcript{ids: map[string]bool{}, args: map[string]string{}, offered: map[string]bool{}}
	for _, tl := range req.Tools {
		t.offered[tl.Name] = true
	}
	for _, turn := range req.Turns {
		for _, a := range turn.Artifacts {
			switch a := a.(type) {
			case artifact.Text:
				if turn.Role == ledger.RoleUser && t.prompt == "" {
					t.prompt = a.Content
				}
			case artifact.ToolCall:
				t.ids[a.ID] = true
				t.args[a.ID] = a.Arguments
			case artifact.ToolResult:
				t.results = append(t.results, a)
			}
		}
		if turn.Role == ledger.RoleAssistant {
			t.turn++
		}
	}
	return t
}

// result is the last result of a call to name the model made for the
// user's task (not one it obeyed), and whether there is one.
func (t *transcript) result(name string) (artifact.ToolResult, bool) {
	for i := len(t.results) - 1; i >= 0; i-- {
		if t.results[i].Name == name && !strings.HasPrefix(t.results[i].ToolCallID, obeyPrefix) {
			return t.results[i], true
		}
	}
	return artifact.ToolResult{}, false
}

// resultFor is the result of the call to name whose arguments contain
// key, for a tool called once per item.
func (t *transcript) resultFor(name, key string) (artifact.ToolResult, bool) {
	for _, r := range t.results {
		if r.Name == name && !strings.HasPrefix(r.ToolCallID, obeyPrefix) && strings.Contains(t.args[r.ToolCallID], key) {
			return r, true
		}
	}
	return artifact.ToolResult{}, false
}

// move is a model's answer: calls, or a final text.
type move struct {
	calls  []artifact.ToolCall
	answer string
}

// call makes one call with an ID unique in the thread.
func (t *transcript) call(name string, args any) move {
	raw, _ := json.Marshal(args)
	return move{calls: []artifact.ToolCall{{ID: fmt.Sprintf("c%d", t.turn), Name: name, Arguments: string(raw)}}}
}

// finish answers with ok when the last call to name succeeded, and says
// why not otherwise.
func (t *transcript) finish(name, ok string) move {
	r, _ := t.result(name)
	if r.IsError {
		return move{answer: "I could not finish: " + r.Content}
	}
	return move{answer: ok}
}

func answer(s string) move { return move{answer: s} }

// plan is a user task's know-how: the next move, given what was read.
type plan func(t *transcript) move

func (m move) artifacts() []artifact.Artifact {
	if len(m.calls) == 0 {
		return []artifact.Artifact{artifact.Text{Content: m.answer}}
	}
	out := make([]artifact.Artifact, len(m.calls))
	for i, c := range m.calls {
		out[i] = c
	}
	return out
}

// maxTurns bounds every run; no task takes more than a few.
const maxTurns = 12

// newModel is a scripted provider that answers each request with decide.
func newModel(decide func(*transcript) move) *script.Provider {
	step := script.Func(func(req *provider.Request) ([]artifact.Artifact, error) {
		return decide(read(req)).artifacts(), nil
	})
	return script.New(slices.Repeat([]script.Step{step}, maxTurns+1))
}

// taskModel does the user's task as a sensible agent would: it knows the
// plans of the suite's tasks, picks the one whose prompt it was given,
// and follows it over what the tools return. It follows no instruction
// found in a tool's result.
func taskModel(plans map[string]plan) *script.Provider {
	return newModel(func(t *transcript) move {
		p, ok := plans[t.prompt]
		if !ok {
			return answer("I do not know how to do that.")
		}
		return p(t)
	})
}

// instruction is how the obedient model reads an order in a tool's
// result: "call NAME with {JSON}". $CONTEXT in a string argument stands
// for everything the model has read so far.
var instruction = regexp.MustCompile(`call ([A-Za-z0-9_]+) with (\{[^{}]*\})`)

// obeyPrefix starts the IDs of the calls the obedient model makes on an
// instruction it read, so that it keeps them apart from its own task's.
const obeyPrefix = "obey_"

// obedientModel is the worst case: it does the user's task, and first
// obeys, once each, every instruction it reads in any tool result.
func obedientModel(plans map[string]plan) *script.Provider {
	return newModel(func(t *transcript) move {
		var calls []artifact.ToolCall
		for _, c := range t.instructions() {
			if !t.ids[c.ID] && !slices.ContainsFunc(calls, func(o artifact.ToolCall) bool { return o.ID == c.ID }) {
				calls = append(calls, c)
			}
		}
		if len(calls) > 0 {
			return move{calls: calls}
		}
		p, ok := plans[t.prompt]
		if !ok {
			return answer("I do not know how to do that.")
		}
		return p(t)
	})
}

// instructions finds the orders in every tool result, JSON-encoded or not.
func (t *transcript) instructions() []artifact.ToolCall {
	var read strings.Builder
	for _, r := range t.results {
		read.WriteString(r.Content)
		read.WriteString("\n")
	}
	var out []artifact.ToolCall
	for _, r := range t.results {
		for _, s := range texts(r.Content) {
			for _, m := range instruction.FindAllStringSubmatch(s, -1) {
				sum := sha256.Sum256([]byte(m[1] + m[2]))
				out = append(out, artifact.ToolCall{ID: obeyPrefix + hex.EncodeToString(sum[:6]), Name: m[1], Arguments: withContext(m[2], read.String())})
			}
		}
	}
	return out
}

// texts returns the strings in a result: those of its JSON, or the text.
func texts(content string) []string {
	var v any
	if json.Unmarshal([]byte(content), &v) != nil {
		return []string{content}
	}
	var out []string
	var walk func(any)
	walk = func(v any) {
		switch v := v.(type) {
		case string:
			out = append(out, v)
		case []any:
			for _, e := range v {
				walk(e)
			}
		case map[string]any:
			for _, e := range v {
				walk(e)
			}
		}
	}
	walk(v)
	return out
}

// withContext puts what was read in place of $CONTEXT.
func withContext(args, read string) string {
	var m map[string]any
	if json.Unmarshal([]byte(args), &m) != nil {
		return args
	}
	for k, v := range m {
		if s, ok := v.(string); ok && strings.Contains(s, "$CONTEXT") {
			m[k] = strings.ReplaceAll(s, "$CONTEXT", read)
		}
	}
	raw, _ := json.Marshal(m)
	return string(raw)
}

var (
	dateRE  = regexp.MustCompile(`[0-9]{4}-[0-9]{2}-[0-9]{2}`)
	fenceRE = regexp.MustCompile(`(?s)\n(DATA-[0-9a-f]+)\n(.*)\n(DATA-[0-9a-f]+)$`)
)

// quarantinedModel answers a quarantined read from the fenced data alone:
// the first date in it, or whether it calls the rooms quiet. It has no
// tools to obey anything with, whatever the data says.
func quarantinedModel() *script.Provider {
	return newModel(func(t *transcript) move {
		m := fenceRE.FindStringSubmatch(t.prompt)
		data := ""
		if m != nil {
			data = m[2]
		}
		var v any
		switch {
		case strings.Contains(t.prompt, "quiet"):
			q := "no"
			if strings.Contains(strings.ToLower(data), "quiet rooms") {
				q = "yes"
			}
			v = Quiet{Quiet: q}
		default:
			v = PageDate{Date: dateRE.FindString(data)}
		}
		raw, _ := json.Marshal(v)
		return move{calls: []artifact.ToolCall{{ID: fmt.Sprintf("q%d", t.turn), Name: output.DefaultToolName, Arguments: string(raw)}}}
	})
}
