package tool

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"sync"
	"time"

	toolpkg "github.com/lodeworks/lode/tool"
)

// callCtx is the context a tool runs under: its caller's values, done when
// the caller's context is, when the call's time is up, and at the latest
// when the call ends, as context.WithTimeout's would be. It is the one
// allocation a call's timing costs: the timeout is kept by the shared
// watchdog, and the channel the handler waits on is reused. What only a
// watched call needs is in its watch, so that an inline call that never
// waits on its context allocates 96 bytes rather than twice that.
type callCtx struct {
	parent context.Context
	// gate is the handler running the call when it gates calls (an
	// approver, a Gate): the context then answers gateKey with itself, so
	// that handlers running calls below this one (an agent's child) ask
	// its rules too.
	gate *Handler
	// below counts the calls made below this one; made, under mu, by the
	// first of them.
	below *belowCount

	mu   sync.Mutex
	done chan struct{} // made when first asked for
	err  error
	// watched says that the caller's end reaches err: set from the start
	// for a call on a goroutine of its own (the handler waits for it), and
	// when Done is first asked for on an inline one, whose watch's stop is
	// then the caller's.
	watched bool
	// timed says that the watchdog holds c and ends it at its deadline:
	// from the start on a goroutine of its own, and once Done is asked
	// for on an inline call, which otherwise reads the clock when asked
	// for Err and when it returns.
	timed bool
	// w is set, under mu, with watched; it never changes after.
	w *watch

	// Set before anyone sees c.
	expires mono
	timeout time.Duration
}

// watch is the part of a call's context that a call on a goroutine of its
// own, or an inline one that asked for Done, needs.
type watch struct {
	stop func() bool // ends the watch of the caller's context
	// waiter wakes the handler waiting for this call, nil once it stopped
	// waiting; under the call's mu.
	waiter chan struct{}

	// The tool's answer, set once under the call's mu.
	finished bool
	v        any
	verr     error
	stack    []byte

	// The watchdog's, under its lock.
	queued     bool
	prev, next *callCtx
}

// ownCall is a call on a goroutine of its own: its context and watch in
// one allocation.
type ownCall struct {
	c callCtx
	w watch
}

// closedDone is the Done channel of a call that ended before anyone asked.
var closedDone = func() chan struct{} { c := make(chan struct{}); close(c); return c }()

// Deadline is the earlier of the call's and the caller's.
func (c *callCtx) Deadline() (time.Time, bool) {
	d := c.expires.time()
	if pd, ok := c.parent.Deadline(); ok && pd.Before(d) {
		d = pd
	}
	return d, true
}
func (c *callCtx) Value(key any) any {
	switch key.(type) {
	case gateKey:
		if c.gate != nil {
			return c
		}
	case aboveKey:
		return c
	}
	return c.parent.Value(key)
}

func (c *callCtx) Done() <-chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.adopt()
	if c.done == nil {
		if c.err != nil {
			c.done = closedDone
		} else {
			c.done = make(chan struct{})
		}
	}
	if c.err == nil && !c.watched {
		// An inline call watches its caller and its time only once it
		// waits on something: a call that never asks costs neither.
		c.watched = true
		c.w = new(watch)
		if pd := c.parent.Done(); pd != nil {
			parent := c.parent
			c.w.stop = context.AfterFunc(parent, func() { c.cancel(parent.Err()) })
		}
	}
	if c.err == nil && !c.timed {
		c.timed = true
		dog.add(c)
	}
	return c.done
}

func (c *callCtx) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.adopt()
	return c.err
}

// adopt ends an inline call that nothing watches yet with its caller's
// end or its deadline, so that Err and Done say them as soon as they
// come; c.mu is held.
func (c *callCtx) adopt() {
	if c.err != nil {
		return
	}
	var err error
	if !c.watched {
		err = c.parent.Err()
	}
	if err == nil && !c.timed && now() >= c.expires {
		err = context.DeadlineExceeded
	}
	if err != nil {
		c.err = err
		if c.done != nil {
			close(c.done)
		}
	}
}

func (c *callCtx) String() string {
	d, _ := c.Deadline()
	return fmt.Sprintf("lode tool call context (deadline %s)", d)
}

// cancel ends the context with err, unless it has ended, and wakes the
// handler if it is still waiting.
func (c *callCtx) cancel(err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.err == nil {
		c.err = err
		if c.done != nil {
			close(c.done)
		}
	}
	c.wake()
}

// wake tells the waiting handler, if any, to look again; c.mu is held.
func (c *callCtx) wake() {
	if c.w != nil && c.w.waiter != nil {
		select {
		case c.w.waiter <- struct{}{}:
		default: // a wake-up is already pending
		}
	}
}

// call runs the tool on a goroutine of its own and hands its answer over,
// a panic and a runtime.Goexit included; c.w is set.
func (c *callCtx) call(prepared toolpkg.Prepared) {
	var (
		v     any
		err   error
		stack []byte
	)
	// Deferred, so that a tool that ends its goroutine (runtime.Goexit)
	// still answers: then invoke never returns, and errGoexit stays.
	defer func() {
		c.mu.Lock()
		c.w.finished, c.w.v, c.w.verr, c.w.stack = true, v, err, stack
		c.wake()
		c.mu.Unlock()
	}()
	err = errGoexit
	v, err, stack = c.invoke(prepared)
}

// errGoexit is the answer of a tool that called runtime.Goexit rather
// than return.
var errGoexit = errors.New("the tool ended its goroutine (runtime.Goexit) without returning")

// invoke runs the tool with c as its context and returns its answer, a
// panic as an error with its stack. A tool that calls runtime.Goexit ends
// the goroutine invoke runs on, which nothing can stop.
func (c *callCtx) invoke(prepared toolpkg.Prepared) (v any, err error, stack []byte) {
	defer func() {
		if p := recover(); p != nil {
			v, err, stack = nil, fmt.Errorf("panic: %v", p), debug.Stack()
		}
	}()
	v, err = prepared(c)
	return v, err, nil
}

// waiters are the channels handlers sleep on, reused across calls.
var waiters = sync.Pool{New: func() any { return make(chan struct{}, 1) }}

// watchdog ends calls whose time is up. One timer serves every call: calls
// with the same timeout expire in the order they started, so each timeout
// keeps a queue, and the timer is set for the earliest head. Starting and
// ending a call costs a lock and a few pointers, where a timer of its own
// would cost two operations on the runtime's timer heap.
type watchdog struct {
	mu     sync.Mutex
	queues map[time.Duration]*callQueue
	timer  *time.Timer
	next   mono // when the timer is set to fire; zero when it is not
}

type callQueue struct{ head, tail *callCtx }

var dog watchdog

func (w *watchdog) add(c *callCtx) {
	w.mu.Lock()
	defer w.mu.Unlock()
	q := w.queues[c.timeout]
	if q == nil {
		if w.queues == nil {
			w.queues = make(map[time.Duration]*callQueue)
		}
		q = new(callQueue)
		w.queues[c.timeout] = q
	}
	c.w.prev, c.w.next, c.w.queued = q.tail, nil, true
	if q.tail != nil {
		q.tail.w.next = c
	} else {
		q.head = c
	}
	q.tail = c
	if w.next == 0 || c.expires < w.next {
		w.arm(c.expires)
	}
}

// arm sets the timer for at; w.mu is held.
func (w *watchdog) arm(at mono) {
	w.next = at
	d := time.Duration(at - now())
	if w.timer == nil {
		w.timer = time.AfterFunc(d, w.fire)
		return
	}
	w.timer.Reset(d)
}

func (w *watchdog) remove(c *callCtx) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.unlink(c)
}

// unlink takes c out of its queue; w.mu is held. The timer stays set: if
// it fires for nothing, fire sets it for the next head.
func (w *watchdog) unlink(c *callCtx) {
	cw := c.w
	if !cw.queued {
		return
	}
	q := w.queues[c.timeout]
	if cw.prev != nil {
		cw.prev.w.next = cw.next
	} else {
		q.head = cw.next
	}
	if cw.next != nil {
		cw.next.w.prev = cw.prev
	} else {
		q.tail = cw.prev
	}
	cw.prev, cw.next, cw.queued = nil, nil, false
}

func (w *watchdog) fire() {
	var expired []*callCtx
	w.mu.Lock()
	at := now()
	var next mono
	for _, q := range w.queues {
		for q.head != nil && at >= q.head.expires {
			c := q.head
			w.unlink(c)
			expired = append(expired, c)
		}
		if q.head != nil && (next == 0 || q.head.expires < next) {
			next = q.head.expires
		}
	}
	w.next = 0
	if next != 0 {
		w.arm(next)
	}
	w.mu.Unlock()
	for _, c := range expired {
		c.cancel(context.DeadlineExceeded)
	}
}

// mono is a reading of the monotonic clock, in nanoseconds since epoch:
// reading it costs half of time.Now, which also reads the wall clock.
type mono int64

// epoch is when the package was initialised, the origin of mono.
var epoch = time.Now()

// now reads the monotonic clock; it is never 0, which means "not set".
func now() mono { return mono(time.Since(epoch)) + 1 }

// time is m as a time.Time, for Deadline.
func (m mono) time() time.Time { return epoch.Add(time.Duration(m - 1)) }

// runResult is how a call ended, as the handler saw it.
type runResult struct {
	v     any
	err   error
	stack []byte
	// ctxErr is the call context's error when the handler stopped waiting.
	ctxErr error
}

// run calls the tool on a goroutine of its own, so that a tool that
// ignores its context still cannot hold the turn past its timeout, and
// waits for its answer, the timeout or the caller's cancellation,
// whichever comes first. Besides that goroutine, a call costs one
// allocation and one clock read. A non-nil gate is the handler whose
// approval rules calls made below this one inherit.
func run(ctx context.Context, gate *Handler, timeout time.Duration, prepared toolpkg.Prepared) runResult {
	own := &ownCall{c: callCtx{parent: ctx, gate: gate, expires: now() + mono(timeout), timeout: timeout, watched: true, timed: true}}
	c := &own.c
	c.w = &own.w
	waiter := waiters.Get().(chan struct{})
	c.w.waiter = waiter // no one else sees c yet
	dog.add(c)
	var stopParent func() bool
	if ctx.Done() != nil {
		stopParent = context.AfterFunc(ctx, func() { c.cancel(ctx.Err()) })
	}

	go c.call(prepared)

	var r runResult
	for {
		<-waiter
		c.mu.Lock()
		if c.w.finished || c.err != nil {
			break
		}
		c.mu.Unlock() // woken with nothing to see: look again
	}
	if c.w.finished {
		r.v, r.err, r.stack = c.w.v, c.w.verr, c.w.stack
	} else {
		r.err = c.err
	}
	r.ctxErr = c.err
	c.w.waiter = nil
	below := c.below
	c.mu.Unlock()
	if below != nil {
		below.record(ctx)
	}

	dog.remove(c)
	if stopParent != nil {
		stopParent()
	}
	// No one sends to the waiter any more: take a wake-up left behind.
	select {
	case <-waiter:
	default:
	}
	waiters.Put(waiter)
	// What the tool may have kept of its context ends with the call.
	c.cancel(context.Canceled)
	return r
}

// runInline calls the tool on the caller's goroutine, for a tool that
// promised to return promptly or when its context ends (Tool.Inline): no
// goroutine, no wake-up of another core, no waiter. The context is the
// one run gives, but it is handed to the watchdog, and watches the
// caller's context, only if the tool asks for Done; otherwise the clock is
// read when the tool asks for Err and when it returns. The promise cannot be enforced
// (nothing can abandon a call on its caller's goroutine), so it is
// checked: a call that comes back after its context ended reports that end,
// as run would have, whatever it returned, and overran says it passed its
// timeout, for the handler to stop trusting the tool.
func runInline(ctx context.Context, gate *Handler, timeout time.Duration, prepared toolpkg.Prepared, goexit func()) (r runResult, overran bool) {
	c := &callCtx{parent: ctx, gate: gate, expires: now() + mono(timeout), timeout: timeout}
	returned := false
	defer func() {
		if !returned {
			// The tool called runtime.Goexit, which ends this goroutine,
			// the caller's, whatever is done here: the call still ends,
			// and the handler is told.
			c.mu.Lock()
			c.end(ctx)
			goexit()
		}
	}()
	r.v, r.err, r.stack = c.invoke(prepared)
	returned = true
	c.mu.Lock()
	c.adopt()
	if c.err != nil && r.stack == nil {
		// Late: what it returned is what run would have abandoned.
		r.v, r.err = nil, c.err
	}
	r.ctxErr = c.err
	c.end(ctx)
	overran = errors.Is(r.ctxErr, context.DeadlineExceeded) && ctx.Err() == nil
	return r, overran
}

// end ends an inline call's context as the call ends, and releases c.mu,
// which is held: what the tool may have kept of its context ends with the
// call, under the lock, so that nothing it left running can hand the
// context to the watchdog after the look at timed.
func (c *callCtx) end(ctx context.Context) {
	if c.err == nil {
		c.err = context.Canceled
		if c.done != nil {
			close(c.done)
		}
	}
	below, timed := c.below, c.timed
	var stop func() bool
	if c.w != nil {
		stop = c.w.stop
	}
	c.mu.Unlock()
	if timed {
		dog.remove(c)
	}
	if below != nil {
		below.record(ctx)
	}
	if stop != nil {
		stop()
	}
}
