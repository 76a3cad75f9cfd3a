package tool

import (
	"context"
	"fmt"
	"runtime/debug"
	"sync"
	"time"

	toolpkg "github.com/lodeworks/lode/tool"
)

// callCtx is the context a tool runs under: its caller's values, done when
// the caller's context is, when the call's time is up, and at the latest
// when the call ends, as context.WithTimeout's would be. It also carries
// the tool's answer back to the handler. It is the one allocation a call's
// timing costs: the timer and the channel the handler waits on belong to a
// slot that calls reuse.
type callCtx struct {
	parent   context.Context
	deadline time.Time

	mu   sync.Mutex
	done chan struct{} // made when first asked for
	err  error
	// slot is the handler waiting for this call, nil once it stopped waiting.
	slot *slot

	// The tool's answer, set once under mu.
	finished bool
	v        any
	verr     error
	stack    []byte
}

// closedDone is the Done channel of a call that ended before anyone asked.
var closedDone = func() chan struct{} { c := make(chan struct{}); close(c); return c }()

func (c *callCtx) Deadline() (time.Time, bool) { return c.deadline, true }
func (c *callCtx) Value(key any) any           { return c.parent.Value(key) }

func (c *callCtx) Done() <-chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.done == nil {
		if c.err != nil {
			c.done = closedDone
		} else {
			c.done = make(chan struct{})
		}
	}
	return c.done
}

func (c *callCtx) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.err
}

func (c *callCtx) String() string {
	return fmt.Sprintf("lode tool call context (deadline %s)", c.deadline)
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
	if c.slot != nil {
		select {
		case c.slot.wake <- struct{}{}:
		default: // a wake-up is already pending
		}
	}
}

// call runs the tool and hands its answer over, a panic included.
func (c *callCtx) call(prepared toolpkg.Prepared) {
	var (
		v     any
		err   error
		stack []byte
	)
	defer func() {
		if p := recover(); p != nil {
			v, err, stack = nil, fmt.Errorf("panic: %v", p), debug.Stack()
		}
		c.mu.Lock()
		c.finished, c.v, c.verr, c.stack = true, v, err, stack
		c.wake()
		c.mu.Unlock()
	}()
	v, err = prepared(c)
}

// slot is what a waiting handler reuses from call to call: a timer that
// ends the current call's context, and the channel the handler sleeps on.
type slot struct {
	wake  chan struct{}
	timer *time.Timer

	mu  sync.Mutex
	cur *callCtx // the call the timer is set for
}

var slots = sync.Pool{New: func() any {
	s := &slot{wake: make(chan struct{}, 1)}
	s.timer = time.AfterFunc(time.Hour, s.expire)
	s.timer.Stop()
	return s
}}

func (s *slot) expire() {
	s.mu.Lock()
	c := s.cur
	s.mu.Unlock()
	if c != nil {
		c.cancel(context.DeadlineExceeded)
	}
}

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
// whichever comes first. The goroutine is the only cost a call pays for
// that guarantee besides one allocation and one clock read.
func run(ctx context.Context, timeout time.Duration, prepared toolpkg.Prepared) runResult {
	c := &callCtx{parent: ctx, deadline: time.Now().Add(timeout)}
	if d, ok := ctx.Deadline(); ok && d.Before(c.deadline) {
		c.deadline = d
	}
	s := slots.Get().(*slot)
	s.mu.Lock()
	s.cur = c
	s.mu.Unlock()
	c.slot = s // no one else sees c yet
	s.timer.Reset(timeout)
	var stopParent func() bool
	if ctx.Done() != nil {
		stopParent = context.AfterFunc(ctx, func() { c.cancel(ctx.Err()) })
	}

	go c.call(prepared)

	var r runResult
	for {
		<-s.wake
		c.mu.Lock()
		if c.finished || c.err != nil {
			break
		}
		c.mu.Unlock() // a wake-up meant for an earlier call of this slot
	}
	if c.finished {
		r.v, r.err, r.stack = c.v, c.verr, c.stack
	} else {
		r.err = c.err
	}
	r.ctxErr = c.err
	c.slot = nil
	c.mu.Unlock()

	stopped := s.timer.Stop()
	if stopParent != nil {
		stopParent()
	}
	s.mu.Lock()
	s.cur = nil
	s.mu.Unlock()
	if stopped {
		// The timer will not fire for this call: the slot is clean once
		// a wake-up left behind is taken.
		select {
		case <-s.wake:
		default:
		}
		slots.Put(s)
	}
	// What the tool may have kept of its context ends with the call.
	c.cancel(context.Canceled)
	return r
}
