package gemini

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/lodeworks/lode/artifact"
	"github.com/lodeworks/lode/ledger"
	"github.com/lodeworks/lode/provider"
	"github.com/lodeworks/lode/x/provider/internal/providertest"
)

// What guards leave in a history goes out as the API takes it: a turn
// with nothing left to send makes no content (the API refuses one without
// parts), a tripwire is never sent, and consecutive user turns join one
// content, as consecutive turns of one role always do here.
func TestStoppedTurns(t *testing.T) {
	want := map[string]string{
		providertest.StoppedAnswer: `"contents": [
			{"role": "user", "parts": [{"text": "hi"}, {"text": "next"}]}]`,
		providertest.StoppedInput: `"contents": [
			{"role": "user", "parts": [{"text": "next"}]}]`,
		providertest.StoppedResult: `"contents": [
			{"role": "user", "parts": [{"text": "a"}]},
			{"role": "model", "parts": [{"functionCall": {"id": "c1", "name": "lookup", "args": {"q": "x"}}}]},
			{"role": "user", "parts": [
				{"functionResponse": {"id": "c1", "name": "lookup", "response": {"error": "stopped: guard \"secrets\" withheld this result: it holds a key"}}},
				{"text": "b"}]}]`,
		providertest.TripwireAnywhere: `"systemInstruction": {"role": "user", "parts": [{"text": "Be brief."}]}, "contents": [
			{"role": "user", "parts": [{"text": "hi"}]},
			{"role": "model", "parts": [{"text": "hello"}]},
			{"role": "user", "parts": [{"text": "next"}]}]`,
		// Not a guard's doing, but as empty: a text with nothing in it is
		// no part, and a turn of such texts no content.
		"empty texts": `"contents": [
			{"role": "user", "parts": [{"text": "hi"}, {"text": "next"}]}]`,
	}
	cases := append(providertest.StoppedHistories(), providertest.Stopped{Name: "empty texts", Turns: []ledger.Turn{
		{Role: ledger.RoleSystem, Artifacts: []artifact.Artifact{artifact.Text{}}},
		{Role: ledger.RoleUser, Artifacts: []artifact.Artifact{artifact.Text{Content: "hi"}, artifact.Text{}}},
		{Role: ledger.RoleAssistant, Artifacts: []artifact.Artifact{artifact.Text{}, artifact.Finish{Reason: "cancelled"}}},
		{Role: ledger.RoleUser, Artifacts: []artifact.Artifact{artifact.Text{Content: "next"}}},
	}})
	for _, c := range cases {
		t.Run(c.Name, func(t *testing.T) {
			f := newFake(t, reply{sse: true, body: sse(okText)})
			if _, _, err := collect(newTestProvider(t, f), &provider.Request{Turns: c.Turns}); err != nil {
				t.Fatal(err)
			}
			var wantBody map[string]any
			if err := json.Unmarshal([]byte(`{"generationConfig": {}, `+want[c.Name]+`}`), &wantBody); err != nil {
				t.Fatal(err)
			}
			if got := f.last(); !reflect.DeepEqual(got, wantBody) {
				t.Errorf("body =\n%s\nwant\n%s", f.requests()[0].raw, mustJSON(t, wantBody))
			}
		})
	}
}

// Through loop.Run with a guard: after a stopped answer and a stopped
// message, the next request holds the user's first and last messages,
// joined, and nothing of what was stopped.
func TestLoopAfterTrips(t *testing.T) {
	first := `{"candidates":[{"content":{"parts":[{"text":"a ` + providertest.Forbidden + ` answer"}],"role":"model"},"finishReason":"STOP"}]}`
	f := newFake(t, reply{sse: true, body: sse(first)}, reply{sse: true, body: sse(okText)})
	providertest.RunGuarded(t, newTestProvider(t, f))
	reqs := f.requests()
	if len(reqs) != 2 {
		t.Fatalf("%d requests, want 2", len(reqs))
	}
	if got, want := mustJSON(t, reqs[1].body["contents"]), `[{"parts":[{"text":"hi"},{"text":"next"}],"role":"user"}]`; got != want {
		t.Errorf("contents =\n%s\nwant\n%s", got, want)
	}
}
