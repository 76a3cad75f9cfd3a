package output

import (
	"context"
	"encoding/json"
	"sync"

	"github.com/lodeworks/lode/artifact"
	"github.com/lodeworks/lode/loop"
)

// PartialEvent carries the answer parsed so far while it streams: JSON is
// the text received so far, cut to its last whole member and closed (a
// string still arriving is included as far as it goes; a number, true,
// false or null only once it is whole), and Value is JSON decoded into T,
// its missing fields left zero.
type PartialEvent[T any] struct {
	Value T
	JSON  string
}

// EventName returns "output_partial".
func (PartialEvent[T]) EventName() string { return "output_partial" }

// Partials returns an observer that passes every event on to next and,
// after each text delta that changes the answer parsed so far, a
// PartialEvent[T]: give it to loop.WithObserver for a UI that shows the
// answer filling in. Text that does not start as a JSON object or array
// gives no partial values. A completed turn or an error starts the next
// answer afresh. It keeps the text of the answer in flight, so it belongs
// to one Step running one thread at a time.
func Partials[T any](next loop.Emitter) loop.Emitter {
	return &partials[T]{next: next}
}

type partials[T any] struct {
	next loop.Emitter
	mu   sync.Mutex
	scan scanner
	last int // the size of the last partial tried
}

// eagerPartial is how long the answer parsed so far may grow with a partial
// after every delta that changes it; past it, a partial comes once the
// answer has grown fourfold since the last, so that partials of a long answer
// cost a small multiple of one decode, not one decode per delta.
const eagerPartial = 16 << 10

func (p *partials[T]) Emit(ctx context.Context, ev loop.Event) {
	if p.next != nil {
		p.next.Emit(ctx, ev)
	}
	var out *PartialEvent[T]
	p.mu.Lock()
	switch e := ev.(type) {
	case loop.DeltaEvent:
		if d, ok := e.Delta.(artifact.TextDelta); ok && d.Content != "" {
			p.scan.write(d.Content)
			out = p.parse()
		}
	case loop.TurnCompleteEvent, *loop.TurnCompleteEvent, loop.ErrorEvent, *loop.ErrorEvent:
		p.scan.reset()
		p.last = 0
	}
	p.mu.Unlock()
	if out != nil && p.next != nil {
		p.next.Emit(ctx, *out)
	}
}

func (p *partials[T]) parse() *PartialEvent[T] {
	if p.scan.err != nil || len(p.scan.stack) == 0 && !p.scan.done {
		return nil
	}
	n := p.scan.usable()
	size := p.scan.docLen(n) // the document only grows, so a new size is a new document
	if size == p.last || size > eagerPartial && size < 4*p.last {
		return nil
	}
	p.last = size
	doc := p.scan.doc(n)
	var v T
	if json.Unmarshal(doc, &v) != nil {
		return nil
	}
	return &PartialEvent[T]{Value: v, JSON: string(doc)}
}
