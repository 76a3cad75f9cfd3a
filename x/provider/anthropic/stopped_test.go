package anthropic

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/lodeworks/lode/provider"
	"github.com/lodeworks/lode/x/provider/internal/providertest"
)

// What guards leave in a history goes out as the API takes it: a turn
// with nothing left to send is no message (the API refuses empty
// content), a tripwire is never sent, and the user turns on either side of
// a stopped answer join one message, as they would on the server.
func TestStoppedTurns(t *testing.T) {
	want := map[string]string{
		providertest.StoppedAnswer: `"messages": [
			{"role": "user", "content": [{"type": "text", "text": "hi"}, {"type": "text", "text": "next"}]}]`,
		providertest.StoppedInput: `"messages": [
			{"role": "user", "content": [{"type": "text", "text": "next"}]}]`,
		providertest.StoppedResult: `"messages": [
			{"role": "user", "content": [{"type": "text", "text": "a"}]},
			{"role": "assistant", "content": [{"type": "tool_use", "id": "c1", "name": "lookup", "input": {"q": "x"}}]},
			{"role": "user", "content": [
				{"type": "tool_result", "tool_use_id": "c1", "is_error": true,
				 "content": [{"type": "text", "text": "stopped: guard \"secrets\" withheld this result: it holds a key"}]},
				{"type": "text", "text": "b"}]}]`,
		providertest.TripwireAnywhere: `"system": [{"type": "text", "text": "Be brief."}], "messages": [
			{"role": "user", "content": [{"type": "text", "text": "hi"}]},
			{"role": "assistant", "content": [{"type": "text", "text": "hello"}]},
			{"role": "user", "content": [{"type": "text", "text": "next"}]}]`,
	}
	for _, c := range providertest.StoppedHistories() {
		t.Run(c.Name, func(t *testing.T) {
			f := newFake(t, textAnswer("ok"))
			if _, _, err := collect(f.provider(t, WithCache(CacheOff)), &provider.Request{Turns: c.Turns}); err != nil {
				t.Fatal(err)
			}
			var wantBody map[string]any
			if err := json.Unmarshal([]byte(`{"model": "claude-sonnet-4-5", "max_tokens": `+js(DefaultMaxTokens)+`, "stream": true, `+want[c.Name]+`}`), &wantBody); err != nil {
				t.Fatal(err)
			}
			if got := f.body(0); !reflect.DeepEqual(got, wantBody) {
				t.Errorf("body =\n%s\nwant\n%s", js(got), js(wantBody))
			}
		})
	}
}

// Through loop.Run with a guard: after a stopped answer and a stopped
// message, the next request holds the user's first and last messages,
// joined, and nothing of what was stopped.
func TestLoopAfterTrips(t *testing.T) {
	f := newFake(t, textAnswer("a "+providertest.Forbidden+" answer"), textAnswer("ok"))
	providertest.RunGuarded(t, f.provider(t, WithCache(CacheOff)))
	f.mu.Lock()
	n := len(f.bodies)
	f.mu.Unlock()
	if n != 2 {
		t.Fatalf("%d requests, want 2", n)
	}
	if got, want := js(at(f.body(1), "messages")), `[{"content":[{"text":"hi","type":"text"},{"text":"next","type":"text"}],"role":"user"}]`; got != want {
		t.Errorf("messages =\n%s\nwant\n%s", got, want)
	}
}
