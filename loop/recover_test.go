package loop_test

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/lodeworks/lode/artifact"
	"github.com/lodeworks/lode/internal/allstores"
	"github.com/lodeworks/lode/internal/pgtest"
	"github.com/lodeworks/lode/ledger"
	"github.com/lodeworks/lode/ledger/file"
	"github.com/lodeworks/lode/loop"
	"github.com/lodeworks/lode/provider"
	"github.com/lodeworks/lode/x/provider/script"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

// recoverStores opens, for each kind of store, a function that opens the
// same store again, as another process would; the test closes each.
func recoverStores(t *testing.T) map[string]func(*testing.T) ledger.Store {
	t.Helper()
	stores := allstores.Openers(t)
	for name, open := range stores {
		stores[name] = func(t *testing.T) ledger.Store {
			s := open(t)
			t.Cleanup(func() { s.Close() })
			return s
		}
	}
	return stores
}

// tools is a handler running two tools: "rm", which must not run twice,
// and "read", which is idempotent. It counts the runs of each call.
type tools struct {
	mu   sync.Mutex
	runs map[string]int
}

func (h *tools) count(id string) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.runs[id]
}

func (h *tools) Handle(ctx context.Context, a artifact.Artifact, e loop.Emitter) error {
	c, ok := a.(artifact.ToolCall)
	if !ok {
		return nil
	}
	h.mu.Lock()
	if h.runs == nil {
		h.runs = make(map[string]int)
	}
	h.runs[c.ID]++
	h.mu.Unlock()
	e.Emit(ctx, loop.TurnCompleteEvent{Role: ledger.RoleTool, Artifacts: []artifact.Artifact{
		artifact.ToolResult{ToolCallID: c.ID, Name: c.Name, Content: "ran " + c.Name}}})
	return nil
}

func (h *tools) CheckCall(context.Context, artifact.ToolCall) error { return nil }
func (h *tools) Idempotent(c artifact.ToolCall) bool                { return c.Name == "read" }

var (
	recT0   = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	recLate = recT0.Add(5 * time.Minute) // the dead owner's lease expired long ago
)

func user(s string) ledger.Turn {
	return ledger.Turn{Role: ledger.RoleUser, Artifacts: []artifact.Artifact{artifact.Text{Content: s}}}
}

func answer(arts ...artifact.Artifact) ledger.Turn {
	return ledger.Turn{Role: ledger.RoleAssistant, Artifacts: arts}
}

func toolTurn(arts ...artifact.Artifact) ledger.Turn {
	return ledger.Turn{Role: ledger.RoleTool, Artifacts: arts, Time: recT0}
}

func call(id, name string) artifact.ToolCall {
	return artifact.ToolCall{ID: id, Name: name, Arguments: `{}`}
}

// crashed stores a thread as a run that died would leave it: turns, and,
// when dead is set, the lease of the owner that died.
func crashed(t *testing.T, s ledger.Store, id string, dead bool, turns ...ledger.Turn) {
	t.Helper()
	ctx := context.Background()
	st, err := s.Create(ctx, ledger.WithID(id), ledger.WithTurns(turns...))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if dead {
		if _, err := st.AcquireLease(ctx, "dead-owner", recT0, 30*time.Second); err != nil {
			t.Fatal(err)
		}
	}
}

func lastText(t *testing.T, st ledger.State) string {
	t.Helper()
	turns := st.Turns()
	last := turns[len(turns)-1]
	if last.Role != ledger.RoleAssistant || len(last.Artifacts) != 1 {
		t.Fatalf("last turn %+v", last)
	}
	txt, ok := last.Artifacts[0].(artifact.Text)
	if !ok {
		t.Fatalf("last artifact %#v", last.Artifacts[0])
	}
	return txt.Content
}

// resultOf finds the stored result for call id.
func resultOf(st ledger.State, id string) (artifact.ToolResult, int) {
	var found artifact.ToolResult
	n := 0
	for _, tr := range st.Turns() {
		for _, a := range tr.Artifacts {
			if r, ok := a.(artifact.ToolResult); ok && r.ToolCallID == id {
				found = r
				n++
			}
		}
	}
	return found, n
}

func TestRecoverContinuesFromWhereTheRunStopped(t *testing.T) {
	type check func(t *testing.T, st ledger.State, h *tools, prov *script.Provider, rec loop.Recovery)
	cases := []struct {
		name    string
		dead    bool // a dead owner's lease is left on the thread
		turns   []ledger.Turn
		expiry  time.Duration
		replies []script.Step
		from    loop.RecoverPoint
		calls   []string
		rerun   []string
		check   check
	}{
		{
			name: "in the model stream", dead: true,
			turns:   []ledger.Turn{user("hi")},
			replies: []script.Step{script.Text("hello")},
			from:    loop.RecoverTurn,
			check: func(t *testing.T, st ledger.State, h *tools, prov *script.Provider, rec loop.Recovery) {
				if got := lastText(t, st); got != "hello" || len(st.Turns()) != 2 {
					t.Fatalf("answer %q in %d turns", got, len(st.Turns()))
				}
			},
		},
		{
			name: "inside a tool that must not run twice", dead: true,
			turns:   []ledger.Turn{user("clean"), answer(call("c1", "rm"))},
			replies: []script.Step{script.Text("done")},
			from:    loop.RecoverCalls, calls: []string{"c1"},
			check: func(t *testing.T, st ledger.State, h *tools, prov *script.Provider, rec loop.Recovery) {
				if h.count("c1") != 0 {
					t.Fatalf("rm ran %d times", h.count("c1"))
				}
				r, n := resultOf(st, "c1")
				if n != 1 || !r.IsError || r.Content != loop.InterruptedMessage {
					t.Fatalf("%d results, last %+v", n, r)
				}
				req := prov.Requests()[0]
				if last := req.Turns[len(req.Turns)-1]; last.Role != ledger.RoleTool {
					t.Fatalf("the model was not sent the interrupted result: %+v", last)
				}
				if lastText(t, st) != "done" {
					t.Fatal("no final answer")
				}
			},
		},
		{
			name: "inside an idempotent tool", dead: true,
			turns:   []ledger.Turn{user("look"), answer(call("c1", "read"), call("c2", "rm"))},
			replies: []script.Step{script.Text("seen")},
			from:    loop.RecoverCalls, calls: []string{"c1", "c2"}, rerun: []string{"c1"},
			check: func(t *testing.T, st ledger.State, h *tools, prov *script.Provider, rec loop.Recovery) {
				if h.count("c1") != 1 || h.count("c2") != 0 {
					t.Fatalf("runs: read %d, rm %d", h.count("c1"), h.count("c2"))
				}
				r1, n1 := resultOf(st, "c1")
				r2, n2 := resultOf(st, "c2")
				if n1 != 1 || r1.IsError || r1.Content != "ran read" || n2 != 1 || r2.Content != loop.InterruptedMessage {
					t.Fatalf("results %+v (%d) %+v (%d)", r1, n1, r2, n2)
				}
				turns := st.Turns()
				if tt := turns[2]; tt.Role != ledger.RoleTool || len(tt.Artifacts) != 2 || tt.Artifacts[0].(artifact.ToolResult).ToolCallID != "c1" {
					t.Fatalf("results not one tool turn in call order: %+v", tt)
				}
			},
		},
		{
			name: "between a tool result and the next turn", dead: true,
			turns: []ledger.Turn{user("clean"), answer(call("c1", "rm")),
				toolTurn(artifact.ToolResult{ToolCallID: "c1", Name: "rm", Content: "ran rm"})},
			replies: []script.Step{script.Text("cleaned")},
			from:    loop.RecoverTurn,
			check: func(t *testing.T, st ledger.State, h *tools, prov *script.Provider, rec loop.Recovery) {
				if h.count("c1") != 0 {
					t.Fatal("a finished call ran again")
				}
				if _, n := resultOf(st, "c1"); n != 1 || lastText(t, st) != "cleaned" {
					t.Fatalf("%d results", n)
				}
			},
		},
		{
			name: "after the final answer", dead: true,
			turns: []ledger.Turn{user("hi"), answer(artifact.Text{Content: "bye"})},
			from:  loop.RecoverDone,
			check: func(t *testing.T, st ledger.State, h *tools, prov *script.Provider, rec loop.Recovery) {
				if len(prov.Requests()) != 0 || len(st.Turns()) != 2 {
					t.Fatalf("a finished run went on: %d requests", len(prov.Requests()))
				}
			},
		},
		{
			name: "before any turn", dead: true,
			from: loop.RecoverDone,
			check: func(t *testing.T, st ledger.State, h *tools, prov *script.Provider, rec loop.Recovery) {
				if len(prov.Requests()) != 0 || len(st.Turns()) != 0 {
					t.Fatalf("an empty thread went on: %d requests", len(prov.Requests()))
				}
			},
		},
		{
			name: "paused for approval", dead: true,
			turns: []ledger.Turn{user("clean"), answer(call("c1", "rm")),
				toolTurn(artifact.Pending{ToolCallID: "c1", Name: "rm", Arguments: `{}`})},
			from: loop.RecoverPending,
			check: func(t *testing.T, st ledger.State, h *tools, prov *script.Provider, rec loop.Recovery) {
				var pe *loop.PendingError
				if !errors.As(rec.Err, &pe) || len(pe.Calls) != 1 || pe.Calls[0].ToolCallID != "c1" {
					t.Fatalf("err %v", rec.Err)
				}
				if len(prov.Requests()) != 0 || len(loop.Pending(st)) != 1 || len(st.Turns()) != 3 {
					t.Fatal("a pending call did not stay pending")
				}
			},
		},
		{
			name: "paused past the approval expiry", dead: false, expiry: time.Minute,
			turns: []ledger.Turn{user("clean"), answer(call("c1", "rm")),
				toolTurn(artifact.Pending{ToolCallID: "c1", Name: "rm", Arguments: `{}`})},
			replies: []script.Step{script.Text("not cleaned")},
			from:    loop.RecoverApproval, calls: []string{"c1"},
			check: func(t *testing.T, st ledger.State, h *tools, prov *script.Provider, rec loop.Recovery) {
				if h.count("c1") != 0 {
					t.Fatal("an expired call ran")
				}
				r, n := resultOf(st, "c1")
				if n != 1 || !r.IsError || !strings.Contains(r.Content, loop.ApprovalExpiredReason) {
					t.Fatalf("result %+v", r)
				}
				var d artifact.Decision
				for _, a := range st.Turns()[3].Artifacts {
					if x, ok := a.(artifact.Decision); ok {
						d = x
					}
				}
				if d.Approved || d.By != "lode worker" || d.Reason != loop.ApprovalExpiredReason {
					t.Fatalf("decision %+v", d)
				}
				if lastText(t, st) != "not cleaned" {
					t.Fatal("no final answer")
				}
			},
		},
		{
			name: "inside a call approved before", dead: true,
			turns: []ledger.Turn{user("clean"), answer(call("c1", "rm")),
				toolTurn(artifact.Pending{ToolCallID: "c1", Name: "rm", Arguments: `{}`}),
				toolTurn(artifact.Decision{ToolCallID: "c1", Name: "rm", Approved: true, By: "ann"})},
			replies: []script.Step{script.Text("maybe cleaned")},
			from:    loop.RecoverCalls, calls: []string{"c1"},
			check: func(t *testing.T, st ledger.State, h *tools, prov *script.Provider, rec loop.Recovery) {
				if h.count("c1") != 0 {
					t.Fatal("an approved call ran twice")
				}
				if r, n := resultOf(st, "c1"); n != 1 || r.Content != loop.InterruptedMessage {
					t.Fatalf("result %+v", r)
				}
			},
		},
	}
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			for name, open := range recoverStores(t) {
				t.Run(name, func(t *testing.T) {
					s := open(t)
					id := fmt.Sprintf("t%d", i)
					crashed(t, s, id, c.dead, c.turns...)
					h := &tools{}
					var events []loop.Event
					var mu sync.Mutex
					obs := loop.EmitterFunc(func(_ context.Context, ev loop.Event) {
						mu.Lock()
						events = append(events, ev)
						mu.Unlock()
					})
					prov := script.Play(c.replies...)
					clock := recLate
					if c.expiry > 0 {
						// The listing dates a thread's last change by the
						// store's own clock.
						clock = time.Now().Add(2 * c.expiry)
					}
					step := loop.New(loop.WithHandlers(h), loop.WithClock(at(clock)), loop.WithLeaseOwner("rec"),
						loop.WithApprovalExpiry(c.expiry), loop.WithRecoverBy("lode worker"), loop.WithObserver(obs))
					recs, err := step.Recover(context.Background(), open(t), prov)
					if err != nil {
						t.Fatal(err)
					}
					var rec loop.Recovery
					for _, r := range recs {
						if r.Thread == id {
							rec = r
						} else if !strings.HasPrefix(r.Thread, "t") {
							t.Fatalf("recovered %s", r.Thread)
						}
					}
					if rec.Thread != id || rec.From != c.from || !slices.Equal(rec.Calls, c.calls) || !slices.Equal(rec.Rerun, c.rerun) {
						t.Fatalf("recovery %+v", rec)
					}
					if rec.Turn != len(c.turns) || !strings.HasPrefix(rec.Owner, "rec/") {
						t.Fatalf("turn %d, owner %q", rec.Turn, rec.Owner)
					}
					wantPrev := ""
					if c.dead {
						wantPrev = "dead-owner"
					}
					if rec.PreviousOwner != wantPrev {
						t.Fatalf("previous owner %q", rec.PreviousOwner)
					}
					if c.from != loop.RecoverPending && rec.Err != nil {
						t.Fatalf("run: %v", rec.Err)
					}
					if err := step.Flush(context.Background()); err != nil {
						t.Fatal(err)
					}
					mu.Lock()
					var got *loop.RecoveredEvent
					for _, ev := range events {
						if r, ok := ev.(loop.RecoveredEvent); ok && r.Thread == id {
							got = &r
						}
					}
					mu.Unlock()
					if got == nil || got.From != c.from || got.Owner != rec.Owner || got.PreviousOwner != wantPrev {
						t.Fatalf("recovered event %+v", got)
					}
					st, err := open(t).Load(context.Background(), id)
					if err != nil {
						t.Fatal(err)
					}
					if l, _ := st.Lease(); l.Owner != "" {
						t.Fatalf("lease left: %+v", l)
					}
					c.check(t, st, h, prov, rec)

					// A second pass finds nothing left to do.
					again, err := loop.New(loop.WithHandlers(h), loop.WithClock(at(recLate))).Recover(context.Background(), open(t), script.Play())
					if err != nil {
						t.Fatal(err)
					}
					for _, r := range again {
						if r.Thread == id {
							t.Fatalf("recovered twice: %+v", r)
						}
					}
				})
			}
		})
	}
}

func TestRecoverLeavesLiveAndFinishedThreads(t *testing.T) {
	ctx := context.Background()
	s, err := file.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	crashed(t, s, "finished", false, user("hi"), answer(artifact.Text{Content: "bye"}))
	crashed(t, s, "paused", false, user("clean"), answer(call("c1", "rm")),
		toolTurn(artifact.Pending{ToolCallID: "c1", Name: "rm", Arguments: `{}`}))
	crashed(t, s, "live", true, user("hi"))
	prov := script.Play()
	// 10 s after the live owner took its 30 s lease: still live.
	step := loop.New(loop.WithClock(at(recT0.Add(10*time.Second))), loop.WithApprovalExpiry(time.Hour))
	recs, err := step.Recover(ctx, s, prov)
	if err != nil || len(recs) != 0 || len(prov.Requests()) != 0 {
		t.Fatalf("recovered %+v, err %v", recs, err)
	}
	st, err := s.Load(ctx, "live")
	if err != nil {
		t.Fatal(err)
	}
	if l, _ := st.Lease(); l.Owner != "dead-owner" {
		t.Fatalf("the live lease was touched: %+v", l)
	}
}

func TestRecoverRefusesWhatItCannotDo(t *testing.T) {
	ctx := context.Background()
	s, err := file.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var lerr *loop.LedgerError
	if _, err := loop.New().Recover(ctx, nil, script.Play()); !errors.As(err, &lerr) {
		t.Fatalf("nil store: %v", err)
	}
	var perr *loop.ProviderError
	if _, err := loop.New().Recover(ctx, s, nil); !errors.As(err, &perr) {
		t.Fatalf("nil provider: %v", err)
	}
	crashed(t, s, "t", true, user("hi"))
	_, err = loop.New(loop.WithLease(-1), loop.WithClock(at(recLate))).Recover(ctx, s, script.Play(script.Text("no")))
	if err == nil || !strings.Contains(err.Error(), "leases are off") {
		t.Fatalf("leases off: %v", err)
	}
	// A damaged lease value is reported, and the other threads recovered.
	st, err := s.Create(ctx, ledger.WithID("damaged"), ledger.WithMetadata(map[string]string{ledger.LeaseKey: "not json"}))
	if err != nil {
		t.Fatal(err)
	}
	st.Close()
	recs, err := loop.New(loop.WithClock(at(recLate))).Recover(ctx, s, script.Play(script.Text("hello")))
	if !errors.Is(err, ledger.ErrCorrupt) || !strings.Contains(err.Error(), "damaged") {
		t.Fatalf("damaged lease: %v", err)
	}
	if len(recs) != 1 || recs[0].Thread != "t" || recs[0].Err != nil {
		t.Fatalf("recoveries %+v", recs)
	}
}

// counting answers every request with text and counts the requests per
// thread, as told by the first user message.
type counting struct {
	mu sync.Mutex
	n  map[string]int
}

func (c *counting) Invoke(ctx context.Context, req *provider.Request) iter.Seq2[artifact.Artifact, error] {
	key := ""
	if len(req.Turns) > 0 && len(req.Turns[0].Artifacts) > 0 {
		if txt, ok := req.Turns[0].Artifacts[0].(artifact.Text); ok {
			key = txt.Content
		}
	}
	c.mu.Lock()
	if c.n == nil {
		c.n = make(map[string]int)
	}
	c.n[key]++
	c.mu.Unlock()
	return func(yield func(artifact.Artifact, error) bool) {
		yield(artifact.Text{Content: "answer to " + key}, nil)
	}
}

func TestTwoRecoverersNeverContinueOneThread(t *testing.T) {
	const threads = 12
	for name, open := range recoverStores(t) {
		t.Run(name, func(t *testing.T) {
			s := open(t)
			for i := range threads {
				crashed(t, s, fmt.Sprintf("race-%02d", i), true, user(fmt.Sprintf("q%d", i)), answer(call("c", "rm")))
			}
			h := &tools{}
			prov := &counting{}
			var wg sync.WaitGroup
			got := make([][]loop.Recovery, 2)
			errs := make([]error, 2)
			start := make(chan struct{})
			for r := range 2 {
				step := loop.New(loop.WithHandlers(h), loop.WithClock(at(recLate)), loop.WithLeaseOwner(fmt.Sprintf("r%d", r)))
				store := open(t)
				wg.Add(1)
				go func() {
					defer wg.Done()
					<-start
					got[r], errs[r] = step.Recover(context.Background(), store, prov)
				}()
			}
			close(start)
			wg.Wait()
			for _, err := range errs {
				if err != nil {
					t.Fatal(err)
				}
			}
			seen := map[string]string{}
			for _, recs := range got {
				for _, rec := range recs {
					if other, dup := seen[rec.Thread]; dup {
						t.Fatalf("%s continued by %s and %s", rec.Thread, other, rec.Owner)
					}
					seen[rec.Thread] = rec.Owner
					if rec.Err != nil {
						t.Fatalf("%s: %v", rec.Thread, rec.Err)
					}
				}
			}
			if len(seen) != threads {
				t.Fatalf("%d threads recovered, want %d", len(seen), threads)
			}
			for i := range threads {
				key := fmt.Sprintf("q%d", i)
				if n := prov.n[key]; n != 1 {
					t.Fatalf("thread %d: model asked %d times", i, n)
				}
				st, err := s.Load(context.Background(), fmt.Sprintf("race-%02d", i))
				if err != nil {
					t.Fatal(err)
				}
				if _, n := resultOf(st, "c"); n != 1 || lastText(t, st) != "answer to "+key {
					t.Fatalf("thread %d: %d results", i, n)
				}
			}
		})
	}
}

func TestRecoverIsTraced(t *testing.T) {
	ctx := context.Background()
	s, err := file.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	crashed(t, s, "t", true, user("clean"), answer(call("c1", "rm")))
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	step := loop.New(loop.WithHandlers(&tools{}), loop.WithTracer(tp.Tracer("t")), loop.WithClock(at(recLate)), loop.WithLeaseOwner("rec"))
	if _, err := step.Recover(ctx, s, script.Play(script.Text("done"))); err != nil {
		t.Fatal(err)
	}
	span := endedSpan(t, rec, "lode.recover")
	var child bool
	for _, sp := range rec.Ended() {
		if sp.Name() == "invoke_agent lode" && sp.Parent().SpanID() == span.SpanContext().SpanID() {
			child = true
		}
	}
	attrs := map[attribute.Key]attribute.Value{}
	for _, kv := range span.Attributes() {
		attrs[kv.Key] = kv.Value
	}
	if attrs["lode.recovered.from"].AsString() != "calls" || attrs["lode.recovered.turn"].AsInt64() != 2 ||
		!slices.Equal(attrs["lode.recovered.calls"].AsStringSlice(), []string{"c1"}) ||
		attrs["lode.lease.previous_owner"].AsString() != "dead-owner" || !strings.HasPrefix(attrs["lode.lease.owner"].AsString(), "rec/") {
		t.Fatalf("attributes %v", span.Attributes())
	}
	var takeover bool
	for _, ev := range span.Events() {
		if ev.Name == "lode.lease.takeover" {
			takeover = true
		}
	}
	if !takeover || !child {
		t.Fatalf("takeover event %v, run span inside %v", takeover, child)
	}
}

// endedSpan is the last ended span named name; the test fails if there
// is none.
func endedSpan(t *testing.T, rec *tracetest.SpanRecorder, name string) sdktrace.ReadOnlySpan {
	t.Helper()
	var span sdktrace.ReadOnlySpan
	for _, sp := range rec.Ended() {
		if sp.Name() == name {
			span = sp
		}
	}
	if span == nil {
		t.Fatalf("no %s span", name)
	}
	return span
}

func TestRecoverStoppedMidRunLeavesTheLeaseForTheNext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	s, err := file.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	crashed(t, s, "t", true, user("hi"))
	asked := make(chan struct{})
	prov := script.Play(script.Func(func(*provider.Request) ([]artifact.Artifact, error) {
		close(asked)
		<-ctx.Done()
		return nil, ctx.Err()
	}))
	done := make(chan []loop.Recovery, 1)
	go func() {
		recs, _ := loop.New(loop.WithClock(at(recLate)), loop.WithLeaseOwner("stopped")).Recover(ctx, s, prov)
		done <- recs
	}()
	<-asked
	cancel()
	recs := <-done
	if len(recs) != 1 || !errors.Is(recs[0].Err, context.Canceled) {
		t.Fatalf("recoveries %+v", recs)
	}
	st, err := s.Load(context.Background(), "t")
	if err != nil {
		t.Fatal(err)
	}
	l, _ := st.Lease()
	if !strings.HasPrefix(l.Owner, "stopped/") {
		t.Fatalf("lease %+v, want the stopped recoverer's, left to expire", l)
	}
	// Once it expires, the next recoverer finishes the run.
	next := loop.New(loop.WithClock(at(recLate.Add(time.Hour))))
	recs, err = next.Recover(context.Background(), s, script.Play(script.Text("hello")))
	if err != nil || len(recs) != 1 || recs[0].Err != nil || recs[0].PreviousOwner != l.Owner || recs[0].From != loop.RecoverTurn {
		t.Fatalf("recoveries %+v, err %v", recs, err)
	}
}

// Without WithRecoverBy, a call denied for waiting too long is denied by
// "recover".
func TestRecoverByDefault(t *testing.T) {
	ctx := context.Background()
	s, err := file.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	crashed(t, s, "paused", false, user("clean"), answer(call("c1", "rm")),
		toolTurn(artifact.Pending{ToolCallID: "c1", Name: "rm", Arguments: `{}`}))
	step := loop.New(loop.WithClock(at(time.Now().Add(2*time.Minute))), loop.WithApprovalExpiry(time.Minute))
	recs, err := step.Recover(ctx, s, script.Play(script.Text("not cleaned")))
	if err != nil || len(recs) != 1 || recs[0].From != loop.RecoverApproval {
		t.Fatalf("recovered %+v, err %v", recs, err)
	}
	st, err := s.Load(ctx, "paused")
	if err != nil {
		t.Fatal(err)
	}
	var by []string
	for _, tr := range st.Turns() {
		for _, a := range tr.Artifacts {
			if d, ok := a.(artifact.Decision); ok {
				by = append(by, d.By)
			}
		}
	}
	if len(by) != 1 || by[0] != "recover" {
		t.Fatalf("decisions by %q, want one by \"recover\"", by)
	}
}
