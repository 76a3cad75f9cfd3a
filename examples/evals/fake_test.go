package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"

	"github.com/lodeworks/lode/x/provider/openai/openaitest"
)

// The scripted model behind each cassette: what a good model answers to
// each case, on the chat-completions wire, with token usage as OpenAI
// reports it. Recording runs the case against these; the committed
// cassettes hold what was sent and answered.

func chunk(delta, finish string) string {
	return `{"id":"chatcmpl-eval","object":"chat.completion.chunk","created":1,"model":"gpt-4o-mini-2024-07-18",` +
		`"choices":[{"index":0,"delta":` + delta + `,"finish_reason":` + finish + `}]}`
}

func usage(in, out int) string {
	return fmt.Sprintf(`{"id":"chatcmpl-eval","object":"chat.completion.chunk","created":1,"model":"gpt-4o-mini-2024-07-18",`+
		`"choices":[],"usage":{"prompt_tokens":%d,"completion_tokens":%d,"total_tokens":%d}}`, in, out, in+out)
}

func quote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// text answers s.
func text(s string, in, out int) http.HandlerFunc {
	return openaitest.Stream(
		chunk(`{"role":"assistant","content":`+quote(s)+`}`, "null"),
		chunk(`{}`, `"stop"`),
		usage(in, out))
}

// calls answers with tool calls, given as name, arguments pairs; their IDs
// are call_<n>_<i>.
func calls(n, in, out int, nameArgs ...string) http.HandlerFunc {
	var parts []string
	for i := 0; i+1 < len(nameArgs); i += 2 {
		parts = append(parts, fmt.Sprintf(`{"index":%d,"id":"call_%d_%d","type":"function","function":{"name":%s,"arguments":%s}}`,
			i/2, n, i/2, quote(nameArgs[i]), quote(nameArgs[i+1])))
	}
	return openaitest.Stream(
		chunk(`{"role":"assistant","tool_calls":[`+strings.Join(parts, ",")+`]}`, "null"),
		chunk(`{}`, `"tool_calls"`),
		usage(in, out))
}

const calc = "calculator__eval"

var fakes = map[string][]http.HandlerFunc{
	"calc-multiply": {
		calls(1, 180, 20, calc, `{"expression":"17*23"}`),
		text("17 × 23 = 391.", 210, 9)},
	"calc-exact-fraction": {
		calls(1, 182, 22, calc, `{"expression":"1/3 + 1/6"}`),
		text("Exactly 1/2 (0.5).", 215, 10)},
	"calc-arguments-schema": {
		calls(1, 181, 18, calc, `{"expression":"2^10"}`),
		text("2 to the 10th power is 1024.", 205, 12)},
	"calc-division-by-zero": {
		calls(1, 183, 21, calc, `{"expression":"5/(3-3)"}`),
		text("5 / (3 - 3) is undefined: it divides by zero.", 230, 15)},
	"fs-read-notes": {
		calls(1, 420, 19, "filesystem__read", `{"path":"notes.txt"}`),
		text("notes.txt says the launch moved to Friday.", 470, 12)},
	"fs-list-then-read": {
		calls(1, 425, 16, "filesystem__list", `{"path":"."}`),
		calls(2, 455, 19, "filesystem__read", `{"path":"todo.md"}`),
		text("The workspace holds notes.txt and todo.md; the first to-do item is: write the docs.", 520, 24)},
	"fs-two-reads-any-order": {
		calls(1, 430, 38, "filesystem__read", `{"path":"todo.md"}`, "filesystem__read", `{"path":"notes.txt"}`),
		text("The notes say to ship the eval package first.", 560, 13)},
	"fs-summary-no-writes": {
		calls(1, 428, 19, "filesystem__read", `{"path":"notes.txt"}`),
		text("The launch moved to Friday, and the eval package ships first.", 480, 16)},
	"policy-write-refused": {
		calls(1, 300, 30, "filesystem__write", `{"path":"todo.md","content":"done"}`),
		text("I am not allowed to write files here; todo.md is unchanged.", 360, 16)},
	"policy-calls-per-turn": {
		calls(1, 170, 40, calc, `{"expression":"2+2"}`, calc, `{"expression":"3+3"}`),
		calls(2, 260, 20, calc, `{"expression":"3+3"}`),
		text("2+2 = 4 and 3+3 = 6.", 300, 14)},
	"typed-todo": {
		calls(1, 500, 19, "filesystem__read", `{"path":"todo.md"}`),
		text(`{"file":"todo.md","count":3,"items":["write the docs","record the cassettes","review the HTML report"]}`, 560, 30)},
	"judged-explanation": {
		calls(1, 185, 22, calc, `{"expression":"0.1+0.2"}`),
		text("0.1 + 0.2 is exactly 3/10: the calculator works with exact fractions, not binary floating point.", 220, 25),
		// The judge's verdict, recorded in the judge's own cassette.
		text(`{"pass":true,"score":0.9,"reason":"It states 3/10 and says the calculator keeps exact fractions."}`, 350, 28)},
	"budget-one-call": {
		calls(1, 180, 18, calc, `{"expression":"12+30"}`),
		text("12 + 30 = 42.", 205, 8)},
}
