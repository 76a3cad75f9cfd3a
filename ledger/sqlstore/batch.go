package sqlstore

import (
	"cmp"
	"context"
	"errors"
	"slices"
	"sync"
)

// maxBatch bounds how many records one group commit carries, so that a
// transaction stays short however many threads are writing.
const maxBatch = 128

// A group gathers the records that many threads commit at about the same
// time into one transaction, so that they share one wait for the disk
// instead of queueing for one each: a durable commit costs a flush of the
// write-ahead log, which is most of what a record costs, and SQLite runs
// one writer at a time. No goroutine runs in the background: the first
// writer to find no batch under way commits whatever is queued, its own
// record first; writers that arrive meanwhile queue, and when the batch
// ends the first of them leads the next. Each writer returns once the
// transaction that holds its record has committed, so every promise of a
// single commit holds: a record is durable when its Commit returns, and
// each thread's records keep their order, since a thread commits one
// record at a time.
//
// A record that is refused (the thread moved on, or was deleted) wrote
// nothing and leaves the batch going; any other failure rolls the whole
// batch back, and each record is then tried alone, so that one bad record
// fails only its own writer.
type group struct {
	mu      sync.Mutex
	queue   []*op
	leaders int // batches under way
	max     int // batches that may run at once

	// Tests watch batches form: queued is called with the queue's length
	// after an op joins it, running with a batch's size before it runs.
	queued, running func(n int)
}

// op is one record waiting for a batch.
type op struct {
	ctx     context.Context
	thread  string // batches write threads in id order; see run
	durable bool
	fn      func(ctx context.Context, q querier) error
	err     error
	lead    bool          // woken to lead the next batch
	wake    chan struct{} // receives once: the op is done, or leads
}

// refusal marks an error after which an op has written nothing, so that
// the batch holding it may go on.
type refusal struct{ err error }

func (r refusal) Error() string { return r.err.Error() }
func (r refusal) Unwrap() error { return r.err }

func refuse(err error) error { return refusal{err} }

// commit runs fn in a write transaction, with the records of other threads
// that commit at about the same time.
func (s *Store) commit(ctx context.Context, thread string, durable bool, fn func(ctx context.Context, q querier) error) error {
	g := &s.group
	o := &op{ctx: ctx, thread: thread, durable: durable, fn: fn, wake: make(chan struct{}, 1)}
	g.mu.Lock()
	if g.leaders >= g.max {
		g.queue = append(g.queue, o)
		n := len(g.queue)
		g.mu.Unlock()
		if g.queued != nil {
			g.queued(n)
		}
		select {
		case <-o.wake:
		case <-ctx.Done():
			g.mu.Lock()
			if i := slices.Index(g.queue, o); i >= 0 {
				g.queue = slices.Delete(g.queue, i, i+1)
				g.mu.Unlock()
				return ctx.Err()
			}
			g.mu.Unlock()
			<-o.wake // already taken: its outcome is its batch's
		}
		if !o.lead {
			return o.err
		}
	} else {
		g.leaders++
		g.mu.Unlock()
	}
	g.mu.Lock()
	n := min(len(g.queue), maxBatch-1)
	batch := append([]*op{o}, g.queue[:n]...)
	g.queue = slices.Delete(g.queue, 0, n)
	g.mu.Unlock()

	if g.running != nil {
		g.running(len(batch))
	}
	s.run(batch)
	for _, b := range batch[1:] {
		b.wake <- struct{}{}
	}
	g.mu.Lock()
	if len(g.queue) == 0 {
		g.leaders--
		g.mu.Unlock()
		return o.err
	}
	next := g.queue[0]
	g.queue = slices.Delete(g.queue, 0, 1)
	next.lead = true
	g.mu.Unlock()
	next.wake <- struct{}{}
	return o.err
}

// run commits a batch, setting each op's err.
func (s *Store) run(batch []*op) {
	live := make([]*op, 0, len(batch))
	for _, o := range batch {
		if err := o.ctx.Err(); err != nil {
			o.err = err // taken while its writer gave up: never written
			continue
		}
		live = append(live, o)
	}
	if len(live) == 1 {
		live[0].err = s.alone(live[0])
		return
	}
	if len(live) == 0 {
		return
	}
	// PostgreSQL locks each thread's rows until the batch commits; batches
	// that take them in one order cannot deadlock.
	slices.SortStableFunc(live, func(a, b *op) int { return cmp.Compare(a.thread, b.thread) })
	durable := false
	for _, o := range live {
		durable = durable || o.durable
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(live[0].ctx), s.timeout)
	defer cancel()
	errs := make([]error, len(live))
	err := s.writeSync(ctx, durable, func(q querier) error {
		for i, o := range live {
			err := o.fn(ctx, q)
			var r refusal
			if errors.As(err, &r) {
				errs[i] = r.err
				continue
			}
			if err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		for _, o := range live {
			o.err = s.alone(o)
		}
		return
	}
	for i, o := range live {
		o.err = errs[i]
	}
}

// alone commits one op in a transaction of its own.
func (s *Store) alone(o *op) error {
	err := s.writeSync(o.ctx, o.durable, func(q querier) error { return o.fn(o.ctx, q) })
	var r refusal
	if errors.As(err, &r) {
		return r.err
	}
	return err
}
