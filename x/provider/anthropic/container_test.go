package anthropic

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/lodeworks/lode/artifact"
	"github.com/lodeworks/lode/ledger"
	"github.com/lodeworks/lode/ledger/file"
	"github.com/lodeworks/lode/loop"
	"github.com/lodeworks/lode/provider"
)

// A code execution answer as the API sends it: the server tool's use, its
// result, text, and the container the code ran in, which a stream reports
// in message_delta and a whole message at its top level.
const (
	containerID  = "container_011CPR5CNjB747bTd36fQLFk"
	containerObj = `{"id":"container_011CPR5CNjB747bTd36fQLFk","expires_at":"2025-05-23T21:13:31.749448Z"}`
	execUse      = `{"type":"server_tool_use","id":"srvtoolu_01A2B3C4D5E6F7G8H9I0J1K2","name":"bash_code_execution","input":{}}`
	execUseWhole = `{"type":"server_tool_use","id":"srvtoolu_01A2B3C4D5E6F7G8H9I0J1K2","name":"bash_code_execution","input":{"command":"echo 4 > n.txt && cat n.txt"}}`
	execResult   = `{"type":"bash_code_execution_tool_result","tool_use_id":"srvtoolu_01A2B3C4D5E6F7G8H9I0J1K2","content":{"type":"bash_code_execution_result","stdout":"4\n","stderr":"","return_code":0,"content":[]}}`
)

// beforeExpiry is an hour before containerObj expires.
var beforeExpiry = time.Date(2025, 5, 23, 20, 13, 31, 0, time.UTC)

// msgDeltaContainer is a message_delta that reports a container.
func msgDeltaContainer(stop, container, usage string) string {
	return `{"type":"message_delta","delta":{"stop_reason":"` + stop + `","stop_sequence":null,"container":` + container + `},"usage":` + usage + `}`
}

// execEvents is the streamed answer up to its message_delta.
func execEvents() []string {
	return []string{msgStart(`{"input_tokens":45,"output_tokens":3}`),
		blockStart(0, execUse),
		blockDelta(0, `{"type":"input_json_delta","partial_json":"{\"command\":\"echo 4 > n.txt"}`),
		blockDelta(0, `{"type":"input_json_delta","partial_json":" && cat n.txt\"}"}`), blockStop(0),
		blockStart(1, execResult), blockStop(1),
		blockStart(2, `{"type":"text","text":""}`), blockDelta(2, textDelta("The file holds 4.")), blockStop(2)}
}

func execStream(container string) reply {
	return sse(append(execEvents(), msgDeltaContainer("end_turn", container, `{"output_tokens":187}`), msgStop)...)
}

// execStartStream reports the container in message_start, and null in
// message_delta.
func execStartStream() reply {
	events := execEvents()
	events[0] = `{"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","model":"claude-sonnet-4-5-20250929","container":` + containerObj +
		`,"content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":45,"output_tokens":3}}}`
	return sse(append(events, msgDeltaContainer("end_turn", "null", `{"output_tokens":187}`), msgStop)...)
}

func execMessage(container string) reply {
	return reply{body: `{"id":"msg_01BqK2v4FnRs4xTjgL8EuZxz","type":"message","role":"assistant","model":"claude-sonnet-4-5-20250929",` +
		`"container":` + container + `,"content":[` + execUseWhole + `,` + execResult + `,{"type":"text","text":"The file holds 4."}],` +
		`"stop_reason":"end_turn","stop_sequence":null,"usage":{"input_tokens":45,"output_tokens":187}}`}
}

func wholeText(s string) reply {
	b, _ := json.Marshal(s)
	return reply{body: `{"id":"msg_2","type":"message","role":"assistant","model":"claude-sonnet-4-5","content":[{"type":"text","text":` + string(b) + `}],"stop_reason":"end_turn","stop_sequence":null,"usage":{"input_tokens":1,"output_tokens":1}}`}
}

// rawField is the top-level member key of request i as sent, "" when the
// request has none.
func (f *fakeAPI) rawField(t *testing.T, i int, key string) string {
	t.Helper()
	f.mu.Lock()
	raw := f.raw[i]
	f.mu.Unlock()
	var body map[string]json.RawMessage
	if err := json.Unmarshal([]byte(raw), &body); err != nil {
		t.Fatal(err)
	}
	return string(body[key])
}

// The container an answer reports is kept in the answer as an Opaque of
// its own, after the blocks; it survives the file store byte for byte, and
// the next request names it in its container field and sends no block of
// it; streamed or not.
func TestContainerCarriedAcrossRequests(t *testing.T) {
	for _, c := range []struct {
		name   string
		stream bool
		answer reply
		next   reply
	}{
		{"streamed", true, execStream(containerObj), textAnswer("It still holds 4.")},
		{"streamed, reported at the start", true, execStartStream(), textAnswer("It still holds 4.")},
		{"whole", false, execMessage(containerObj), wholeText("It still holds 4.")},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := newFake(t, c.answer, c.next)
			p := f.provider(t, WithStreaming(c.stream), WithCache(CacheOff), WithClock(func() time.Time { return beforeExpiry }))
			ctx := t.Context()
			dir := t.TempDir()
			store, err := file.Open(dir)
			if err != nil {
				t.Fatal(err)
			}
			th, err := store.Create(ctx, ledger.WithID("exec"))
			if err != nil {
				t.Fatal(err)
			}
			if err := th.Append(ledger.RoleUser, artifact.Text{Content: "Write 4 to n.txt."}); err != nil {
				t.Fatal(err)
			}
			_, whole, err := collect(p, &provider.Request{Turns: th.Turns()})
			if err != nil {
				t.Fatal(err)
			}
			want := []artifact.Artifact{
				artifact.Opaque{Provider: "anthropic", Type: "server_tool_use", Data: execUseWhole},
				artifact.Opaque{Provider: "anthropic", Type: "bash_code_execution_tool_result", Data: execResult},
				artifact.Text{Content: "The file holds 4."},
				artifact.Opaque{Provider: "anthropic", Type: "container", Data: containerObj},
				artifact.Usage{InputTokens: 45, OutputTokens: 187},
				artifact.Finish{Reason: "stop"},
			}
			if !reflect.DeepEqual(whole, want) {
				t.Fatalf("answer =\n%#v\nwant\n%#v", whole, want)
			}
			if got := f.rawField(t, 0, "container"); got != "" {
				t.Errorf("the first request names container %s", got)
			}
			if err := th.Append(ledger.RoleAssistant, whole...); err != nil {
				t.Fatal(err)
			}
			if err := th.Append(ledger.RoleUser, artifact.Text{Content: "And now?"}); err != nil {
				t.Fatal(err)
			}
			th.Close()
			store.Close()

			store2, err := file.Open(dir)
			if err != nil {
				t.Fatal(err)
			}
			defer store2.Close()
			back, err := store2.Load(ctx, "exec")
			if err != nil {
				t.Fatal(err)
			}
			defer back.Close()
			if got := back.Turns()[1].Artifacts; !reflect.DeepEqual(got, whole) {
				t.Fatalf("the stored answer came back as\n%#v", got)
			}
			if _, _, err := collect(p, &provider.Request{Turns: back.Turns()}); err != nil {
				t.Fatal(err)
			}
			if got, want := f.rawField(t, 1, "container"), `"`+containerID+`"`; got != want {
				t.Errorf("container = %s, want %s", got, want)
			}
			wantMsgs := `[{"content":[{"text":"Write 4 to n.txt.","type":"text"}],"role":"user"},` +
				`{"content":[` + compactJSON(execUseWhole) + `,` + htmlEscaped(execResult) + `,{"text":"The file holds 4.","type":"text"}],"role":"assistant"},` +
				`{"content":[{"text":"And now?","type":"text"}],"role":"user"}]`
			if got := f.rawField(t, 1, "messages"); got != wantMsgs {
				t.Errorf("messages =\n%s\nwant\n%s", got, wantMsgs)
			}
		})
	}
}

// Through loop.Run: an answer paused in the middle of code execution is
// carried on by a request that names the container it reported, as the
// API requires, and ends with the paused answer, without the container.
func TestLoopCarriesOnPausedCodeExecution(t *testing.T) {
	paused := sse(msgStart(`{"input_tokens":45,"output_tokens":3}`),
		blockStart(0, `{"type":"text","text":""}`), blockDelta(0, textDelta("I'll run it.")), blockStop(0),
		blockStart(1, execUse),
		blockDelta(1, `{"type":"input_json_delta","partial_json":"{\"command\":\"echo 4 > n.txt && cat n.txt\"}"}`), blockStop(1),
		msgDeltaContainer("pause_turn", containerObj, `{"output_tokens":40}`), msgStop)
	later := `{"id":"container_011CPR5CNjB747bTd36fQLFk","expires_at":"2025-05-23T21:20:00Z"}`
	done := sse(append(append([]string{msgStart(`{"input_tokens":90,"output_tokens":1}`)},
		blockStart(0, execResult), blockStop(0),
		blockStart(1, `{"type":"text","text":""}`), blockDelta(1, textDelta("It printed 4.")), blockStop(1)),
		msgDeltaContainer("end_turn", later, `{"output_tokens":9}`), msgStop)...)
	f := newFake(t, paused, done, textAnswer("Yes."))
	p := f.provider(t, WithCache(CacheOff), WithClock(func() time.Time { return beforeExpiry }))
	th := ledger.NewThread()
	_ = th.Append(ledger.RoleUser, artifact.Text{Content: "Write 4 to n.txt and show it."})
	if _, err := loop.New().Run(t.Context(), th, p); err != nil {
		t.Fatal(err)
	}
	turns := th.Turns()
	if len(turns) != 3 {
		t.Fatalf("turns = %#v", turns)
	}
	if got := turns[1].Artifacts[2]; got != (artifact.Opaque{Provider: "anthropic", Type: "container", Data: containerObj}) {
		t.Errorf("the paused answer keeps %#v", got)
	}
	if got, want := f.rawField(t, 1, "container"), `"`+containerID+`"`; got != want {
		t.Errorf("the carrying-on request names container %s, want %s", got, want)
	}
	wantMsgs := `[{"content":[{"text":"Write 4 to n.txt and show it.","type":"text"}],"role":"user"},` +
		`{"content":[{"text":"I'll run it.","type":"text"},` + compactJSON(execUseWhole) + `],"role":"assistant"}]`
	if got := f.rawField(t, 1, "messages"); got != wantMsgs {
		t.Errorf("messages =\n%s\nwant\n%s", got, wantMsgs)
	}
	// The thread carries on with the container the newest answer
	// reported.
	_ = th.Append(ledger.RoleUser, artifact.Text{Content: "Is it still there?"})
	if _, _, err := collect(p, &provider.Request{Turns: th.Turns()}); err != nil {
		t.Fatal(err)
	}
	if got, want := f.rawField(t, 2, "container"), `"`+containerID+`"`; got != want {
		t.Errorf("the next request names container %s, want %s", got, want)
	}
}

// Which container a request names: the newest answer's that reported one,
// unless it has expired by the provider's clock; then none.
func TestRequestContainerExpiry(t *testing.T) {
	kept := func(id, expires string) artifact.Opaque {
		return artifact.Opaque{Provider: "anthropic", Type: "container", Data: `{"id":"` + id + `","expires_at":"` + expires + `"}`}
	}
	answer := func(arts ...artifact.Artifact) ledger.Turn {
		return ledger.Turn{Role: ledger.RoleAssistant, Artifacts: append([]artifact.Artifact{artifact.Text{Content: "a"}}, arts...)}
	}
	expires := "2025-05-23T21:13:31.749448Z"
	at := time.Date(2025, 5, 23, 21, 13, 31, 749448000, time.UTC)
	for _, c := range []struct {
		name  string
		now   time.Time
		turns []ledger.Turn
		want  string
	}{
		{"before it expires", at.Add(-time.Nanosecond), []ledger.Turn{userTurn("q"), answer(kept("c1", expires)), userTurn("r")}, `"c1"`},
		{"when it expires", at, []ledger.Turn{userTurn("q"), answer(kept("c1", expires)), userTurn("r")}, ""},
		{"after it expired", at.Add(time.Hour), []ledger.Turn{userTurn("q"), answer(kept("c1", expires)), userTurn("r")}, ""},
		{"an offset expiry", time.Date(2025, 5, 23, 19, 45, 0, 0, time.UTC),
			[]ledger.Turn{userTurn("q"), answer(kept("c1", "2025-05-23T21:30:00+02:00")), userTurn("r")}, ""},
		{"the newest report wins over an older one", at.Add(-time.Minute),
			[]ledger.Turn{userTurn("q"), answer(kept("c1", "2025-05-23T22:00:00Z")), userTurn("r"), answer(kept("c2", expires)), userTurn("s")}, `"c2"`},
		{"an expired newest is not replaced by an older one", at.Add(time.Minute),
			[]ledger.Turn{userTurn("q"), answer(kept("c1", "2025-05-23T22:00:00Z")), userTurn("r"), answer(kept("c2", expires)), userTurn("s")}, ""},
		{"an answer that reported none keeps the older one", at.Add(-time.Minute),
			[]ledger.Turn{userTurn("q"), answer(kept("c1", expires)), userTurn("r"), answer(), userTurn("s")}, `"c1"`},
		{"another adapter's or another turn's is not read", at.Add(-time.Minute),
			[]ledger.Turn{userTurn("q"), answer(artifact.Opaque{Provider: "other", Type: "container", Data: "x"}),
				{Role: ledger.RoleUser, Artifacts: []artifact.Artifact{kept("c3", expires)}}}, ""},
		{"none reported", at, []ledger.Turn{userTurn("q")}, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := newFake(t, textAnswer("ok"))
			p := f.provider(t, WithClock(func() time.Time { return c.now }))
			if _, _, err := collect(p, &provider.Request{Turns: c.turns}); err != nil {
				t.Fatal(err)
			}
			if got := f.rawField(t, 0, "container"); got != c.want {
				t.Errorf("container = %q, want %q", got, c.want)
			}
		})
	}
}

// What a container object of the wrong shape becomes, exactly: in an
// answer, ErrMalformed (streamed, after the deltas); kept in the ledger, a
// *RequestError naming the turn, nothing sent.
func TestContainerHostile(t *testing.T) {
	const malformed = `anthropic: malformed response: the answer's container is not an object with a string id and an RFC 3339 expires_at (data: %s)`
	for _, c := range []struct {
		name, container string
		want            string // the error's text; "" for an answer with no container
	}{
		{"null is none", `null`, ""},
		{"a string", `"container_011CPR5CNjB747bTd36fQLFk"`, `"\"container_011CPR5CNjB747bTd36fQLFk\""`},
		{"an array", `[]`, `"[]"`},
		{"an empty object", `{}`, `"{}"`},
		{"a number id", `{"id":5,"expires_at":"2025-05-23T21:13:31Z"}`, `"{\"id\":5,\"expires_at\":\"2025-05-23T21:13:31Z\"}"`},
		{"an empty id", `{"id":"","expires_at":"2025-05-23T21:13:31Z"}`, `"{\"id\":\"\",\"expires_at\":\"2025-05-23T21:13:31Z\"}"`},
		{"no expiry", `{"id":"c"}`, `"{\"id\":\"c\"}"`},
		{"a null expiry", `{"id":"c","expires_at":null}`, `"{\"id\":\"c\",\"expires_at\":null}"`},
		{"an expiry that is not a time", `{"id":"c","expires_at":"tomorrow"}`, `"{\"id\":\"c\",\"expires_at\":\"tomorrow\"}"`},
		{"an expiry in seconds", `{"id":"c","expires_at":1748034811}`, `"{\"id\":\"c\",\"expires_at\":1748034811}"`},
	} {
		for _, stream := range []bool{true, false} {
			name := c.name + "/whole"
			answer := execMessage(c.container)
			if stream {
				name = c.name + "/streamed"
				answer = execStream(c.container)
			}
			t.Run(name, func(t *testing.T) {
				f := newFake(t, answer)
				deltas, whole, err := collect(f.provider(t, WithStreaming(stream)), &provider.Request{Turns: []ledger.Turn{userTurn("x")}})
				if c.want == "" {
					if err != nil {
						t.Fatal(err)
					}
					for _, a := range whole {
						if o, ok := a.(artifact.Opaque); ok && o.Type == "container" {
							t.Fatalf("kept %#v", o)
						}
					}
					return
				}
				want := fmt.Sprintf(malformed, c.want)
				if err == nil || err.Error() != want || !errors.Is(err, ErrMalformed) {
					t.Fatalf("err = %v, want %s", err, want)
				}
				if len(whole) != 0 {
					t.Errorf("whole artifacts before the error: %#v", whole)
				}
				if stream && len(deltas) == 0 {
					t.Errorf("no deltas before the error")
				}
			})
		}
	}

	t.Run("a content block of the container's type", func(t *testing.T) {
		f := newFake(t, sse(msgStart(`{"input_tokens":1,"output_tokens":1}`),
			blockStart(0, `{"type":"container","id":"c","expires_at":"2025-05-23T21:13:31Z"}`), blockStop(0),
			blockStart(1, `{"type":"text","text":"ok"}`), blockStop(1),
			msgDelta("end_turn", `{"output_tokens":2}`), msgStop))
		_, whole, err := collect(f.provider(t), &provider.Request{Turns: []ledger.Turn{userTurn("x")}})
		if err != nil {
			t.Fatal(err)
		}
		want := []artifact.Artifact{artifact.Text{Content: "ok"}, artifact.Usage{InputTokens: 1, OutputTokens: 2}, artifact.Finish{Reason: "stop"}}
		if !reflect.DeepEqual(whole, want) {
			t.Fatalf("answer =\n%#v\nwant\n%#v", whole, want)
		}
	})

	for _, data := range []string{`not json`, `{"id":"c","expires_at":"later"}`, `{"id":["c"],"expires_at":"2025-05-23T21:13:31Z"}`} {
		t.Run("kept "+data, func(t *testing.T) {
			f := newFake(t, textAnswer("ok"))
			turns := []ledger.Turn{userTurn("q"), {Role: ledger.RoleAssistant, Artifacts: []artifact.Artifact{
				artifact.Text{Content: "a"}, artifact.Opaque{Provider: "anthropic", Type: "container", Data: data}}}, userTurn("r")}
			_, _, err := collect(f.provider(t), &provider.Request{Turns: turns})
			const want = `anthropic: request: turn 1 (assistant): the kept container is not an object with a string id and an RFC 3339 expires_at`
			var re *RequestError
			if err == nil || err.Error() != want || !errors.As(err, &re) || re.Turn != 1 {
				t.Fatalf("err = %v, want %s", err, want)
			}
			if n := len(f.raw); n != 0 {
				t.Errorf("%d requests sent", n)
			}
		})
	}
}
