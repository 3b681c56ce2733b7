package audit

import "time"

// HoldWriter keeps s's writer from moving records into SQLite (hold true)
// or lets it go again: records then exist only in the journal.
func HoldWriter(s *Store, hold bool) {
	s.held.Store(hold)
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// Recovered is what s replayed of dead stores' journals.
func Recovered(s *Store) (files, records, torn int64) {
	return s.recovered.files.Load(), s.recovered.records.Load(), s.recovered.torn.Load()
}

// JournalPrefix is the start of the names of the journals of the database
// at path.
func JournalPrefix(path string) string { return journalPrefix(path) }

// SetBusyTimeout sets the busy timeout of stores opened after it, and
// returns the function that puts it back.
func SetBusyTimeout(d time.Duration) (restore func()) {
	old := busyTimeout
	busyTimeout = d
	return func() { busyTimeout = old }
}

// SetRotateBytes sets the size past which stores start a new journal, and
// returns the function that puts it back.
func SetRotateBytes(n int64) (restore func()) {
	old := rotateBytes
	rotateBytes = n
	return func() { rotateBytes = old }
}

// SetQueue sets the queue's bound and how long a Start waits for room, and
// returns the function that puts them back.
func SetQueue(n int, wait time.Duration) (restore func()) {
	oldN, oldWait := queueLen, queueWait
	queueLen, queueWait = n, wait
	return func() { queueLen, queueWait = oldN, oldWait }
}
