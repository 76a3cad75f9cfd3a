package sqlstore

// WatchBatches calls queued with the queue's length each time a record
// joins it, and running with a batch's size before it runs.
func WatchBatches(s *Store, queued, running func(n int)) {
	s.group.queued, s.group.running = queued, running
}
