package file

import "os"

// Writer is the write side of a journal file, exported to tests so they can
// make the disk fail.
type Writer = writer

// WithWriter wraps every journal file's writer.
func WithWriter(wrap func(w Writer) Writer) Option { return func(s *Store) { s.wrap = wrap } }

// WithSyncAll replaces the flush of the whole file system.
func WithSyncAll(f func() error) Option {
	return func(s *Store) { s.syncAll = func(*os.File) error { return f() } }
}

// WatchFlushes calls joined with a flush's number of records each time one
// joins it, and started with that number as it starts.
func WatchFlushes(s *Store, joined, started func(n int)) {
	s.flushes.joined, s.flushes.started = joined, started
}

// CanSyncAll reports whether records of many threads share flushes here.
const CanSyncAll = canSyncAll
