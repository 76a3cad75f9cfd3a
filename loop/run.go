package loop

import (
	"context"
	"errors"
	"fmt"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/lodeworks/lode/internal/runspan"
	"github.com/lodeworks/lode/ledger"
	"github.com/lodeworks/lode/provider"
)

// Run takes turns on st until the model answers without calling a tool, and
// returns st. An answer the server paused (artifact.FinishPauseTurn) is not
// one: Run takes another turn, which the server carries the answer on in.
// A limit set with WithMaxTurns, WithMaxTokens, WithMaxCost or WithTimeLimit
// stops it with a *LimitError when the model still has tool calls to make,
// or a paused answer to finish; any other failure ends it with the error of
// the turn that failed.
//
// On a ledger.StoredThread, Run first takes the thread's lease (see
// WithLease), renews it while it works and releases it when it returns: a
// Run or Resume of the same thread started meanwhile, in this process or
// another, is refused with a *LedgerError wrapping a *ledger.LeaseError
// (errors.Is ledger.ErrLeased and ledger.ErrConflict) and changes nothing.
// If the lease is lost while Run works, the work's context is cancelled
// and Run returns that error.
func (s *Step) Run(ctx context.Context, st ledger.State, prov provider.Provider, opts ...provider.InvokeOption) (_ ledger.State, err error) {
	if err := checkArgs(st, prov); err != nil {
		return st, err
	}
	return s.run(ctx, st, prov, opts, true)
}

// run is Run; it takes st's lease when lease is set, as Run does, while
// Resume, which holds the lease already, runs without.
func (s *Step) run(ctx context.Context, st ledger.State, prov provider.Provider, opts []provider.InvokeOption, lease bool) (_ ledger.State, err error) {
	ctx, sp := s.withSpend(ctx)
	pricer, maxCost := s.limits(sp)
	if err := checkPriced(pricer, maxCost, prov); err != nil {
		s.notify(ctx, ErrorEvent{Err: err})
		return st, err
	}
	var cost float64 // this run's own turns
	if s.timeLimit > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeoutCause(ctx, s.timeLimit, &LimitError{
			Limit: LimitTime, Used: s.timeLimit.Milliseconds(), Max: s.timeLimit.Milliseconds(),
			Err: context.DeadlineExceeded,
		})
		defer cancel()
	}
	var turns int
	var tokens int64
	ctx, err = s.identity(ctx, st)
	if err != nil {
		s.notify(ctx, ErrorEvent{Err: err})
		return st, err
	}
	if s.tracer != nil {
		var span trace.Span
		ctx, span = s.tracer.Start(ctx, "invoke_agent lode", trace.WithAttributes(
			attribute.String("gen_ai.operation.name", "invoke_agent"),
			attribute.String("gen_ai.agent.name", "lode"),
		), trace.WithAttributes(runspan.Attributes(ctx)...))
		defer func() {
			span.SetAttributes(attribute.Int("lode.turns", turns), attribute.Int64("lode.tokens", tokens))
			if cost != 0 {
				span.SetAttributes(attribute.Float64("lode.cost_usd", cost))
			}
			var pe *PendingError
			if errors.As(err, &pe) {
				span.SetAttributes(attribute.Bool("lode.paused", true), attribute.Int("lode.pending_calls", len(pe.Calls)))
			} else if err != nil {
				span.RecordError(err)
				span.SetStatus(codes.Error, err.Error())
			}
			span.End()
		}()
	}
	if lease {
		held, lerr := s.acquireLease(ctx, st)
		if lerr != nil {
			s.notify(ctx, ErrorEvent{Err: lerr})
			return st, lerr
		}
		ctx = held.start(ctx)
		defer func() { err = held.end(ctx, err) }()
	}
	start := time.Now()
	for {
		out, err := s.turn(ctx, st, prov, opts)
		turns++
		tokens += out.usage.Total()
		cost += out.cost
		if err != nil {
			return st, err
		}
		if out.pending != nil {
			return st, &PendingError{Thread: st.ID(), Calls: out.pending}
		}
		if out.calls == 0 && !out.paused {
			return st, nil
		}
		if s.maxTurns > 0 && turns >= s.maxTurns {
			return st, &LimitError{Limit: LimitTurns, Used: int64(turns), Max: int64(s.maxTurns)}
		}
		if s.maxTokens > 0 && tokens >= s.maxTokens {
			return st, &LimitError{Limit: LimitTokens, Used: tokens, Max: s.maxTokens}
		}
		if maxCost > 0 {
			if out.unpriced != "" {
				err := fmt.Errorf("%w: %q answered", ErrUnpriced, out.unpriced)
				s.notify(ctx, ErrorEvent{Err: err})
				return st, err
			}
			if used := sp.total(); used >= maxCost {
				return st, costLimit(used, maxCost)
			}
		}
		if s.timeLimit > 0 && ctx.Err() != nil {
			return st, &LimitError{Limit: LimitTime, Used: time.Since(start).Milliseconds(), Max: s.timeLimit.Milliseconds(), Err: ctx.Err()}
		}
	}
}
