package loop

import (
	"context"
	"runtime/debug"
	"sync"
)

type posted struct {
	ctx context.Context
	ev  Event
}

// mailbox delivers events to one observer in order. A goroutine drains it
// while it has events and exits when it is empty, so an idle Step holds no
// goroutines and a slow observer only grows its own queue.
type mailbox struct {
	out     Emitter
	step    *Step
	mu      sync.Mutex
	cond    sync.Cond
	queue   []posted
	running bool
}

func newMailbox(out Emitter, s *Step) *mailbox {
	m := &mailbox{out: out, step: s}
	m.cond.L = &m.mu
	return m
}

func (m *mailbox) post(ctx context.Context, ev Event) {
	m.mu.Lock()
	m.queue = append(m.queue, posted{ctx: context.WithoutCancel(ctx), ev: ev})
	if !m.running {
		m.running = true
		go m.drain()
	}
	m.mu.Unlock()
}

func (m *mailbox) drain() {
	var batch []posted
	for {
		m.mu.Lock()
		if len(m.queue) == 0 {
			m.running = false
			m.cond.Broadcast()
			m.mu.Unlock()
			return
		}
		batch, m.queue = m.queue, batch[:0]
		m.mu.Unlock()
		for i, p := range batch {
			m.deliver(p)
			batch[i] = posted{}
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
func (m *mailbox) wait(ctx context.Context) error {
	stop := context.AfterFunc(ctx, func() {
		m.mu.Lock()
		m.cond.Broadcast()
		m.mu.Unlock()
	})
	defer stop()
	m.mu.Lock()
	defer m.mu.Unlock()
	for m.running || len(m.queue) > 0 {
		if err := ctx.Err(); err != nil {
			return err
		}
		m.cond.Wait()
	}
	return nil
}
