package loop_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/lodeworks/lode/artifact"
	"github.com/lodeworks/lode/ledger"
	"github.com/lodeworks/lode/ledger/file"
	"github.com/lodeworks/lode/loop"
	"github.com/lodeworks/lode/x/provider/script"
)

var leaseT0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// gate is a handler that leaves "rm" calls to a person and, once one is
// approved, runs it, stopping inside until released when it is told to.
type gate struct {
	mu     sync.Mutex
	runs   map[string]int
	inside chan string   // receives the call ID once a run is inside
	hold   chan struct{} // a run stays inside until this is closed; nil: no wait
	// untilCancel keeps a run inside until its context ends.
	untilCancel bool
}

func (g *gate) count(id string) int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.runs[id]
}

func (g *gate) Handle(ctx context.Context, a artifact.Artifact, e loop.Emitter) error {
	c, ok := a.(artifact.ToolCall)
	if !ok {
		return nil
	}
	if d, ok := loop.Approved(ctx); !ok || d.ToolCallID != c.ID {
		e.Emit(ctx, loop.TurnCompleteEvent{Role: ledger.RoleTool, Artifacts: []artifact.Artifact{
			artifact.Pending{ToolCallID: c.ID, Name: c.Name, Arguments: c.Arguments}}})
		return nil
	}
	g.mu.Lock()
	if g.runs == nil {
		g.runs = make(map[string]int)
	}
	g.runs[c.ID]++
	g.mu.Unlock()
	if g.inside != nil {
		g.inside <- c.ID
	}
	content := "removed"
	switch {
	case g.untilCancel:
		<-ctx.Done()
		content = "cancelled: " + context.Cause(ctx).Error()
	case g.hold != nil:
		<-g.hold
	}
	e.Emit(ctx, loop.TurnCompleteEvent{Role: ledger.RoleTool, Artifacts: []artifact.Artifact{
		artifact.ToolResult{ToolCallID: c.ID, Name: c.Name, Content: content}}})
	return nil
}

// leaseThread returns a file store's thread paused on two rm calls, a and
// c, and a function that loads it through another store instance, as
// another process would.
func leaseThread(t *testing.T, g *gate) (*ledger.StoredThread, func() *ledger.StoredThread) {
	t.Helper()
	dir := t.TempDir()
	open := func() ledger.Store {
		s, err := file.Open(dir)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	}
	st, err := open().Create(context.Background(), ledger.WithID("leased"),
		ledger.WithTurns(ledger.Turn{Role: ledger.RoleUser, Artifacts: []artifact.Artifact{artifact.Text{Content: "clean"}}}))
	if err != nil {
		t.Fatal(err)
	}
	prov := script.Play(script.Reply(
		artifact.ToolCall{ID: "a", Name: "rm", Arguments: `{"p":"a"}`},
		artifact.ToolCall{ID: "c", Name: "rm", Arguments: `{"p":"c"}`},
	))
	if _, err := loop.New(loop.WithHandlers(g)).Run(context.Background(), st, prov); !errors.Is(err, loop.ErrPaused) {
		t.Fatalf("run: %v", err)
	}
	return st, func() *ledger.StoredThread {
		st, err := open().Load(context.Background(), "leased")
		if err != nil {
			t.Fatal(err)
		}
		return st
	}
}

func at(t time.Time) func() time.Time { return func() time.Time { return t } }

func TestResumeRefusedWhileAnotherResumerIsInsideTheCall(t *testing.T) {
	cases := []struct {
		name      string
		decisions []artifact.Decision
	}{
		{"no decisions", nil},
		{"deciding the other call", []artifact.Decision{loop.Deny("c", "keep c")}},
		{"deciding the running call", []artifact.Decision{loop.Approve("a")}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			g := &gate{inside: make(chan string, 1), hold: make(chan struct{})}
			first, load := leaseThread(t, g)
			done := make(chan error, 1)
			go func() {
				step := loop.New(loop.WithHandlers(g), loop.WithLeaseOwner("first"), loop.WithClock(at(leaseT0)))
				_, err := step.Resume(context.Background(), first, script.Play(), []artifact.Decision{loop.Approve("a")})
				done <- err
			}()
			if id := <-g.inside; id != "a" {
				t.Fatalf("inside %s", id)
			}

			second := load()
			n := second.Len()
			prov := script.Play(script.Text("never"))
			step := loop.New(loop.WithHandlers(g), loop.WithLeaseOwner("second"), loop.WithClock(at(leaseT0.Add(29*time.Second))))
			_, err := step.Resume(context.Background(), second, prov, c.decisions)
			var le *ledger.LeaseError
			var lerr *loop.LedgerError
			if !errors.As(err, &le) || !errors.As(err, &lerr) || !errors.Is(err, ledger.ErrLeased) || !errors.Is(err, ledger.ErrConflict) {
				t.Fatalf("second resumer: %v, want a *loop.LedgerError wrapping a *ledger.LeaseError", err)
			}
			if !strings.HasPrefix(le.Holder.Owner, "first/") || !le.Holder.Acquired.Equal(leaseT0) || !le.Holder.Expires.Equal(leaseT0.Add(loop.DefaultLeaseTTL)) ||
				le.Thread != "leased" || !strings.HasPrefix(le.Owner, "second/") || le.Lost {
				t.Fatalf("lease error %+v", *le)
			}
			want := "loop: ledger: thread leased is leased to " + le.Holder.Owner + " since 2026-03-01T12:00:00Z, until 2026-03-01T12:00:30Z; wait for it to finish or for the lease to expire"
			if err.Error() != want {
				t.Fatalf("message\n%s\nwant\n%s", err, want)
			}
			if again := load(); again.Len() != n || len(prov.Requests()) != 0 || g.count("a") != 1 || g.count("c") != 0 {
				t.Fatalf("the refused resumer changed something: %d turns (was %d), %d requests, runs %v", again.Len(), n, len(prov.Requests()), g.runs)
			}

			close(g.hold)
			var pe *loop.PendingError
			if err := <-done; !errors.As(err, &pe) || len(pe.Calls) != 1 || pe.Calls[0].ToolCallID != "c" {
				t.Fatalf("first resumer: %v, want c still pending", err)
			}
			// The first released its lease: the second goes on at once.
			if l, err := load().Lease(); err != nil || l != (ledger.Lease{}) {
				t.Fatalf("lease after the first returned: %+v, %v", l, err)
			}
			final := script.Play(script.Text("done"))
			if _, err := step.Resume(context.Background(), load(), final, []artifact.Decision{loop.Deny("c", "keep c")}); err != nil {
				t.Fatal(err)
			}
			if g.count("a") != 1 || g.count("c") != 0 || len(final.Requests()) != 1 {
				t.Fatalf("runs %v, %d requests", g.runs, len(final.Requests()))
			}
		})
	}
}

func TestLostLeaseCancelsTheWork(t *testing.T) {
	g := &gate{inside: make(chan string, 1), untilCancel: true}
	first, load := leaseThread(t, g)
	done := make(chan error, 1)
	step := loop.New(loop.WithHandlers(g), loop.WithLease(30*time.Millisecond))
	go func() {
		_, err := step.Resume(context.Background(), first, script.Play(), []artifact.Decision{loop.Approve("a")})
		done <- err
	}()
	<-g.inside
	// Another owner whose clock is past the lease takes it over; the
	// first's next renewal finds the thread changed.
	var prev ledger.Lease
	for {
		var err error
		thief := load()
		if prev, err = thief.AcquireLease(context.Background(), "thief", time.Now().Add(time.Hour), time.Hour); err == nil {
			break
		}
		if !errors.Is(err, ledger.ErrConflict) || errors.Is(err, ledger.ErrLeased) {
			t.Fatalf("take over: %v", err) // only a renewal landing in between may refuse it
		}
	}
	err := <-done
	var le *ledger.LeaseError
	if !errors.As(err, &le) || !le.Lost || le.Owner != prev.Owner || !errors.Is(err, ledger.ErrLeased) {
		t.Fatalf("resume whose lease was lost: %v, want the lost *ledger.LeaseError of %s", err, prev.Owner)
	}
	// Nothing the first did after the takeover landed: a has no result.
	after := load()
	if l, _ := after.Lease(); l.Owner != "thief" {
		t.Fatalf("lease %+v", l)
	}
	for _, tu := range after.Turns() {
		for _, a := range tu.Artifacts {
			if r, ok := a.(artifact.ToolResult); ok && r.ToolCallID == "a" {
				t.Fatalf("a result landed after the lease was lost: %+v", r)
			}
		}
	}
}

func TestTakeoverOfAnExpiredLeaseIsTraced(t *testing.T) {
	g := &gate{}
	st, load := leaseThread(t, g)
	if _, err := st.AcquireLease(context.Background(), "dead-owner", leaseT0, time.Minute); err != nil {
		t.Fatal(err)
	}
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	step := loop.New(loop.WithHandlers(g), loop.WithTracer(tp.Tracer("t")), loop.WithLeaseOwner("next"), loop.WithClock(at(leaseT0.Add(time.Hour))))
	if _, err := step.Resume(context.Background(), load(), script.Play(script.Text("done")),
		[]artifact.Decision{loop.Approve("a"), loop.Deny("c", "")}); err != nil {
		t.Fatal(err)
	}
	resume := endedSpan(t, rec, "lode.resume")
	attrs := map[attribute.Key]string{}
	for _, ev := range resume.Events() {
		if ev.Name == "lode.lease.takeover" {
			for _, kv := range ev.Attributes {
				attrs[kv.Key] = kv.Value.Emit()
			}
		}
	}
	if attrs["lode.lease.previous_owner"] != "dead-owner" || attrs["lode.lease.expired_at"] != "2026-03-01T12:01:00Z" || attrs["lode.lease.previous_acquired"] != "2026-03-01T12:00:00Z" {
		t.Fatalf("takeover event %v", attrs)
	}
	var owner string
	for _, kv := range resume.Attributes() {
		if kv.Key == "lode.lease.owner" {
			owner = kv.Value.AsString()
		}
	}
	if !strings.HasPrefix(owner, "next/") {
		t.Fatalf("lode.lease.owner = %q", owner)
	}
	if l, err := load().Lease(); err != nil || l != (ledger.Lease{}) || g.count("a") != 1 {
		t.Fatalf("after the run: lease %+v (%v), runs %v", l, err, g.runs)
	}
}

func TestLeaseOptions(t *testing.T) {
	cases := []struct {
		name    string
		opts    []loop.Option
		leased  bool
		expires time.Duration
	}{
		{"default", nil, true, loop.DefaultLeaseTTL},
		{"zero is the default", []loop.Option{loop.WithLease(0)}, true, loop.DefaultLeaseTTL},
		{"set", []loop.Option{loop.WithLease(time.Minute)}, true, time.Minute},
		{"negative turns leases off", []loop.Option{loop.WithLease(-1)}, false, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			g := &gate{inside: make(chan string, 1), hold: make(chan struct{})}
			st, load := leaseThread(t, g)
			v := st.Version()
			done := make(chan error, 1)
			go func() {
				step := loop.New(append([]loop.Option{loop.WithHandlers(g), loop.WithClock(at(leaseT0))}, c.opts...)...)
				_, err := step.Resume(context.Background(), st, script.Play(), []artifact.Decision{loop.Approve("a")})
				done <- err
			}()
			<-g.inside
			l, err := load().Lease()
			if err != nil || (l.Owner != "") != c.leased || (c.leased && !l.Expires.Equal(leaseT0.Add(c.expires))) {
				t.Fatalf("lease while inside: %+v, %v", l, err)
			}
			if !c.leased && st.Version() != v+1 {
				t.Fatalf("without leases the claim alone is written: version %d, was %d", st.Version(), v)
			}
			close(g.hold)
			if err := <-done; !errors.Is(err, loop.ErrPaused) {
				t.Fatal(err)
			}
		})
	}
}

func TestInMemoryThreadTakesNoLease(t *testing.T) {
	st := pausedThread(t)
	_, err := loop.New(loop.WithHandlers(asker)).Resume(context.Background(), st, script.Play(script.Text("done")), []artifact.Decision{loop.Approve("a")})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := st.Metadata(ledger.LeaseKey); ok {
		t.Fatal("an in-memory thread got a lease")
	}
}

func TestTurnAndRunRefusedUnderALiveLease(t *testing.T) {
	cases := []struct {
		name string
		call func(step *loop.Step, st ledger.State, prov *script.Provider) error
	}{
		{"Turn", func(step *loop.Step, st ledger.State, prov *script.Provider) error {
			_, err := step.Turn(context.Background(), st, prov)
			return err
		}},
		{"Run", func(step *loop.Step, st ledger.State, prov *script.Provider) error {
			_, err := step.Run(context.Background(), st, prov)
			return err
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s, err := file.Open(t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			ctx := context.Background()
			st, err := s.Create(ctx, ledger.WithID("busy"), ledger.WithTurns(ledger.Turn{Role: ledger.RoleUser, Artifacts: []artifact.Artifact{artifact.Text{Content: "hi"}}}))
			if err != nil {
				t.Fatal(err)
			}
			if _, err := st.AcquireLease(ctx, "other", leaseT0, time.Minute); err != nil {
				t.Fatal(err)
			}
			v := st.Version()
			prov := script.Play(script.Text("never"))
			var errs []error
			step := loop.New(loop.WithClock(at(leaseT0.Add(59*time.Second))), loop.WithObserver(loop.EmitterFunc(func(_ context.Context, ev loop.Event) {
				if e, ok := ev.(loop.ErrorEvent); ok {
					errs = append(errs, e.Err)
				}
			})))
			err = c.call(step, st, prov)
			var le *ledger.LeaseError
			if !errors.As(err, &le) || le.Holder.Owner != "other" || !errors.Is(err, ledger.ErrConflict) {
				t.Fatalf("%s under a live lease: %v", c.name, err)
			}
			if err := step.Flush(ctx); err != nil {
				t.Fatal(err)
			}
			if st.Version() != v || len(prov.Requests()) != 0 || len(errs) != 1 || errs[0] != err {
				t.Fatalf("refused %s: version %d (was %d), %d requests, error events %v", c.name, st.Version(), v, len(prov.Requests()), errs)
			}
			// At expiry the lease is taken over and the turn is taken.
			late := loop.New(loop.WithClock(at(leaseT0.Add(time.Minute))))
			if err := c.call(late, st, prov); err != nil || len(prov.Requests()) != 1 {
				t.Fatalf("%s after expiry: %v, %d requests", c.name, err, len(prov.Requests()))
			}
			if l, err := st.Lease(); err != nil || l != (ledger.Lease{}) {
				t.Fatalf("lease after %s: %+v, %v", c.name, l, err)
			}
		})
	}
}
