package responses

import (
	"reflect"
	"testing"

	"github.com/lodeworks/lode/artifact"
	"github.com/lodeworks/lode/ledger"
	"github.com/lodeworks/lode/provider"
	"github.com/lodeworks/lode/x/provider/internal/providertest"
)

// What guards leave in a history goes out as the API takes it: a turn
// with nothing left to send is no item, a tripwire is never sent, and the
// user message after a stopped one follows it as it is.
func TestStoppedTurns(t *testing.T) {
	want := map[string]string{
		providertest.StoppedAnswer: `[
			{"type": "message", "role": "user", "content": "hi"},
			{"type": "message", "role": "user", "content": "next"}]`,
		providertest.StoppedInput: `[
			{"type": "message", "role": "user", "content": "next"}]`,
		providertest.StoppedResult: `[
			{"type": "message", "role": "user", "content": "a"},
			{"type": "function_call", "call_id": "c1", "name": "lookup", "arguments": "{\"q\":\"x\"}"},
			{"type": "function_call_output", "call_id": "c1", "output": "stopped: guard \"secrets\" withheld this result: it holds a key"},
			{"type": "message", "role": "user", "content": "b"}]`,
		providertest.TripwireAnywhere: `[
			{"type": "message", "role": "system", "content": "Be brief."},
			{"type": "message", "role": "user", "content": "hi"},
			{"type": "message", "role": "assistant", "content": "hello"},
			{"type": "message", "role": "user", "content": "next"}]`,
	}
	for _, c := range providertest.StoppedHistories() {
		t.Run(c.Name, func(t *testing.T) {
			f := newFake(t, sse(textAnswer("ok")...))
			if _, _, err := providertest.CollectContext(t.Context(), f.provider(t), &provider.Request{Turns: c.Turns}); err != nil {
				t.Fatal(err)
			}
			got := f.requests()[0]
			wantBody := asJSON(t, `{"model": "gpt-test", "stream": true, "store": false, "include": ["reasoning.encrypted_content"], "input": `+want[c.Name]+`}`)
			if !reflect.DeepEqual(got.Body, wantBody) {
				t.Errorf("body =\n%s\nwant\n%s", got.Raw, mustJSON(wantBody))
			}
		})
	}
}

// With chaining, a stopped answer names no response: the chain goes on
// from the answer before it, and the user messages since then are sent.
func TestStoppedTurnsChained(t *testing.T) {
	turns := append([]ledger.Turn{
		{Role: ledger.RoleUser, Artifacts: []artifact.Artifact{artifact.Text{Content: "go"}}},
		{Role: ledger.RoleAssistant, Artifacts: []artifact.Artifact{
			artifact.Text{Content: "gone"}, artifact.Reasoning{Field: FieldResponseID, Data: "resp_1"}, artifact.Usage{InputTokens: 1},
		}},
	}, providertest.StoppedTurns(providertest.StoppedAnswer)...)
	f := newFake(t, sse(textAnswer("ok")...))
	if _, _, err := providertest.CollectContext(t.Context(), f.provider(t, WithPreviousResponse(true)), &provider.Request{Turns: turns}); err != nil {
		t.Fatal(err)
	}
	got := f.requests()[0]
	want := asJSON(t, `{"model": "gpt-test", "stream": true, "store": true, "previous_response_id": "resp_1", "input": [
		{"type": "message", "role": "user", "content": "hi"},
		{"type": "message", "role": "user", "content": "next"}]}`)
	if !reflect.DeepEqual(got.Body, want) {
		t.Errorf("body =\n%s\nwant\n%s", got.Raw, mustJSON(want))
	}
}

// Through loop.Run with a guard: after a stopped answer and a stopped
// message, the next request holds the user's first and last messages and
// nothing of what was stopped.
func TestLoopAfterTrips(t *testing.T) {
	f := newFake(t, sse(textAnswer("a "+providertest.Forbidden+" answer")...), sse(textAnswer("ok")...))
	providertest.RunGuarded(t, f.provider(t))
	reqs := f.requests()
	if len(reqs) != 2 {
		t.Fatalf("%d requests, want 2", len(reqs))
	}
	want := asJSON(t, `[{"type": "message", "role": "user", "content": "hi"}, {"type": "message", "role": "user", "content": "next"}]`)
	if got := reqs[1].Body["input"]; !reflect.DeepEqual(got, want) {
		t.Errorf("input =\n%s\nwant\n%s", mustJSON(got), mustJSON(want))
	}
}
