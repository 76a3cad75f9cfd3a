package memory_test

import (
	"context"
	"encoding/json"
	"errors"
	"iter"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/lodeworks/lode/artifact"
	"github.com/lodeworks/lode/ledger"
	"github.com/lodeworks/lode/loop"
	"github.com/lodeworks/lode/provider"
	"github.com/lodeworks/lode/tool"
	"github.com/lodeworks/lode/x/auth"
	"github.com/lodeworks/lode/x/history"
	"github.com/lodeworks/lode/x/memory"
	xtool "github.com/lodeworks/lode/x/tool"
)

// cacheServer is a model with a prompt cache: each request reads from
// its cache the turns it shares, from the start, with the request before
// it, and reports them as cached input (one token a byte).
type cacheServer struct {
	mu   sync.Mutex
	reqs [][]string
}

func render(req *provider.Request) []string {
	out := make([]string, len(req.Turns))
	for i, t := range req.Turns {
		b, _ := json.Marshal(t.Artifacts)
		out[i] = string(t.Role) + ":" + string(b)
	}
	return out
}

func (c *cacheServer) Invoke(_ context.Context, req *provider.Request) iter.Seq2[artifact.Artifact, error] {
	turns := render(req)
	c.mu.Lock()
	var prev []string
	if n := len(c.reqs); n > 0 {
		prev = c.reqs[n-1]
	}
	c.reqs = append(c.reqs, turns)
	c.mu.Unlock()
	var input, cached int64
	shared := sharedTurns(prev, turns)
	for i, t := range turns {
		input += int64(len(t))
		if i < shared {
			cached += int64(len(t))
		}
	}
	if last := req.Turns[len(req.Turns)-1]; last.Role != ledger.RoleTool {
		// Each message takes a tool call first, so a run sends two
		// requests.
		return func(yield func(artifact.Artifact, error) bool) {
			_ = yield(artifact.ToolCall{ID: "c" + strconv.Itoa(len(turns)), Name: "clock", Arguments: "{}"}, nil) &&
				yield(artifact.Usage{InputTokens: input, CachedInputTokens: cached}, nil) &&
				yield(artifact.Finish{Reason: "tool_calls"}, nil)
		}
	}
	return func(yield func(artifact.Artifact, error) bool) {
		_ = yield(artifact.Text{Content: "Noted."}, nil) &&
			yield(artifact.Usage{InputTokens: input, CachedInputTokens: cached}, nil) &&
			yield(artifact.Finish{Reason: "stop"}, nil)
	}
}

// sharedTurns is how many turns a and b share from the start.
func sharedTurns(a, b []string) int {
	n := 0
	for n < len(a) && n < len(b) && a[n] == b[n] {
		n++
	}
	return n
}

// conversation is a user's messages, each about a fact saved before.
var conversation = []string{
	"Where do I live again?",
	"What is my dog called?",
	"Which language am I learning?",
	"When is my sister's wedding?",
	"What do I drink in the morning?",
	"What car do I drive?",
}

var aliceFacts = []string{
	"Alice lives in Lisbon.",
	"Alice's dog is called Biscuit.",
	"Alice is learning Japanese as a language.",
	"Alice's sister's wedding is on 12 June.",
	"Alice drinks green tea in the morning.",
	"Alice drives a blue car.",
}

// factsInSystem is what peers do: the facts for the newest message in the
// system prompt, which changes with every message.
func factsInSystem(store memory.Store) provider.InvokeOption {
	return provider.OptionFunc(func(ctx context.Context, st ledger.State, req *provider.Request) error {
		turns := st.Turns()
		var q string
		for i := len(turns) - 1; i >= 0 && q == ""; i-- {
			if turns[i].Role == ledger.RoleUser {
				q = turns[i].Artifacts[0].(artifact.Text).Content
			}
		}
		sc, _ := memory.ThreadScope(st)
		facts, _ := store.Search(ctx, sc, q, 0)
		text := "You are helpful. Facts about the user:"
		for _, f := range facts {
			text += "\n- " + f.Text
		}
		return provider.WithSystemPrompt(text).ApplyInvoke(ctx, st, req)
	})
}

// converse runs conversation on one thread with opt and returns the
// requests sent and the cache-lost events seen.
func converse(t *testing.T, id auth.Identity, opts ...provider.InvokeOption) (*cacheServer, []history.CacheLostEvent, ledger.State) {
	t.Helper()
	reg := tool.NewRegistry()
	_ = reg.Register(tool.Tool{Name: "clock", Schema: json.RawMessage(`{"type":"object"}`)},
		func(context.Context, tool.Sandbox, map[string]any) (any, error) { return "noon", nil })
	var mu sync.Mutex
	var lost []history.CacheLostEvent
	srv := &cacheServer{}
	step := loop.New(loop.WithHandlers(history.NewCacheWatch(), xtool.NewHandler(reg)), loop.WithMaxTurns(4),
		loop.WithObserver(loop.EmitterFunc(func(_ context.Context, ev loop.Event) {
			if l, ok := ev.(history.CacheLostEvent); ok {
				mu.Lock()
				lost = append(lost, l)
				mu.Unlock()
			}
		})),
		loop.WithInvokeOptions(opts...))
	th := ledger.NewThread(ledger.WithMetadata(id.Metadata()))
	for _, m := range conversation {
		if err := th.Append(ledger.RoleUser, artifact.Text{Content: m}); err != nil {
			t.Fatal(err)
		}
		if _, err := step.Run(context.Background(), th, srv); err != nil {
			t.Fatal(err)
		}
	}
	if err := step.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	return srv, lost, th
}

func saveAlice(t *testing.T, store memory.Store) {
	t.Helper()
	sc, _ := memory.ScopeOf(alice)
	if _, err := store.Save(context.Background(), sc, aliceFacts...); err != nil {
		t.Fatal(err)
	}
}

// TestRecallKeepsThePromptCache holds a six-message conversation with
// recall on: every request begins with the one before it, the watch sees
// no lost cache, and each message's facts are sent after it. The same
// facts in the system prompt lose the cache at every message.
func TestRecallKeepsThePromptCache(t *testing.T) {
	store := openFile(t)
	defer store.Close()
	saveAlice(t, store)

	srv, lost, th := converse(t, alice, provider.WithSystemPrompt("You are helpful."), memory.Recall(store, memory.WithLimit(1)))
	if len(lost) != 0 {
		t.Errorf("recall lost the cache: %+v", lost)
	}
	if len(srv.reqs) != 2*len(conversation) {
		t.Fatalf("%d requests, want %d", len(srv.reqs), 2*len(conversation))
	}
	for i := 1; i < len(srv.reqs); i++ {
		if n := sharedTurns(srv.reqs[i-1], srv.reqs[i]); n != len(srv.reqs[i-1]) {
			t.Errorf("request %d shares %d of the %d turns of the one before", i, n, len(srv.reqs[i-1]))
		}
	}
	for i, req := range srv.reqs {
		if i%2 == 0 {
			last := req[len(req)-1]
			if !strings.Contains(last, memory.RecallURI) || !strings.Contains(last, jsonText(aliceFacts[i/2])) {
				t.Errorf("request %d ends with %s, want the recall of %q", i, last, aliceFacts[i/2])
			}
		}
		if strings.Contains(req[0], "Alice") {
			t.Errorf("request %d's system prompt holds a fact: %s", i, req[0])
		}
	}
	if _, ok := ledger.HasLabel(th, ledger.LabelPrivate); !ok {
		t.Errorf("a thread with recalled facts is not labelled private")
	}

	_, lost, _ = converse(t, alice, factsInSystem(store))
	if len(lost) != len(conversation)-1 {
		t.Errorf("facts in the system prompt lost the cache %d times, want %d", len(lost), len(conversation)-1)
	}
}

func jsonText(s string) string {
	b, _ := json.Marshal(s)
	return strings.Trim(string(b), `"`)
}

// TestRecallScope adds alice's facts to alice's threads only: bob, alice
// in another tenant, an anonymous caller and a role WithRoles leaves out
// get nothing added and nothing stored.
func TestRecallScope(t *testing.T) {
	store := openFile(t)
	defer store.Close()
	saveAlice(t, store)
	for _, tc := range []struct {
		name string
		id   auth.Identity
		opts []memory.Option
		want bool
	}{
		{"alice", alice, nil, true},
		{"bob", bob, nil, false},
		{"alice in another tenant", aliceOther, nil, false},
		{"anonymous", auth.Identity{}, nil, false},
		{"a role not allowed", alice, []memory.Option{memory.WithRoles("admin")}, false},
		{"a role allowed", alice, []memory.Option{memory.WithRoles("admin", "staff")}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			th := ledger.NewThread(ledger.WithMetadata(tc.id.Metadata()))
			_ = th.Append(ledger.RoleUser, artifact.Text{Content: "Alice: where do I live? acme alice Lisbon"})
			req := &provider.Request{Turns: th.Turns()}
			if err := memory.Recall(store, tc.opts...).ApplyInvoke(context.Background(), th, req); err != nil {
				t.Fatal(err)
			}
			got := th.Len() == 2 && memory.IsRecall(th.Turns()[1])
			if got != tc.want || len(req.Turns) != th.Len() {
				t.Fatalf("recalled %v (thread %d turns, request %d), want %v", got, th.Len(), len(req.Turns), tc.want)
			}
			if _, private := ledger.HasLabel(th, ledger.LabelPrivate); private != tc.want {
				t.Errorf("labelled private %v, want %v", private, tc.want)
			}
		})
	}
}

// TestRecallOncePerMessage runs a turn with a tool call: the facts are
// added at the first model call only, and an option applied again to the
// same thread (a second request of the run) adds nothing.
func TestRecallOncePerMessage(t *testing.T) {
	store := openFile(t)
	defer store.Close()
	saveAlice(t, store)
	th := ledger.NewThread(ledger.WithMetadata(alice.Metadata()))
	_ = th.Append(ledger.RoleUser, artifact.Text{Content: "Where do I live?"})
	opt := memory.Recall(store)
	for range 3 {
		req := &provider.Request{Turns: th.Turns()}
		if err := opt.ApplyInvoke(context.Background(), th, req); err != nil {
			t.Fatal(err)
		}
	}
	if th.Len() != 2 {
		t.Fatalf("thread has %d turns, want the message and one recall", th.Len())
	}
	// A thread that ends with an answer (a page showing its tools) gets
	// nothing.
	_ = th.Append(ledger.RoleAssistant, artifact.Text{Content: "Lisbon."})
	if err := opt.ApplyInvoke(context.Background(), th, &provider.Request{Turns: th.Turns()}); err != nil || th.Len() != 3 {
		t.Fatalf("after an answer: %v, %d turns", err, th.Len())
	}
}

type failingStore struct{ memory.Store }

func (failingStore) Search(context.Context, memory.Scope, string, int) ([]memory.Fact, error) {
	return nil, errors.New("disk on fire")
}

// TestRecallStoreFails fails the turn before the model is called, with
// the user's message kept, and nothing added.
func TestRecallStoreFails(t *testing.T) {
	th := ledger.NewThread(ledger.WithMetadata(alice.Metadata()))
	_ = th.Append(ledger.RoleUser, artifact.Text{Content: "Where do I live?"})
	srv := &cacheServer{}
	_, err := loop.New(loop.WithInvokeOptions(memory.Recall(failingStore{}))).Run(context.Background(), th, srv)
	var oe *loop.OptionError
	if !errors.As(err, &oe) || !strings.Contains(err.Error(), "disk on fire") {
		t.Fatalf("err = %v, want an OptionError from the store", err)
	}
	if th.Len() != 1 || len(srv.reqs) != 0 {
		t.Fatalf("thread %d turns, %d requests; want the message kept and no request", th.Len(), len(srv.reqs))
	}
}

// TestRecallTurnText lists the facts one a line, so a fact cannot start
// a line of its own.
func TestRecallTurnText(t *testing.T) {
	turn := memory.RecallTurn([]memory.Fact{{Text: "one\n- two"}, {Text: "three"}})
	r := turn.Artifacts[0].(artifact.Resource)
	if lines := strings.Split(r.Text, "\n"); len(lines) != 3 || !slices.Contains(lines, "- one - two") {
		t.Fatalf("recall text %q", r.Text)
	}
	if !memory.IsRecall(turn) || memory.IsRecall(ledger.Turn{Role: ledger.RoleUser, Artifacts: []artifact.Artifact{artifact.Text{Content: "x"}, r}}) {
		t.Fatal("IsRecall")
	}
}
