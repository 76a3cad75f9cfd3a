package web_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"iter"
	"net/http/httptest"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/lodeworks/lode/artifact"
	"github.com/lodeworks/lode/ledger"
	"github.com/lodeworks/lode/ledger/file"
	"github.com/lodeworks/lode/loop"
	"github.com/lodeworks/lode/provider"
	"github.com/lodeworks/lode/tool"
	"github.com/lodeworks/lode/x/conduit/web"
	xtool "github.com/lodeworks/lode/x/tool"
)

// reply is one model answer of a replies provider. With a gate, the
// answer streams its first word and waits for the gate (or for its turn
// to be cancelled) before the rest.
type reply struct {
	arts []artifact.Artifact
	gate chan struct{}
}

// replies answers each invocation with the next reply and keeps the
// requests.
type replies struct {
	mu   sync.Mutex
	next []*reply
	reqs []*provider.Request
}

func (p *replies) Invoke(ctx context.Context, req *provider.Request) iter.Seq2[artifact.Artifact, error] {
	p.mu.Lock()
	p.reqs = append(p.reqs, req)
	var r *reply
	if len(p.next) > 0 {
		r, p.next = p.next[0], p.next[1:]
	}
	p.mu.Unlock()
	return func(yield func(artifact.Artifact, error) bool) {
		if r == nil {
			yield(nil, errors.New("replies: no replies left"))
			return
		}
		if r.gate != nil {
			// Streamed as a model does: deltas that make the text, then
			// the text.
			text := r.arts[0].(artifact.Text).Content
			first := strings.Fields(text)[0]
			if !yield(artifact.TextDelta{Content: first}, nil) {
				return
			}
			select {
			case <-r.gate:
			case <-ctx.Done():
				yield(nil, ctx.Err())
				return
			}
			if !yield(artifact.TextDelta{Content: text[len(first):]}, nil) {
				return
			}
		}
		for _, a := range r.arts {
			if !yield(a, nil) {
				return
			}
		}
	}
}

func (p *replies) requests() []*provider.Request {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.reqs
}

func gated(text string) *reply {
	return &reply{arts: []artifact.Artifact{artifact.Text{Content: text}}, gate: make(chan struct{})}
}

func answer(arts ...artifact.Artifact) *reply { return &reply{arts: arts} }

// sdkChat is the AI SDK's Chat of one version, run by testdata/node/chat.mjs.
type sdkChat struct {
	t   *testing.T
	in  io.WriteCloser
	out *bufio.Scanner
}

type sdkState struct {
	Status   string       `json:"status"`
	Error    string       `json:"error"`
	Errors   []string     `json:"errors"`
	Messages []sdkMessage `json:"messages"`
}

type sdkMessage struct {
	ID       string           `json:"id"`
	Role     string           `json:"role"`
	Parts    []map[string]any `json:"parts"`
	Metadata map[string]any   `json:"metadata"`
}

func startChat(t *testing.T, version, api, chatID string) *sdkChat {
	t.Helper()
	node, reader := requireAISDK(t)
	cmd := exec.Command(node, filepath.Join(filepath.Dir(reader), "chat.mjs"), version, api, chatID)
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		in.Close()
		if err := cmd.Wait(); err != nil {
			t.Errorf("chat.mjs: %v\n%s", err, stderr.String())
		}
	})
	sc := bufio.NewScanner(out)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	return &sdkChat{t: t, in: in, out: sc}
}

// do runs one step and returns what the Chat holds after it; the SDK
// must have reported no error.
func (c *sdkChat) do(cmd map[string]any) sdkState {
	c.t.Helper()
	b, _ := json.Marshal(cmd)
	if _, err := c.in.Write(append(b, '\n')); err != nil {
		c.t.Fatal(err)
	}
	if !c.out.Scan() {
		c.t.Fatalf("chat.mjs ended during %s: %v", b, c.out.Err())
	}
	var st sdkState
	if err := json.Unmarshal(c.out.Bytes(), &st); err != nil {
		c.t.Fatalf("chat.mjs printed %q: %v", c.out.Text(), err)
	}
	if len(st.Errors) > 0 || st.Error != "" || st.Status == "error" {
		c.t.Fatalf("after %s the SDK reports %s %q %v", b, st.Status, st.Error, st.Errors)
	}
	return st
}

// sdkFixture serves a Handler whose "add" waits for approval and whose
// "mul" does not.
func sdkFixture(t *testing.T, prov provider.Provider) (*httptest.Server, ledger.Store) {
	t.Helper()
	store, err := file.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	reg := tool.NewRegistry()
	type pair struct {
		A int `json:"a"`
		B int `json:"b"`
	}
	if err := tool.RegisterFunc(reg, "add", "adds a and b", func(_ context.Context, p pair) (int, error) { return p.A + p.B, nil }); err != nil {
		t.Fatal(err)
	}
	if err := tool.RegisterFunc(reg, "mul", "multiplies a and b", func(_ context.Context, p pair) (int, error) { return p.A * p.B, nil }); err != nil {
		t.Fatal(err)
	}
	h, err := web.New(prov, store, quiet(), web.WithLoopOptions(
		loop.WithHandlers(xtool.NewHandler(reg, xtool.WithApprover(xtool.PauseForDecision), xtool.WithApprovalFor("add"))),
		loop.WithInvokeOptions(xtool.WithFilteredTools(reg, nil)),
	))
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(func() {
		srv.CloseClientConnections()
		h.Close()
		srv.Close()
		store.Close()
	})
	return srv, store
}

// normal is a message as compared: its role, its ID when it is the
// assistant's (the server names those), per part what a person sees, and
// the usage in its metadata.
func normal(msg sdkMessage) map[string]any {
	role, id := msg.Role, msg.ID
	var ps []map[string]any
	for _, p := range msg.Parts {
		ty, _ := p["type"].(string)
		if strings.HasPrefix(ty, "data-") {
			continue // the page's approval card; not the SDK's
		}
		n := map[string]any{"type": ty}
		for _, k := range []string{"text", "toolCallId", "input", "output", "errorText"} {
			if v, ok := p[k]; ok && v != nil && v != "" {
				n[k] = v
			}
		}
		if strings.HasPrefix(ty, "tool-") {
			n["state"] = p["state"]
			if a, ok := p["approval"].(map[string]any); ok {
				n["approved"] = a["approved"]
			}
		}
		ps = append(ps, n)
	}
	m := map[string]any{"role": role, "parts": ps}
	if role == "assistant" {
		m["id"] = id
	}
	if u, ok := msg.Metadata["usage"]; ok {
		m["usage"] = u
	}
	return m
}

// checkStored compares the Chat's messages with the stored thread, as
// GET /api/threads/{id} replays it.
func checkStored(t *testing.T, srv *httptest.Server, id, step string, got sdkState) {
	t.Helper()
	resp, err := srv.Client().Get(srv.URL + "/api/threads/" + id)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var v struct {
		Running  bool         `json:"running"`
		Messages []sdkMessage `json:"messages"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&v); err != nil {
		t.Fatal(err)
	}
	if v.Running {
		t.Fatalf("%s: a turn still runs on the thread", step)
	}
	var client, stored []map[string]any
	for _, m := range got.Messages {
		client = append(client, normal(m))
	}
	for _, m := range v.Messages {
		stored = append(stored, normal(m))
	}
	if !reflect.DeepEqual(client, stored) {
		c, _ := json.MarshalIndent(client, "", " ")
		s, _ := json.MarshalIndent(stored, "", " ")
		t.Fatalf("%s: the Chat holds\n%s\nthe stored thread is\n%s", step, c, s)
	}
}

// lastParts is the part types and states of the last message.
func lastParts(st sdkState) []string {
	if len(st.Messages) == 0 {
		return nil
	}
	return partTypes(st.Messages[len(st.Messages)-1].Parts)
}

// TestSDKChat drives the AI SDK's own Chat, of ai 6 and ai 7, through a
// conversation: a tool, an approval approved and one denied, a
// regenerate, a reload mid-stream and its resume, a stop and an edited
// message; after each step the Chat's messages, usage metadata included,
// must be the stored thread's.
func TestSDKChat(t *testing.T) {
	for _, version := range []string{"6", "7"} {
		t.Run("ai"+version, func(t *testing.T) {
			story, again := gated("Once upon a time."), gated("Twice told.")
			prov := &replies{next: []*reply{
				answer(artifact.ToolCall{ID: "m1", Name: "mul", Arguments: `{"a":6,"b":7}`}, artifact.Usage{InputTokens: 10, OutputTokens: 2}),
				answer(artifact.Text{Content: "42."}, artifact.Usage{InputTokens: 20, OutputTokens: 3}),
				answer(artifact.ToolCall{ID: "a1", Name: "add", Arguments: `{"a":2,"b":3}`}, artifact.Usage{InputTokens: 5, OutputTokens: 1}),
				answer(artifact.Text{Content: "It is 5."}, artifact.Usage{InputTokens: 7, OutputTokens: 1, CachedInputTokens: 4}),
				answer(artifact.ToolCall{ID: "a2", Name: "add", Arguments: `{"a":1,"b":1}`}),
				answer(artifact.Text{Content: "I will not add."}),
				answer(artifact.Text{Content: "1 and 1 make 2, without a tool."}),
				story,
				again,
				answer(artifact.Text{Content: "Done."}),
				answer(artifact.Text{Content: "Done, politely."}),
			}}
			srv, _ := sdkFixture(t, prov)
			const id = "sdk-chat-1"
			chat := startChat(t, version, srv.URL+"/api/chat", id)
			check := func(step string, st sdkState, want []string) {
				t.Helper()
				if got := lastParts(st); !reflect.DeepEqual(got, want) {
					t.Fatalf("%s: the last message holds %v, want %v", step, got, want)
				}
				checkStored(t, srv, id, step, st)
			}

			st := chat.do(map[string]any{"op": "send", "text": "what is 6 times 7?"})
			check("a tool", st, []string{"step-start/", "tool-mul/output-available", "step-start/", "text/done"})

			st = chat.do(map[string]any{"op": "send", "text": "add 2 and 3"})
			check("a call that waits", st, []string{"step-start/", "tool-add/approval-requested"})
			if a, _ := st.Messages[len(st.Messages)-1].Parts[1]["approval"].(map[string]any); a["id"] != "a1" {
				t.Errorf("a call that waits: approval %v, want id a1", a)
			} else if version == "7" && !strings.Contains(stringOr(a["requestReason"]), "requires approval for add") {
				t.Errorf("a call that waits: approval %v, want the reason (ai 7 keeps it)", a)
			}
			paused := st.Messages[len(st.Messages)-1].ID
			st = chat.do(map[string]any{"op": "approve", "id": "a1", "approved": true})
			check("approved", st, []string{"step-start/", "tool-add/output-available", "step-start/", "text/done"})
			if n, last := len(st.Messages), st.Messages[len(st.Messages)-1]; n != 4 || last.ID != paused {
				t.Fatalf("approved: %d messages, the last %s; want 4, the paused message %s continued", n, last.ID, paused)
			}
			// The continued message's usage is its whole: the paused
			// answer's and the continuation's.
			wantUsage := map[string]any{"inputTokens": 12.0, "cachedInputTokens": 4.0, "outputTokens": 2.0, "reasoningTokens": 0.0, "costUSD": 0.0, "unpriced": "the model"}
			if got := st.Messages[3].Metadata["usage"]; !reflect.DeepEqual(got, wantUsage) {
				t.Errorf("approved: the message's usage is %v, want %v", got, wantUsage)
			}

			chat.do(map[string]any{"op": "send", "text": "add 1 and 1"})
			st = chat.do(map[string]any{"op": "approve", "id": "a2", "approved": false, "reason": "not now"})
			check("denied", st, []string{"step-start/", "tool-add/output-denied", "step-start/", "text/done"})

			st = chat.do(map[string]any{"op": "regenerate"})
			check("regenerated", st, []string{"step-start/", "text/done"})
			if n := len(st.Messages); n != 6 {
				t.Fatalf("regenerated: %d messages, want 6", n)
			}
			reqs := prov.requests()
			asked := 0
			for _, tn := range reqs[len(reqs)-1].Turns {
				if tn.Role == ledger.RoleUser && reflect.DeepEqual(tn.Artifacts, []artifact.Artifact{artifact.Text{Content: "add 1 and 1"}}) {
					asked++
				}
			}
			if last := reqs[len(reqs)-1].Turns; asked != 1 || last[len(last)-1].Role != ledger.RoleUser {
				t.Fatalf("regenerated: the model read the message %d times, and last a %s turn; want once, last", asked, last[len(last)-1].Role)
			}

			// A reload while the answer streams: the new Chat, made from the
			// stored thread, resumes the stream and gets the whole answer.
			chat.do(map[string]any{"op": "send", "text": "tell me a story", "until": "text"})
			chat.do(map[string]any{"op": "reload"})
			st = chat.do(map[string]any{"op": "resume", "until": "text"})
			if got := lastParts(st); !reflect.DeepEqual(got, []string{"step-start/", "text/streaming"}) {
				t.Fatalf("resumed: the last message holds %v (%v), want the streaming text", got, st.Messages[len(st.Messages)-1].Parts)
			}
			close(story.gate)
			st = chat.do(map[string]any{"op": "wait"})
			check("resumed", st, []string{"step-start/", "text/done"})
			if text := st.Messages[len(st.Messages)-1].Parts[1]["text"]; text != "Once upon a time." {
				t.Fatalf("resumed: the answer reads %q", text)
			}
			// The finished answer replays: the Chat is the same after.
			st = chat.do(map[string]any{"op": "resume"})
			check("replayed", st, []string{"step-start/", "text/done"})

			// A stop keeps what was shown, in the Chat and the thread.
			chat.do(map[string]any{"op": "send", "text": "again", "until": "text"})
			st = chat.do(map[string]any{"op": "stop"})
			check("stopped", st, []string{"step-start/", "text/streaming"})
			st = chat.do(map[string]any{"op": "send", "text": "go on"})
			check("after the stop", st, []string{"step-start/", "text/done"})
			if n := len(st.Messages); n != 12 {
				t.Fatalf("after the stop: %d messages, want 12", n)
			}

			// An edited message replaces its original, and its answer goes.
			st = chat.do(map[string]any{"op": "edit", "id": st.Messages[10].ID, "text": "go on, please"})
			check("edited", st, []string{"step-start/", "text/done"})
			if n, text := len(st.Messages), st.Messages[10].Parts[0]["text"]; n != 12 || text != "go on, please" {
				t.Fatalf("edited: %d messages, the edited one reads %q; want 12, the new text", n, text)
			}
		})
	}
}

// branchOf is m's metadata.branch as "index/count", and its branches.
func branchOf(m sdkMessage) (string, []string) {
	b, ok := m.Metadata["branch"].(map[string]any)
	if !ok {
		return "", nil
	}
	var ids []string
	for _, v := range b["branches"].([]any) {
		ids = append(ids, v.(string))
	}
	return fmt.Sprintf("%v/%v", b["index"], b["count"]), ids
}

// sdkTexts are st's messages as role:text.
func sdkTexts(st sdkState) []string {
	var out []string
	for _, m := range st.Messages {
		var b strings.Builder
		for _, p := range m.Parts {
			if p["type"] == "text" {
				b.WriteString(stringOr(p["text"]))
			}
		}
		out = append(out, m.Role+":"+b.String())
	}
	return out
}

// TestSDKChatBranches drives the AI SDK's own Chat, of ai 6 and ai 7,
// through an edit of its first message, a regenerate and a message after
// them on the same Chat: each answer lands on the branch shown, and the
// thread read again says where the branches part; switching to the first
// branch gives a Chat that goes on there.
func TestSDKChatBranches(t *testing.T) {
	for _, version := range []string{"6", "7"} {
		t.Run("ai"+version, func(t *testing.T) {
			prov := &replies{next: []*reply{
				answer(artifact.Text{Content: "A1"}), answer(artifact.Text{Content: "A2"}),
				answer(artifact.Text{Content: "A3"}), answer(artifact.Text{Content: "A4"}),
				answer(artifact.Text{Content: "A5"}),
			}}
			srv, _ := sdkFixture(t, prov)
			const id = "sdk-branches-1"
			chat := startChat(t, version, srv.URL+"/api/chat", id)
			want := func(step string, st sdkState, texts ...string) {
				t.Helper()
				if st.Error != "" || len(st.Errors) > 0 {
					t.Fatalf("%s: the Chat failed: %s %v", step, st.Error, st.Errors)
				}
				if got := sdkTexts(st); !reflect.DeepEqual(got, texts) {
					t.Fatalf("%s: the Chat holds %v, want %v", step, got, texts)
				}
				checkStored(t, srv, id, step, st)
			}
			st := chat.do(map[string]any{"op": "send", "text": "hello"})
			want("sent", st, "user:hello", "assistant:A1")
			st = chat.do(map[string]any{"op": "edit", "id": st.Messages[0].ID, "text": "hi there"})
			want("edited", st, "user:hi there", "assistant:A2")
			st = chat.do(map[string]any{"op": "regenerate"})
			want("regenerated", st, "user:hi there", "assistant:A3")
			st = chat.do(map[string]any{"op": "send", "text": "more"})
			want("sent after", st, "user:hi there", "assistant:A3", "user:more", "assistant:A4")

			st = chat.do(map[string]any{"op": "reload"})
			want("reloaded", st, "user:hi there", "assistant:A3", "user:more", "assistant:A4")
			first, ids := branchOf(st.Messages[0])
			answerAt, answers := branchOf(st.Messages[1])
			if first != "2/2" || ids[0] != id || answerAt != "2/2" || len(answers) != 2 {
				t.Fatalf("reloaded: branch info %s %v and %s %v; want the edit 2/2 of [%s …] and the regenerate 2/2", first, ids, answerAt, answers, id)
			}
			if b, _ := branchOf(st.Messages[2]); b != "" {
				t.Errorf("reloaded: the message after the branches has branch info %s", b)
			}
			// The regenerate's first try is kept: switch to it.
			st = chat.do(map[string]any{"op": "switch", "branch": answers[0]})
			want("the first answer", st, "user:hi there", "assistant:A2")
			if b, _ := branchOf(st.Messages[1]); b != "1/2" {
				t.Errorf("the first answer: branch %s, want 1/2", b)
			}
			// And the first branch, where the Chat goes on.
			st = chat.do(map[string]any{"op": "switch", "branch": ids[0]})
			want("the first branch", st, "user:hello", "assistant:A1")
			st = chat.do(map[string]any{"op": "send", "text": "again"})
			want("on the first branch", st, "user:hello", "assistant:A1", "user:again", "assistant:A5")
			st = chat.do(map[string]any{"op": "reload"})
			if b, _ := branchOf(st.Messages[0]); b != "1/2" {
				t.Errorf("reloaded on the first branch: branch %s, want 1/2", b)
			}
		})
	}
}
