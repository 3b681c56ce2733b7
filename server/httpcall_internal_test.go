package server

import "time"

// SetStreamWriteTimeout sets how long a client has to take an event of a
// call's stream, for a test, and returns the function that restores it.
func SetStreamWriteTimeout(d time.Duration) (restore func()) {
	old := streamWriteTimeout
	streamWriteTimeout = d
	return func() { streamWriteTimeout = old }
}
