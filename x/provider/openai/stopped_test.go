package openai

import (
	"reflect"
	"testing"

	"github.com/lodeworks/lode/provider"
	"github.com/lodeworks/lode/x/provider/internal/providertest"
)

// What guards leave in a history goes out as the API takes it: a turn
// with nothing left to send is no message, a tripwire is never sent, and
// the user message after a stopped one follows it as it is.
func TestStoppedTurns(t *testing.T) {
	want := map[string]string{
		providertest.StoppedAnswer: `[
			{"role": "user", "content": "hi"},
			{"role": "user", "content": "next"}]`,
		providertest.StoppedInput: `[
			{"role": "user", "content": "next"}]`,
		providertest.StoppedResult: `[
			{"role": "user", "content": "a"},
			{"role": "assistant", "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "lookup", "arguments": "{\"q\":\"x\"}"}}]},
			{"role": "tool", "tool_call_id": "c1", "content": "stopped: guard \"secrets\" withheld this result: it holds a key"},
			{"role": "user", "content": "b"}]`,
		providertest.TripwireAnywhere: `[
			{"role": "system", "content": "Be brief."},
			{"role": "user", "content": "hi"},
			{"role": "assistant", "content": "hello"},
			{"role": "user", "content": "next"}]`,
	}
	for _, c := range providertest.StoppedHistories() {
		t.Run(c.Name, func(t *testing.T) {
			f := newFake(t, sse(textChunk("ok"), finishChunk("stop")))
			if err := drain(t.Context(), f.provider(t), &provider.Request{Turns: c.Turns}); err != nil {
				t.Fatal(err)
			}
			got := f.requests()[0]
			wantBody := toJSON(t, `{"model": "gpt-test", "stream": true, "stream_options": {"include_usage": true}, "messages": `+want[c.Name]+`}`)
			if !reflect.DeepEqual(any(got.Body), wantBody) {
				t.Errorf("body =\n%s\nwant\n%s", got.Raw, mustJSON(wantBody))
			}
		})
	}
}

// Through loop.Run with a guard: after a stopped answer and a stopped
// message, the next request holds the user's first and last messages and
// nothing of what was stopped.
func TestLoopAfterTrips(t *testing.T) {
	f := newFake(t, sse(textChunk("a "+providertest.Forbidden+" answer"), finishChunk("stop")), sse(textChunk("ok"), finishChunk("stop")))
	providertest.RunGuarded(t, f.provider(t))
	reqs := f.requests()
	if len(reqs) != 2 {
		t.Fatalf("%d requests, want 2", len(reqs))
	}
	want := toJSON(t, `[{"role": "user", "content": "hi"}, {"role": "user", "content": "next"}]`)
	if got := reqs[1].Body["messages"]; !reflect.DeepEqual(got, want) {
		t.Errorf("messages =\n%s\nwant\n%s", mustJSON(got), mustJSON(want))
	}
}
