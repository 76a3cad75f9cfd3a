package sqlite

// WithOnBusy calls f each time Open found the file busy while switching it
// to WAL, before it waits to try again.
func WithOnBusy(f func()) Option { return func(c *config) { c.onBusy = f } }
