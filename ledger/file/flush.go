package file

import "sync"

// A flushGroup lets many threads' records share one flush of the disk.
//
// A record that finds no flush running flushes its own journal at once,
// as it always did. One that finds a flush running joins the next flush,
// which starts when the running one ends and covers every record written
// before it starts; its first member leads it. When that flush holds more
// than one record, it is one flush of the whole file system (shared, on
// Linux syncfs(2), which since Linux 5.8 reports any write-back error of
// the file system to each caller): a thousand threads writing at once then
// wait for a few flushes a second rather than for one each, while a lone
// writer pays exactly what an fsync of its journal costs. Without a shared
// flush (other systems), every record syncs its own journal.
type flushGroup struct {
	mu   sync.Mutex
	cur  *flush // running now
	next *flush // to run after cur; its first member leads it

	// Tests watch flushes form: joined is called with a flush's number
	// of records after one joins it, and started with that number as it
	// starts.
	joined, started func(n int)
}

// flush is one flush: its members return err once done is closed.
type flush struct {
	n    int // records it covers
	done chan struct{}
	err  error
}

// sync makes the record j just wrote durable: a flush that covers it
// alone syncs j's journal (the store's directory, with dir); one that
// covers several flushes the file system j is on.
func (g *flushGroup) sync(j *journal, dir bool) error {
	g.mu.Lock()
	if g.cur == nil {
		f := &flush{n: 1, done: make(chan struct{})}
		g.cur = f
		g.mu.Unlock()
		g.run(f, j, false, dir)
		return f.err
	}
	f := g.next
	lead := f == nil
	if lead {
		f = &flush{done: make(chan struct{})}
		g.next = f
	}
	f.n++
	n, prev := f.n, g.cur
	g.mu.Unlock()
	if g.joined != nil {
		g.joined(n)
	}
	if !lead {
		<-f.done
		return f.err
	}
	<-prev.done
	g.mu.Lock()
	g.cur, g.next = f, nil
	n = f.n
	g.mu.Unlock()
	g.run(f, j, n > 1, dir)
	return f.err
}

// run flushes j's journal (the store's directory, with dir), or with all
// the file system it is on.
func (g *flushGroup) run(f *flush, j *journal, all, dir bool) {
	if g.started != nil {
		g.started(f.n)
	}
	switch {
	case all:
		f.err = j.s.syncAll(j.f)
	case dir:
		f.err = j.s.syncDir()
	default:
		f.err = j.w.Sync()
	}
	g.mu.Lock()
	if g.next == nil {
		g.cur = nil
	}
	g.mu.Unlock()
	close(f.done)
}
