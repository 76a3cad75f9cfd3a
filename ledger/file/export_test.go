package file

// Writer is the write side of a journal file, exported to tests so they can
// make the disk fail.
type Writer = writer

// WithWriter wraps every journal file's writer.
func WithWriter(wrap func(w Writer) Writer) Option { return func(s *Store) { s.wrap = wrap } }
