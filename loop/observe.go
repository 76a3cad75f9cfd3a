package loop

import (
	"context"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"github.com/lodeworks/lode/artifact"
)

// Defaults for WithObserverBuffer and WithObserverBufferBytes.
const (
	// DefaultObserverBuffer is how many events one observer may have
	// waiting before posting blocks.
	DefaultObserverBuffer = 256
	// DefaultObserverBufferBytes is how many bytes of delta text one
	// observer may have waiting before posting blocks.
	DefaultObserverBufferBytes = 1 << 20
)

// observerBuffer is the bound of every observer's mailbox; zero fields
// mean the defaults, negative ones no bound.
type observerBuffer struct {
	events int
	bytes  int
}

// WithObserverBuffer bounds how many events each observer may have waiting.
// When an observer's queue is full, the turn that posts waits for it: the
// model's stream is read no faster than the slowest observer takes it, and
// no event is dropped. 0 means DefaultObserverBuffer; a negative n means no
// bound on the count, so a slow observer never slows the turn and its
// queue grows instead.
func WithObserverBuffer(n int) Option {
	return func(s *Step) { s.observerBuf.events = n }
}

// WithObserverBufferBytes bounds the delta text (the Content of text and
// reasoning deltas, the fields of tool-call deltas) each observer may have
// waiting, as WithObserverBuffer bounds events. A single delta larger than
// the bound is still queued, alone. 0 means DefaultObserverBufferBytes; a
// negative n means no bound on bytes.
func WithObserverBufferBytes(n int) Option {
	return func(s *Step) { s.observerBuf.bytes = n }
}

func (b observerBuffer) limits() (events, bytes int) {
	events, bytes = b.events, b.bytes
	if events == 0 {
		events = DefaultObserverBuffer
	}
	if bytes == 0 {
		bytes = DefaultObserverBufferBytes
	}
	return events, bytes
}

type posted struct {
	ctx context.Context
	ev  Event
}

// mailbox delivers events to one observer in order. A goroutine drains it
// while it has events and exits when it is empty, so an idle Step holds no
// goroutines. What it holds — queued, and taken but not yet delivered — is
// bounded by the Step's observerBuffer: a post that does not fit waits
// until the observer has taken enough, or the poster's context ends.
type mailbox struct {
	out  Emitter
	step *Step

	mu      sync.Mutex
	idle    sync.Cond // the drain went idle: for wait
	room    sync.Cond // events were delivered: for blocked posts
	queue   []posted
	held    int // events queued or being delivered
	bytes   int // their delta text
	running bool
	blocked atomic.Int32 // posts waiting for room

	// onQueue and onWait, when set by a test, see what the mailbox holds
	// after each post and each post that starts waiting, under its lock.
	onQueue func(held, bytes int)
	onWait  func()
}

func newMailbox(out Emitter, s *Step) *mailbox {
	m := &mailbox{out: out, step: s}
	m.idle.L = &m.mu
	m.room.L = &m.mu
	return m
}

// observerKey marks the context an observer is given with its mailbox, so
// that a post made with it (an observer calling Notify) is known to come
// from inside an observer, and a Flush from inside the one it would wait
// for.
type observerKey struct{}

// observedCtx is the poster's context without its cancellation, as
// context.WithoutCancel gives, that also answers observerKey: an observer
// sees the values of the code that posted, and an event posted after a
// cancel is still delivered whole.
type observedCtx struct {
	parent context.Context
	m      *mailbox
}

func (observedCtx) Deadline() (time.Time, bool) { return time.Time{}, false }
func (observedCtx) Done() <-chan struct{}       { return nil }
func (observedCtx) Err() error                  { return nil }
func (c observedCtx) String() string            { return "loop.observedCtx" }
func (c observedCtx) Value(key any) any {
	if key == (observerKey{}) {
		return c.m
	}
	return c.parent.Value(key)
}

// deltaBytes is the text an event carries that a mailbox counts.
func deltaBytes(ev Event) int {
	d, ok := ev.(DeltaEvent)
	if !ok {
		return 0
	}
	switch d := d.Delta.(type) {
	case artifact.TextDelta:
		return len(d.Content)
	case artifact.ReasoningDelta:
		return len(d.Content)
	case artifact.ToolCallDelta:
		return len(d.ID) + len(d.Name) + len(d.Arguments)
	}
	return 0
}

// post queues ev, waiting while the mailbox is full. Once ctx is done it
// no longer waits: a delta is dropped (its turn is being stopped, and any
// TurnCompleteEvent that follows carries the whole artifacts), and any
// other event is queued past the bound, so that turn-complete, error and
// pause events are never lost. A post made from inside an observer never
// waits either: the room it would wait for may be its own to make.
func (m *mailbox) post(ctx context.Context, ev Event) {
	size := deltaBytes(ev)
	m.mu.Lock()
	if m.full(size) && !m.makeRoom(ctx, ev, size) {
		m.mu.Unlock()
		return
	}
	m.queue = append(m.queue, posted{ctx: observedCtx{ctx, m}, ev: ev})
	m.held++
	m.bytes += size
	if m.onQueue != nil {
		m.onQueue(m.held, m.bytes)
	}
	if !m.running {
		m.running = true
		go m.drain()
	}
	m.mu.Unlock()
}

// full reports whether an event of size bytes must wait. A mailbox that
// holds no delta text takes any delta, so one larger than the bound does
// not wait forever.
func (m *mailbox) full(size int) bool {
	events, bytes := m.step.observerBuf.limits()
	return (events > 0 && m.held >= events) || (bytes > 0 && size > 0 && m.bytes > 0 && m.bytes+size > bytes)
}

// roomy reports whether a waiting post of size bytes may go on: a quarter
// of the bound is free beyond it, so that a poster kept waiting wakes once
// per many deliveries rather than once per delivery.
func (m *mailbox) roomy(size int) bool {
	events, bytes := m.step.observerBuf.limits()
	return (events <= 0 || m.held+quarter(events) <= events) && (bytes <= 0 || size == 0 || m.bytes == 0 || m.bytes+size+quarter(bytes) <= bytes)
}

func quarter(n int) int { return max(1, n/4) }

// freed reports whether the drain has delivered enough since it last gave
// back room for a waiting post to go on.
func (m *mailbox) freed(done, doneBytes int) bool {
	events, bytes := m.step.observerBuf.limits()
	return (events > 0 && done >= quarter(events)) || (bytes > 0 && doneBytes >= quarter(bytes))
}

// makeRoom waits, with m.mu held, until an event of size bytes fits, and
// reports whether to queue it.
func (m *mailbox) makeRoom(ctx context.Context, ev Event, size int) bool {
	if ctx.Value(observerKey{}) != nil {
		return true
	}
	_, delta := ev.(DeltaEvent)
	if ctx.Err() != nil {
		return !delta
	}
	if ctx.Done() != nil {
		stop := context.AfterFunc(ctx, func() {
			m.mu.Lock()
			m.room.Broadcast()
			m.mu.Unlock()
		})
		defer stop()
	}
	m.blocked.Add(1)
	defer m.blocked.Add(-1)
	if m.onWait != nil {
		m.onWait()
	}
	for !m.roomy(size) {
		if ctx.Err() != nil {
			return !delta
		}
		m.room.Wait()
	}
	return true
}

func (m *mailbox) drain() {
	var batch []posted
	var done, doneBytes int
	for {
		m.mu.Lock()
		m.held -= done
		m.bytes -= doneBytes
		done, doneBytes = 0, 0
		if m.blocked.Load() > 0 {
			m.room.Broadcast()
		}
		if len(m.queue) == 0 {
			m.running = false
			m.idle.Broadcast()
			m.mu.Unlock()
			return
		}
		batch, m.queue = m.queue, batch[:0]
		m.mu.Unlock()
		for i := range batch {
			m.deliver(batch[i])
			done++
			doneBytes += deltaBytes(batch[i].ev)
			batch[i] = posted{}
			// A waiting post gets its room as soon as there is enough,
			// not when the batch ends; with none waiting, the batch
			// costs one lock.
			if i < len(batch)-1 && m.blocked.Load() > 0 && m.freed(done, doneBytes) {
				m.mu.Lock()
				m.held -= done
				m.bytes -= doneBytes
				done, doneBytes = 0, 0
				m.room.Broadcast()
				m.mu.Unlock()
			}
		}
	}
}

func (m *mailbox) deliver(p posted) {
	defer func() {
		if v := recover(); v != nil {
			m.step.log().ErrorContext(p.ctx, "lode: observer panicked; event dropped", "event", p.ev.EventName(), "panic", v, "stack", string(debug.Stack()))
		}
	}()
	m.out.Emit(p.ctx, p.ev)
}

// wait blocks until the queue is empty and no delivery is in progress.
// Called by this mailbox's own observer, it returns at once: the delivery
// in progress is the caller's own.
func (m *mailbox) wait(ctx context.Context) error {
	if own, _ := ctx.Value(observerKey{}).(*mailbox); own == m {
		return nil
	}
	stop := context.AfterFunc(ctx, func() {
		m.mu.Lock()
		m.idle.Broadcast()
		m.mu.Unlock()
	})
	defer stop()
	m.mu.Lock()
	defer m.mu.Unlock()
	for m.running || len(m.queue) > 0 {
		if err := ctx.Err(); err != nil {
			return err
		}
		m.idle.Wait()
	}
	return nil
}
