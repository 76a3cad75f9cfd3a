package loop_test

import (
	"context"
	"fmt"
	"iter"
	"testing"
	"time"

	"github.com/lodeworks/lode/artifact"
	"github.com/lodeworks/lode/ledger"
	"github.com/lodeworks/lode/ledger/file"
	"github.com/lodeworks/lode/loop"
	"github.com/lodeworks/lode/provider"
	"github.com/lodeworks/lode/x/catalog"
	"github.com/lodeworks/lode/x/provider/script"
)

// replay answers every invocation with the same text, streamed as one delta
// like the scripted provider does, so the benchmark measures the loop.
type replay struct{ text string }

func (r replay) Invoke(ctx context.Context, _ *provider.Request) iter.Seq2[artifact.Artifact, error] {
	return func(yield func(artifact.Artifact, error) bool) {
		if !yield(artifact.TextDelta{Content: r.text}, nil) {
			return
		}
		yield(artifact.Text{Content: r.text}, nil)
	}
}

// BenchmarkTurn is one turn's loop overhead: resolve options, stream one
// text artifact, append it, offer it to a handler.
func BenchmarkTurn(b *testing.B) {
	step := loop.New(loop.WithHandlers(loop.HandlerFunc(func(context.Context, artifact.Artifact, loop.Emitter) error { return nil })))
	prov := replay{text: "Hello there."}
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		th := ledger.NewThread(ledger.WithID("bench"), ledger.WithClock(nil))
		_ = th.Append(ledger.RoleUser, artifact.Text{Content: "Hi"})
		if _, err := step.Turn(ctx, th, prov); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkTurnScripted is the same turn through the scripted provider,
// which also records every request; its own construction is counted.
func BenchmarkTurnScripted(b *testing.B) {
	step := loop.New()
	ctx := context.Background()
	reply := script.Text("Hello there.")
	b.ReportAllocs()
	for b.Loop() {
		prov := script.Play(reply)
		th := ledger.NewThread(ledger.WithID("bench"), ledger.WithClock(nil))
		_ = th.Append(ledger.RoleUser, artifact.Text{Content: "Hi"})
		if _, err := step.Turn(ctx, th, prov); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkRunStored is one Run of one turn on a stored thread (a file
// store that does not fsync, so that the loop's own cost shows), with the
// lease Run takes and releases, and without.
func BenchmarkRunStored(b *testing.B) {
	for _, c := range []struct {
		name string
		ttl  time.Duration
	}{{"lease=on", 0}, {"lease=off", -1}} {
		b.Run(c.name, func(b *testing.B) {
			s, err := file.Open(b.TempDir(), file.WithSync(file.SyncPolicy{None: true}))
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			ctx := context.Background()
			st, err := s.Create(ctx, ledger.WithTurns(ledger.Turn{Role: ledger.RoleUser, Artifacts: []artifact.Artifact{artifact.Text{Content: "Hi"}}}))
			if err != nil {
				b.Fatal(err)
			}
			step := loop.New(loop.WithLease(c.ttl))
			prov := replay{text: "Hello there."}
			b.ReportAllocs()
			for b.Loop() {
				if _, err := step.Run(ctx, st, prov); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// deltas streams n text deltas, then their whole text.
type deltas struct {
	n     int
	chunk string
}

func (d deltas) Invoke(ctx context.Context, _ *provider.Request) iter.Seq2[artifact.Artifact, error] {
	return func(yield func(artifact.Artifact, error) bool) {
		for range d.n {
			if !yield(artifact.TextDelta{Content: d.chunk}, nil) {
				return
			}
		}
		yield(artifact.Text{Content: d.chunk}, nil)
	}
}

// BenchmarkObserverEvents is the cost of one event through an observer's
// mailbox: posted by the stream, delivered in order to an observer that
// does nothing with it. It reports ns/event for a turn whose deltas fit
// the mailbox's bound, and for one of 1,000 deltas, where the stream
// outruns the observer's goroutine and waits for room.
func BenchmarkObserverEvents(b *testing.B) {
	for _, n := range []int{100, 1000} {
		b.Run(fmt.Sprintf("deltas=%d", n), func(b *testing.B) {
			var seen int
			step := loop.New(loop.WithObserver(loop.EmitterFunc(func(context.Context, loop.Event) { seen++ })))
			prov := deltas{n: n, chunk: "word "}
			ctx := context.Background()
			b.ReportAllocs()
			for b.Loop() {
				th := ledger.NewThread(ledger.WithID("bench"), ledger.WithClock(nil))
				_ = th.Append(ledger.RoleUser, artifact.Text{Content: "Hi"})
				if _, err := step.Turn(ctx, th, prov); err != nil {
					b.Fatal(err)
				}
				if err := step.Flush(ctx); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*(n+1)), "ns/event")
			if seen == 0 {
				b.Fatal("the observer saw nothing")
			}
		})
	}
}

// usageReplay answers with a text and its usage, as a model named
// gpt-4o-mini.
type usageReplay struct{}

func (usageReplay) Model() string { return "gpt-4o-mini" }

func (usageReplay) Invoke(ctx context.Context, _ *provider.Request) iter.Seq2[artifact.Artifact, error] {
	return func(yield func(artifact.Artifact, error) bool) {
		if !yield(artifact.Text{Content: "Hello there."}, nil) {
			return
		}
		yield(artifact.Usage{InputTokens: 1200, OutputTokens: 30, CachedInputTokens: 200}, nil)
	}
}

// BenchmarkTurnPriced is BenchmarkTurn with a usage in the answer, priced
// from the catalog (and kept under a cost limit), beside the same turn
// unpriced: what pricing adds to a turn.
func BenchmarkTurnPriced(b *testing.B) {
	cat := catalog.Default()
	for _, c := range []struct {
		name string
		opts []loop.Option
	}{
		{"unpriced", nil},
		{"priced", []loop.Option{loop.WithPricer(cat)}},
		{"cost-limit", []loop.Option{loop.WithPricer(cat), loop.WithMaxCost(100)}},
	} {
		b.Run(c.name, func(b *testing.B) {
			step := loop.New(c.opts...)
			ctx := context.Background()
			b.ReportAllocs()
			for b.Loop() {
				th := ledger.NewThread(ledger.WithID("bench"), ledger.WithClock(nil))
				_ = th.Append(ledger.RoleUser, artifact.Text{Content: "Hi"})
				if _, err := step.Run(ctx, th, usageReplay{}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
