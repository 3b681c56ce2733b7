package js

import (
	"testing"
	"time"
)

// PreparedTaken counts the calls that found an engine prepared for them.
func PreparedTaken() int64 { return preparedTaken.Load() }

// WaitPrepared waits until the pool of prepared engines is full.
func WaitPrepared(t *testing.T) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for len(prepared) < maxPrepared || preparing.Load() {
		if time.Now().After(deadline) {
			t.Fatalf("the pool of prepared engines was not refilled in 30s (%d of %d)", len(prepared), maxPrepared)
		}
		time.Sleep(time.Millisecond)
	}
}
